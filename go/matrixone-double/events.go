package main

import (
	"encoding/json"
	"os"
	"sync"
	"time"
)

// Service names in the event log.
const (
	svcHAKeeper = "hakeeper"
	svcLock     = "lock"
	svcQuery    = "query"
	svcStore    = "store"
	svcDouble   = "double"
)

// eventLog appends one JSON object per line: every RPC the double answers and every
// store change, for mo-chaos's timeline. Fields: time (RFC 3339, nanoseconds, UTC),
// namespace, service, method, then the event's own key fields.
type eventLog struct {
	mu sync.Mutex
	f  *os.File
}

func openEventLog(path string) (*eventLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &eventLog{f: f}, nil
}

// emit writes one event; fields may not use the reserved keys.
func (l *eventLog) emit(namespace, service, method string, fields map[string]any) {
	rec := make(map[string]any, len(fields)+4)
	for k, v := range fields {
		rec[k] = v
	}
	rec["time"] = time.Now().UTC().Format(time.RFC3339Nano)
	rec["namespace"] = namespace
	rec["service"] = service
	rec["method"] = method
	line, err := json.Marshal(rec)
	if err != nil {
		line, _ = json.Marshal(map[string]any{
			"time": rec["time"], "namespace": namespace, "service": service,
			"method": method, "error": "unencodable event: " + err.Error(),
		})
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.f.Write(append(line, '\n'))
}

func (l *eventLog) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}
