package main

import (
	"bufio"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

const latWindow = 8192 // latency samples kept per verb

type verbStats struct {
	count int64
	ring  []float64
	next  int
}

// Stats counts requests, events and bytes, and keeps a window of latencies
// (time to response headers) per verb.
type Stats struct {
	events   atomic.Int64
	bytesOut atomic.Int64
	mu       sync.Mutex
	requests int64
	byVerb   map[string]*verbStats
}

func newStats() *Stats { return &Stats{byVerb: map[string]*verbStats{}} }

func (s *Stats) observe(verb string, latencyMs float64) {
	s.mu.Lock()
	s.requests++
	v := s.byVerb[verb]
	if v == nil {
		v = &verbStats{}
		s.byVerb[verb] = v
	}
	v.count++
	if len(v.ring) < latWindow {
		v.ring = append(v.ring, latencyMs)
	} else {
		v.ring[v.next] = latencyMs
		v.next = (v.next + 1) % latWindow
	}
	s.mu.Unlock()
}

type latencySummary struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

type statsView struct {
	Requests    int64                     `json:"requests"`
	Events      int64                     `json:"events"`
	BytesOut    int64                     `json:"bytes"`
	WatchesOpen int64                     `json:"watches_open"`
	InFlight    int64                     `json:"in_flight"`
	LatencyMs   map[string]latencySummary `json:"latency_ms"`
	RSSBytes    int64                     `json:"rss_bytes"`
	Seq         int64                     `json:"seq"`
}

func percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted)-1) + 0.5)
	return sorted[i]
}

func (s *Stats) view() statsView {
	v := statsView{Events: s.events.Load(), BytesOut: s.bytesOut.Load(), LatencyMs: map[string]latencySummary{}}
	s.mu.Lock()
	v.Requests = s.requests
	copies := map[string][]float64{}
	counts := map[string]int64{}
	for verb, vs := range s.byVerb {
		copies[verb] = append([]float64(nil), vs.ring...)
		counts[verb] = vs.count
	}
	s.mu.Unlock()
	for verb, c := range copies {
		sort.Float64s(c)
		ls := latencySummary{Count: counts[verb], P50: percentile(c, 0.50), P99: percentile(c, 0.99)}
		if len(c) > 0 {
			ls.Max = c[len(c)-1]
		}
		v.LatencyMs[verb] = ls
	}
	v.RSSBytes = readRSS()
	return v
}

// readRSS reads VmRSS of this process from /proc (0 where there is none).
func readRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "VmRSS:") {
			fs := strings.Fields(line)
			if len(fs) >= 2 {
				n, _ := strconv.ParseInt(fs[1], 10, 64)
				return n * 1024
			}
		}
	}
	return 0
}
