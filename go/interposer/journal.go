package main

import (
	"encoding/json"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Journal appends one JSON object per line to a file (one write(2) per
// record) and keeps the recent rule records in memory for GET /wait.
//
// seq numbers come from one counter shared by every record. A request takes
// its seq when it arrives and its record is written when it ends (a watch's
// when its response headers arrive), so lines are not strictly sorted by seq;
// rule records are written in seq order.
type Journal struct {
	seq  atomic.Int64
	mu   sync.Mutex
	f    *os.File
	err  error
	ring []ruleRecord // rule records, seq ascending
	wake chan struct{}
}

const ringMax = 20000

func newJournal(path string) (*Journal, error) {
	j := &Journal{wake: make(chan struct{})}
	if path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		j.f = f
	}
	return j, nil
}

func (j *Journal) NextSeq() int64 { return j.seq.Add(1) }

func (j *Journal) LastSeq() int64 { return j.seq.Load() }

func (j *Journal) Close() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f != nil {
		j.f.Close()
		j.f = nil
	}
}

func (j *Journal) writeLocked(b []byte) {
	if j.f == nil {
		return
	}
	b = append(b, '\n')
	if _, err := j.f.Write(b); err != nil && j.err == nil {
		j.err = err
	}
}

// write marshals rec (whose seq is already set) and appends it.
func (j *Journal) write(rec any) {
	b, err := json.Marshal(rec)
	if err != nil {
		return
	}
	j.mu.Lock()
	j.writeLocked(b)
	j.mu.Unlock()
}

func nowT(t time.Time) float64 {
	return float64(t.UnixMicro()) / 1e6
}

func ms(d time.Duration) float64 {
	return math.Round(float64(d)/1e3) / 1e3
}

type objRef struct {
	Kind            string `json:"kind"`
	Name            string `json:"name"`
	Namespace       string `json:"namespace"`
	ResourceVersion string `json:"resourceVersion"`
}

type requestRecord struct {
	Type           string   `json:"type"`
	Seq            int64    `json:"seq"`
	T              float64  `json:"t"`
	Verb           string   `json:"verb"`
	Method         string   `json:"method"`
	Path           string   `json:"path"`
	Query          string   `json:"query"`
	Group          string   `json:"group"`
	Version        string   `json:"version"`
	Resource       string   `json:"resource"`
	Subresource    string   `json:"subresource"`
	Namespace      string   `json:"namespace"`
	Name           string   `json:"name"`
	DryRun         bool     `json:"dry_run"`
	UserAgent      string   `json:"user_agent"`
	Accept         string   `json:"accept"`
	Proto          string   `json:"proto"`
	ContentType    string   `json:"content_type"`
	Status         int      `json:"status"`
	LatencyMs      float64  `json:"latency_ms"`
	DurationMs     *float64 `json:"duration_ms"`
	Action         string   `json:"action"`
	Rule           string   `json:"rule"`
	HeldMs         float64  `json:"held_ms"`
	Bytes          int64    `json:"bytes"`
	Object         *objRef  `json:"object,omitempty"`
	UpstreamStatus int      `json:"upstream_status,omitempty"`
	Error          string   `json:"error,omitempty"`
}

type eventRecord struct {
	Type      string  `json:"type"`
	Seq       int64   `json:"seq"`
	T         float64 `json:"t"`
	Watch     int64   `json:"watch"`
	Resource  string  `json:"resource"`
	Namespace string  `json:"namespace"`
	Event     string  `json:"event"`
	Name      string  `json:"name"`
	RV        *int64  `json:"rv"`
	Action    string  `json:"action"`
	Rule      string  `json:"rule"`
}

type watchEndRecord struct {
	Type       string  `json:"type"`
	Seq        int64   `json:"seq"`
	T          float64 `json:"t"`
	Watch      int64   `json:"watch"`
	Resource   string  `json:"resource"`
	Namespace  string  `json:"namespace"`
	DurationMs float64 `json:"duration_ms"`
	Events     int64   `json:"events"`
	Bytes      int64   `json:"bytes"`
	End        string  `json:"end"`
}

type ruleRecord struct {
	Type   string  `json:"type"`
	Seq    int64   `json:"seq"`
	T      float64 `json:"t"`
	Rule   string  `json:"rule"`
	What   string  `json:"what"`
	Detail any     `json:"detail"`
}

func (j *Journal) event(watch int64, resource string, ev *watchEvent, action, rule string) {
	rec := eventRecord{
		Type: "event", Seq: j.NextSeq(), T: nowT(time.Now()), Watch: watch,
		Resource: resource, Namespace: ev.namespace, Event: ev.typ, Name: ev.name,
		RV: ev.rv, Action: action, Rule: rule,
	}
	j.write(&rec)
}

// rule writes a rule lifecycle record and wakes GET /wait.
func (j *Journal) rule(id, what string, detail any) int64 {
	if detail == nil {
		detail = map[string]any{}
	}
	j.mu.Lock()
	rec := ruleRecord{Type: "rule", Seq: j.NextSeq(), T: nowT(time.Now()), Rule: id, What: what, Detail: detail}
	if b, err := json.Marshal(&rec); err == nil {
		j.writeLocked(b)
	}
	j.ring = append(j.ring, rec)
	if len(j.ring) > ringMax {
		j.ring = append(j.ring[:0:0], j.ring[len(j.ring)-ringMax/2:]...)
	}
	close(j.wake)
	j.wake = make(chan struct{})
	j.mu.Unlock()
	return rec.Seq
}

// since returns the rule records with seq > since, or a channel that is
// closed when the next one is written.
func (j *Journal) since(since int64) ([]ruleRecord, <-chan struct{}) {
	j.mu.Lock()
	defer j.mu.Unlock()
	// binary search on seq
	lo, hi := 0, len(j.ring)
	for lo < hi {
		m := (lo + hi) / 2
		if j.ring[m].Seq <= since {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(j.ring) {
		out := make([]ruleRecord, len(j.ring)-lo)
		copy(out, j.ring[lo:])
		return out, nil
	}
	return nil, j.wake
}
