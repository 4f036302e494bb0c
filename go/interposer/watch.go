package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"sync"
	"time"
)

// watchEvent is one line of a JSON watch stream.
type watchEvent struct {
	raw       []byte // the line, newline included, forwarded byte for byte
	typ       string // ADDED MODIFIED DELETED BOOKMARK ERROR ("" if unparsable)
	name      string
	namespace string
	rv        *int64
	parsed    bool
	obj       any // lazily decoded object, for fields
}

type metaHead struct {
	Name            string `json:"name"`
	Namespace       string `json:"namespace"`
	ResourceVersion string `json:"resourceVersion"`
}

type eventHead struct {
	Type   string `json:"type"`
	Object struct {
		Kind     string   `json:"kind"`
		Metadata metaHead `json:"metadata"`
		Rows     []struct {
			Object struct {
				Metadata metaHead `json:"metadata"`
			} `json:"object"`
		} `json:"rows"`
	} `json:"object"`
}

func parseEvent(line []byte) *watchEvent {
	ev := &watchEvent{raw: line}
	var h eventHead
	if err := json.Unmarshal(line, &h); err != nil {
		return ev
	}
	ev.parsed = true
	ev.typ = h.Type
	md := h.Object.Metadata
	if h.Object.Kind == "Table" && len(h.Object.Rows) > 0 {
		// kubectl -w asks for Tables: the object's metadata is in the row.
		rm := h.Object.Rows[0].Object.Metadata
		md.Name, md.Namespace = rm.Name, rm.Namespace
		if md.ResourceVersion == "" {
			md.ResourceVersion = rm.ResourceVersion
		}
	}
	ev.name, ev.namespace = md.Name, md.Namespace
	if md.ResourceVersion != "" {
		if n, err := strconv.ParseInt(md.ResourceVersion, 10, 64); err == nil {
			ev.rv = &n
		}
	}
	return ev
}

// objectMap decodes the event's object as a generic JSON value (for fields).
func (ev *watchEvent) objectMap() any {
	if ev.obj == nil && ev.parsed {
		var w struct {
			Object map[string]any `json:"object"`
		}
		if json.Unmarshal(ev.raw, &w) == nil && w.Object != nil {
			ev.obj = w.Object
		}
	}
	return ev.obj
}

func (ev *watchEvent) key() string { return ev.namespace + "/" + ev.name }

const maxQueued = 256 // events parsed ahead of a slow client (when not held)

// watchStream replaces the body of a JSON watch response. A goroutine reads
// the upstream line by line; each event is either queued for the client or,
// while a freeze/coalesce rule holds the stream, buffered in order. Read
// hands the client one event per call, so ReverseProxy (FlushInterval -1)
// writes and flushes each event on its own.
type watchStream struct {
	p     *Proxy
	seq   int64
	ri    reqInfo
	up    io.ReadCloser
	ctx   context.Context
	start time.Time

	mu      sync.Mutex
	out     []*watchEvent
	cur     []byte
	holding *Rule
	held    []*watchEvent
	upDone  bool
	upErr   error
	closed  bool
	events  int64
	bytes   int64
	end     string

	readerWake chan struct{}
	upWake     chan struct{}
	doneOnce   sync.Once
}

func newWatchStream(p *Proxy, st *reqState, up io.ReadCloser, ctx context.Context) *watchStream {
	s := &watchStream{
		p: p, seq: st.seq, ri: st.ri, up: up, ctx: ctx, start: st.start,
		readerWake: make(chan struct{}, 1), upWake: make(chan struct{}, 1),
	}
	p.watchesOpen.Add(1)
	go s.pump()
	return s
}

func wake(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (s *watchStream) pump() {
	br := bufio.NewReaderSize(s.up, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			s.push(parseEvent(line))
		}
		if err != nil {
			s.mu.Lock()
			s.upDone = true
			if !errors.Is(err, io.EOF) {
				s.upErr = err
				if s.end == "" {
					s.end = "upstream-error"
					if s.ctx.Err() != nil || s.closed {
						s.end = "client-gone"
					}
				}
			} else if s.end == "" {
				s.end = "upstream-eof"
			}
			s.mu.Unlock()
			wake(s.readerWake)
			return
		}
	}
}

func (s *watchStream) push(ev *watchEvent) {
	s.mu.Lock()
	for !s.closed && s.holding == nil && len(s.out) >= maxQueued {
		s.mu.Unlock()
		select {
		case <-s.upWake:
		case <-s.ctx.Done():
			return
		}
		s.mu.Lock()
	}
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.p.stats.events.Add(1)
	if s.holding == nil && ev.parsed {
		if r := s.p.rules.matchEvent(s, ev); r != nil {
			s.holding = r
			s.p.j.rule(r.id, "matched", map[string]any{
				"watch": s.seq, "resource": s.ri.Resource, "namespace": ev.namespace,
				"event": ev.typ, "name": ev.name, "rv": ev.rv,
			})
		}
	}
	if r := s.holding; r != nil {
		s.held = append(s.held, ev)
		r.heldNow.Add(1)
		r.matched.Add(1)
		if ev.parsed {
			s.p.j.event(s.seq, s.ri.Resource, ev, "held", r.id)
		}
		return
	}
	s.out = append(s.out, ev)
	if ev.parsed {
		s.p.j.event(s.seq, s.ri.Resource, ev, "delivered", "")
	}
	wake(s.readerWake)
}

