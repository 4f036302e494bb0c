package main

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

func newTestRequest(method, url string) (*http.Request, error) {
	return http.NewRequest(method, "https://x"+url, nil)
}

func itoa(n int) string { return strconv.Itoa(n) }

type httpClient struct{ up *upstreamConfig }

func (c *httpClient) get(t *testing.T, path string) int {
	req, _ := http.NewRequest("GET", c.up.url.String()+path, nil)
	req.Header.Set("Authorization", "Bearer "+c.up.token)
	resp, err := (&http.Client{Transport: c.up.transport}).Do(req)
	must(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

func TestFreezeReleaseOrder(t *testing.T) {
	h := newHarness(t)
	cw, fw := h.watch(h.h2, "/api/v1/pods?allowWatchBookmarks=true&resourceVersion=100&watch=true")
	fw.lines <- evLine("ADDED", "default", "a", 101)
	if got := evSummary(cw.next(t)); got != "ADDED a@101" {
		t.Fatal(got)
	}
	h.addRule(`{"id":"fz","action":"freeze","match":{"resource":"pods","namespace":"default","name":"b"}}`)
	// not the frozen object: still delivered
	fw.lines <- evLine("MODIFIED", "default", "a", 102)
	if got := evSummary(cw.next(t)); got != "MODIFIED a@102" {
		t.Fatal(got)
	}
	fw.lines <- evLine("MODIFIED", "default", "b", 103) // held: matches
	fw.lines <- evLine("MODIFIED", "default", "a", 104) // held: behind b
	fw.lines <- bookmarkLine(105)                       // held: a bookmark never overtakes
	cw.none(t, 300*time.Millisecond)
	m := h.waitRule("fz", "matched")
	if d := m["detail"].(map[string]any); d["name"] != "b" || d["rv"].(float64) != 103 {
		t.Fatalf("matched %v", d)
	}
	if v := h.ruleView("fz"); v["held_now"].(float64) != 3 {
		t.Fatalf("view %v", v)
	}
	h.release("fz", "")
	for _, want := range []string{"MODIFIED b@103", "MODIFIED a@104", "BOOKMARK@105"} {
		if got := evSummary(cw.next(t)); got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
	}
	fw.lines <- evLine("MODIFIED", "default", "b", 106)
	if got := evSummary(cw.next(t)); got != "MODIFIED b@106" {
		t.Fatal(got)
	}
	want := []string{"delivered:ADDED", "delivered:MODIFIED", "held:MODIFIED", "held:MODIFIED", "held:BOOKMARK",
		"released:MODIFIED", "released:MODIFIED", "released:BOOKMARK", "delivered:MODIFIED"}
	evs := h.findRecords(len(want), func(m map[string]any) bool { return m["type"] == "event" })
	var actions []string
	for _, e := range evs {
		actions = append(actions, e["action"].(string)+":"+e["event"].(string))
	}
	for i := range want {
		if actions[i] != want[i] {
			t.Fatalf("journal actions %v, want %v", actions, want)
		}
	}
	if evs[2]["rule"] != "fz" || evs[5]["rule"] != "fz" {
		t.Fatalf("rule ids %v %v", evs[2], evs[5])
	}
}

func TestFreezeWholeStreamAndTimeout(t *testing.T) {
	h := newHarness(t)
	cw, fw := h.watch(h.h1, "/apis/core.matrixorigin.io/v1alpha1/namespaces/default/cnclaims?watch=true")
	h.addRule(`{"id":"fz","action":"freeze","timeout_seconds":0.4,"match":{"group":"core.matrixorigin.io","resource":"cnclaims"}}`)
	t0 := time.Now()
	fw.lines <- evLine("ADDED", "default", "c", 101)
	fw.lines <- evLine("MODIFIED", "default", "c", 102)
	if got := evSummary(cw.next(t)); got != "ADDED c@101" {
		t.Fatal(got)
	}
	if el := time.Since(t0); el < 350*time.Millisecond {
		t.Fatalf("delivered after %v; the freeze should have lasted 0.4s", el)
	}
	if got := evSummary(cw.next(t)); got != "MODIFIED c@102" {
		t.Fatal(got)
	}
	h.waitRule("fz", "expired")
}

func TestFreezeFieldsMatch(t *testing.T) {
	h := newHarness(t)
	cw, fw := h.watch(h.h2, "/api/v1/namespaces/default/pods?watch=true")
	h.addRule(`{"id":"fz","action":"freeze","match":{"resource":"pods","fields":[{"path":"metadata.resourceVersion","op":"eq","value":"102"}]}}`)
	fw.lines <- evLine("MODIFIED", "default", "a", 101)
	fw.lines <- evLine("MODIFIED", "default", "a", 102)
	fw.lines <- evLine("MODIFIED", "default", "b", 103)
	if got := evSummary(cw.next(t)); got != "MODIFIED a@101" {
		t.Fatal(got)
	}
	cw.none(t, 200*time.Millisecond)
	h.release("fz", "")
	if got := evSummary(cw.next(t)); got != "MODIFIED a@102" {
		t.Fatal(got)
	}
	if got := evSummary(cw.next(t)); got != "MODIFIED b@103" {
		t.Fatal(got)
	}
}

func TestCoalesce(t *testing.T) {
	h := newHarness(t)
	cw, fw := h.watch(h.h2, "/api/v1/namespaces/default/pods?allowWatchBookmarks=true&watch=true")
	h.addRule(`{"id":"co","action":"coalesce","match":{"resource":"pods"}}`)
	fw.lines <- evLine("ADDED", "default", "x", 101)
	fw.lines <- evLine("MODIFIED", "default", "x", 102)
	fw.lines <- evLine("ADDED", "default", "y", 103)
	fw.lines <- evLine("DELETED", "default", "y", 104)
	fw.lines <- evLine("MODIFIED", "default", "x", 105)
	fw.lines <- bookmarkLine(106)
	cw.none(t, 300*time.Millisecond)
	if v := h.ruleView("co"); v["held_now"].(float64) != 6 {
		t.Fatalf("view %v", v)
	}
	h.release("co", "")
	for _, want := range []string{"DELETED y@104", "MODIFIED x@105", "BOOKMARK@106"} {
		if got := evSummary(cw.next(t)); got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
	}
	fw.lines <- evLine("MODIFIED", "default", "x", 107)
	if got := evSummary(cw.next(t)); got != "MODIFIED x@107" {
		t.Fatal(got)
	}
	co := h.findRecords(3, func(m map[string]any) bool { return m["type"] == "event" && m["action"] == "coalesced" })
	var rvs []float64
	for _, e := range co {
		rvs = append(rvs, e["rv"].(float64))
	}
	if len(rvs) != 3 || rvs[0] != 101 || rvs[1] != 102 || rvs[2] != 103 {
		t.Fatalf("coalesced %v", rvs)
	}
	if v := h.ruleView("co"); v["released"].(float64) != 3 || v["matched"].(float64) != 6 {
		t.Fatalf("view %v", v)
	}
}

func TestCoalesceUnit(t *testing.T) {
	mk := func(l string) *watchEvent { return parseEvent([]byte(l + "\n")) }
	held := []*watchEvent{
		mk(evLine("ADDED", "n", "x", 1)),
		mk(bookmarkLine(2)),
		mk(evLine("MODIFIED", "n", "x", 3)),
		mk(`{"type":"ERROR","object":{"kind":"Status","code":410}}`),
		mk(bookmarkLine(2)), // older than a delivered event: dropped
	}
	deliver, dropped := coalesce(held)
	if len(deliver) != 2 || deliver[0].typ != "MODIFIED" || deliver[1].typ != "ERROR" {
		t.Fatalf("deliver %v", deliver)
	}
	if len(dropped) != 3 {
		t.Fatalf("dropped %d", len(dropped))
	}
}

func TestUpstreamEndsWhileHeld(t *testing.T) {
	h := newHarness(t)
	cw, fw := h.watch(h.h2, "/api/v1/namespaces/default/pods?watch=true")
	h.addRule(`{"id":"fz","action":"freeze","match":{"resource":"pods"}}`)
	fw.lines <- evLine("MODIFIED", "default", "a", 101)
	fw.lines <- evLine("MODIFIED", "default", "a", 102)
	h.waitRule("fz", "matched")
	close(fw.lines) // the apiserver ends the watch (timeoutSeconds)
	cw.none(t, 300*time.Millisecond)
	h.release("fz", "")
	if got := evSummary(cw.next(t)); got != "MODIFIED a@101" {
		t.Fatal(got)
	}
	if got := evSummary(cw.next(t)); got != "MODIFIED a@102" {
		t.Fatal(got)
	}
	select {
	case <-cw.done:
	case <-time.After(3 * time.Second):
		t.Fatal("stream not ended after the held events were delivered")
	}
}

func TestTableWatchNames(t *testing.T) {
	ev := parseEvent([]byte(`{"type":"ADDED","object":{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"7"},"rows":[{"cells":["p"],"object":{"kind":"PartialObjectMetadata","metadata":{"name":"p","namespace":"ns"}}}]}}` + "\n"))
	if ev.name != "p" || ev.namespace != "ns" || ev.rv == nil || *ev.rv != 7 {
		t.Fatalf("%+v", ev)
	}
}

func TestHeldEventsDiscardedWhenClientLeaves(t *testing.T) {
	h := newHarness(t)
	cw, fw := h.watch(h.h2, "/api/v1/namespaces/default/pods?watch=true")
	h.addRule(`{"id":"fz","action":"freeze","match":{"resource":"pods"}}`)
	fw.lines <- evLine("MODIFIED", "default", "a", 101)
	h.waitRule("fz", "matched")
	cw.resp.Body.Close()
	h.findRecords(1, func(m map[string]any) bool { return m["type"] == "event" && m["action"] == "discarded" })
	deadline := time.Now().Add(3 * time.Second)
	for {
		if v := h.ruleView("fz"); v["held_now"].(float64) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("held_now not back to 0")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