// release delivers what rule r holds on this stream (freeze: all, in order;
// coalesce: the newest per object) and lets the stream flow again.
func (s *watchStream) release(r *Rule) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holding != r {
		return 0
	}
	held := s.held
	s.held, s.holding = nil, nil
	r.heldNow.Add(-int64(len(held)))
	if s.closed {
		return 0
	}
	var deliver []*watchEvent
	if r.action == actCoalesce {
		var dropped []*watchEvent
		deliver, dropped = coalesce(held)
		for _, ev := range dropped {
			if ev.parsed {
				s.p.j.event(s.seq, s.ri.Resource, ev, "coalesced", r.id)
			}
		}
	} else {
		deliver = held
	}
	for _, ev := range deliver {
		if ev.parsed {
			s.p.j.event(s.seq, s.ri.Resource, ev, "released", r.id)
		}
	}
	s.out = append(s.out, deliver...)
	r.released.Add(int64(len(deliver)))
	wake(s.readerWake)
	return len(held)
}

// coalesce keeps the newest event per object (namespace/name), in the order
// of those newest events; a held bookmark is delivered last, only if its rv
// is >= every delivered event's rv. ERROR and unparsable lines are kept.
func coalesce(held []*watchEvent) (deliver, dropped []*watchEvent) {
	last := map[string]int{}
	lastBookmark := -1
	for i, ev := range held {
		switch ev.typ {
		case "ADDED", "MODIFIED", "DELETED":
			last[ev.key()] = i
		case "BOOKMARK":
			lastBookmark = i
		}
	}
	var maxRV int64 = -1
	for i, ev := range held {
		switch ev.typ {
		case "ADDED", "MODIFIED", "DELETED":
			if last[ev.key()] != i {
				dropped = append(dropped, ev)
				continue
			}
			if ev.rv != nil && *ev.rv > maxRV {
				maxRV = *ev.rv
			}
			deliver = append(deliver, ev)
		case "BOOKMARK":
			if i != lastBookmark {
				dropped = append(dropped, ev)
			}
		default:
			deliver = append(deliver, ev)
		}
	}
	if lastBookmark >= 0 {
		bm := held[lastBookmark]
		if bm.rv != nil && *bm.rv >= maxRV {
			deliver = append(deliver, bm)
		} else {
			dropped = append(dropped, bm)
		}
	}
	return deliver, dropped
}

func (s *watchStream) Read(p []byte) (int, error) {
	for {
		s.mu.Lock()
		if len(s.cur) == 0 && len(s.out) > 0 {
			ev := s.out[0]
			s.out[0] = nil
			s.out = s.out[1:]
			s.cur = ev.raw
			if ev.parsed {
				s.events++
			}
			wake(s.upWake)
		}
		if len(s.cur) > 0 {
			n := copy(p, s.cur)
			s.cur = s.cur[n:]
			s.bytes += int64(n)
			s.mu.Unlock()
			return n, nil
		}
		if s.upDone && s.holding == nil {
			err := s.upErr
			s.mu.Unlock()
			if err == nil {
				err = io.EOF
			}
			return 0, err
		}
		s.mu.Unlock()
		select {
		case <-s.readerWake:
		case <-s.ctx.Done():
			s.mu.Lock()
			if s.end == "" || s.end == "upstream-error" {
				s.end = "client-gone"
			}
			s.mu.Unlock()
			return 0, s.ctx.Err()
		}
	}
}

// Close is called by ReverseProxy when it is done with the body.
func (s *watchStream) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	r := s.holding
	s.holding = nil
	if r != nil {
		// the client left with events still held: it never sees them
		for _, ev := range s.held {
			if ev.parsed {
				s.p.j.event(s.seq, s.ri.Resource, ev, "discarded", r.id)
			}
		}
		r.heldNow.Add(-int64(len(s.held)))
		s.held = nil
	}
	if s.end == "" {
		s.end = "client-gone"
	}
	s.mu.Unlock()
	if r != nil {
		r.detachStream(s)
	}
	wake(s.upWake)
	err := s.up.Close()
	s.p.watchesOpen.Add(-1)
	return err
}

// finish writes the watch-end record.
func (s *watchStream) finish() {
	s.doneOnce.Do(func() {
		s.mu.Lock()
		rec := watchEndRecord{
			Type: "watch-end", Seq: s.p.j.NextSeq(), T: nowT(time.Now()), Watch: s.seq,
			Resource: s.ri.Resource, Namespace: s.ri.Namespace,
			DurationMs: ms(time.Since(s.start)), Events: s.events, Bytes: s.bytes, End: s.end,
		}
		s.mu.Unlock()
		s.p.j.write(&rec)
	})
}
