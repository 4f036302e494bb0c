package main

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestListPassThroughAcceptRewrittenHTTP2(t *testing.T) {
	h := newHarness(t)
	resp, body, err := h.do(h.h2, "GET", "/api/v1/namespaces/default/pods?limit=500&resourceVersion=0", "", nil)
	must(t, err)
	if resp.StatusCode != 200 || resp.Proto != "HTTP/2.0" {
		t.Fatalf("status %d proto %s", resp.StatusCode, resp.Proto)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("content type %q", ct)
	}
	var l struct {
		Kind  string
		Items []json.RawMessage
	}
	must(t, json.Unmarshal(body, &l))
	if l.Kind != "PodList" || len(l.Items) != 1 {
		t.Fatalf("list %s", body)
	}
	reqs := h.api.requests()
	if len(reqs) != 1 {
		t.Fatalf("upstream saw %d requests", len(reqs))
	}
	r := reqs[0]
	if r.Accept != "application/json" {
		t.Errorf("upstream Accept %q, want application/json", r.Accept)
	}
	if r.Proto != "HTTP/2.0" {
		t.Errorf("upstream proto %s", r.Proto)
	}
	if r.UserAgent != "Go-http-client/2.0" || r.Query != "limit=500&resourceVersion=0" {
		t.Errorf("upstream UA %q query %q", r.UserAgent, r.Query)
	}
	recs := h.findRecords(1, func(m map[string]any) bool { return m["type"] == "request" })
	rec := recs[0]
	if rec["verb"] != "list" || rec["resource"] != "pods" || rec["namespace"] != "default" ||
		rec["accept"] != "application/vnd.kubernetes.protobuf, */*" || rec["status"].(float64) != 200 ||
		rec["action"] != "pass" || rec["query"] != "limit=500&resourceVersion=0" {
		t.Fatalf("journal record %v", rec)
	}
}

func TestAcceptRewrite(t *testing.T) {
	cases := map[string]string{
		"application/vnd.kubernetes.protobuf, */*": "application/json",
		"application/json":                         "application/json",
		"":                                         "application/json",
		"application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json",
		"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json":            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
	}
	for in, want := range cases {
		if got := rewriteAccept(in); got != want {
			t.Errorf("rewriteAccept(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRequestInfo(t *testing.T) {
	cases := []struct{ method, url, want string }{
		{"GET", "/api/v1/namespaces/ns/pods", "list||pods||ns|"},
		{"GET", "/api/v1/namespaces/ns/pods?watch=true&resourceVersion=5", "watch||pods||ns|"},
		{"GET", "/api/v1/watch/namespaces/ns/pods", "watch||pods||ns|"},
		{"PUT", "/apis/core.matrixorigin.io/v1alpha1/namespaces/ns/cnclaims/c1/status", "update|core.matrixorigin.io|cnclaims|status|ns|c1"},
		{"POST", "/apis/apps/v1/namespaces/ns/deployments", "create|apps|deployments||ns|"},
		{"DELETE", "/api/v1/namespaces/ns/configmaps", "deletecollection||configmaps||ns|"},
		{"DELETE", "/api/v1/namespaces/ns/configmaps/x", "delete||configmaps||ns|x"},
		{"PATCH", "/api/v1/nodes/n1", "patch||nodes|||n1"},
		{"GET", "/api/v1/namespaces/ns", "get||namespaces||ns|ns"},
		{"PUT", "/api/v1/namespaces/ns/finalize", "update||namespaces|finalize|ns|ns"},
		{"GET", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l", "get|coordination.k8s.io|leases||ns|l"},
	}
	for _, c := range cases {
		req, _ := newTestRequest(c.method, c.url)
		ri := parseRequestInfo(req)
		got := strings.Join([]string{ri.Verb, ri.Group, ri.Resource, ri.Subresource, ri.Namespace, ri.Name}, "|")
		if got != c.want || !ri.IsResource {
			t.Errorf("%s %s: %s, want %s", c.method, c.url, got, c.want)
		}
	}
	for _, u := range []string{"/api", "/apis", "/api/v1", "/apis/apps/v1", "/version", "/openapi/v2", "/healthz"} {
		req, _ := newTestRequest("GET", u)
		if ri := parseRequestInfo(req); ri.IsResource {
			t.Errorf("%s parsed as a resource request", u)
		}
	}
	req, _ := newTestRequest("PUT", "/apis/apps.kruise.io/v1beta1/namespaces/ns/statefulsets/s?dryRun=All")
	if !parseRequestInfo(req).DryRun {
		t.Error("dryRun not seen")
	}
}

func TestWatchStreamedEventByEvent(t *testing.T) {
	h := newHarness(t)
	cw, fw := h.watch(h.h2, "/api/v1/namespaces/default/pods?allowWatchBookmarks=true&resourceVersion=100&timeoutSeconds=300&watch=true")
	if cw.resp.Proto != "HTTP/2.0" || fw.req.Proto != "HTTP/2.0" {
		t.Fatalf("protos %s / %s", cw.resp.Proto, fw.req.Proto)
	}
	if fw.req.Accept != "application/json" {
		t.Fatalf("upstream watch Accept %q", fw.req.Accept)
	}
	fw.lines <- evLine("ADDED", "default", "a", 101)
	// the upstream sends event 2 only after the client has event 1
	if got := evSummary(cw.next(t)); got != "ADDED a@101" {
		t.Fatalf("event 1: %s", got)
	}
	fw.lines <- evLine("MODIFIED", "default", "a", 102)
	if got := evSummary(cw.next(t)); got != "MODIFIED a@102" {
		t.Fatalf("event 2: %s", got)
	}
	fw.lines <- bookmarkLine(103)
	if got := evSummary(cw.next(t)); got != "BOOKMARK@103" {
		t.Fatalf("event 3: %s", got)
	}
	close(fw.lines)
	select {
	case <-cw.done:
	case <-time.After(5 * time.Second):
		t.Fatal("watch did not end when the upstream ended it")
	}
	req := h.findRecords(1, func(m map[string]any) bool { return m["type"] == "request" && m["verb"] == "watch" })[0]
	evs := h.findRecords(3, func(m map[string]any) bool { return m["type"] == "event" })
	for i, want := range []string{"ADDED", "MODIFIED", "BOOKMARK"} {
		e := evs[i]
		if e["event"] != want || e["action"] != "delivered" || e["watch"] != req["seq"] || e["resource"] != "pods" {
			t.Fatalf("event record %d: %v", i, e)
		}
	}
	if evs[0]["name"] != "a" || evs[0]["rv"].(float64) != 101 || evs[0]["namespace"] != "default" {
		t.Fatalf("event record %v", evs[0])
	}
	end := h.findRecords(1, func(m map[string]any) bool { return m["type"] == "watch-end" })[0]
	if end["watch"] != req["seq"] || end["events"].(float64) != 3 || end["end"] != "upstream-eof" {
		t.Fatalf("watch-end %v", end)
	}
}

func TestWatchClientGoneCancelsUpstream(t *testing.T) {
	h := newHarness(t)
	cw, fw := h.watch(h.h2, "/api/v1/pods?watch=true")
	fw.lines <- evLine("ADDED", "default", "a", 101)
	cw.next(t)
	cw.resp.Body.Close()
	deadline := time.Now().Add(3 * time.Second)
	for h.app.proxy.watchesOpen.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("watch still open after the client left")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestHoldThenRelease(t *testing.T) {
	h := newHarness(t)
	h.addRule(`{"id":"h1","action":"hold","match":{"verbs":["update"],"resource":"pods","namespace":"default"}}`)
	type res struct {
		code int
		err  error
	}
	done := make(chan res, 1)
	go func() {
		resp, _, err := h.put("/api/v1/namespaces/default/pods/p1")
		if err != nil {
			done <- res{0, err}
			return
		}
		done <- res{resp.StatusCode, nil}
	}()
	m := h.waitRule("h1", "matched")
	if d := m["detail"].(map[string]any); d["name"] != "p1" || d["verb"] != "update" {
		t.Fatalf("matched detail %v", d)
	}
	time.Sleep(200 * time.Millisecond)
	if n := h.api.count("update"); n != 0 {
		t.Fatalf("held write reached the apiserver (%d)", n)
	}
	if v := h.ruleView("h1"); v["held_now"].(float64) != 1 || v["matched"].(float64) != 1 {
		t.Fatalf("rule view %v", v)
	}
	// dry-run writes are never held
	resp, _, err := h.do(h.h2, "PUT", "/api/v1/namespaces/default/pods/p2?dryRun=All", "application/json", []byte(podJSON("default", "p2", 1)))
	must(t, err)
	if resp.StatusCode != 200 {
		t.Fatalf("dry-run: %d", resp.StatusCode)
	}
	h.release("h1", "")
	r := <-done
	if r.err != nil || r.code != 200 {
		t.Fatalf("held write: %d %v", r.code, r.err)
	}
	if n := h.api.count("update"); n != 2 {
		t.Fatalf("apiserver saw %d updates", n)
	}
	rec := h.findRecords(1, func(m map[string]any) bool { return m["type"] == "request" && m["name"] == "p1" })[0]
	if rec["action"] != "held" || rec["rule"] != "h1" || rec["held_ms"].(float64) < 190 {
		t.Fatalf("record %v", rec)
	}
	obj := rec["object"].(map[string]any)
	if obj["kind"] != "Pod" || obj["name"] != "p1" || obj["namespace"] != "default" || obj["resourceVersion"] == "" {
		t.Fatalf("object %v", obj)
	}
	if v := h.ruleView("h1"); v["state"] != "released" || v["held_now"].(float64) != 0 || v["released"].(float64) != 1 {
		t.Fatalf("rule view after release %v", v)
	}
	// released rules stop matching
	resp, _, err = h.put("/api/v1/namespaces/default/pods/p3")
	must(t, err)
	if resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode)
	}
}

func TestHoldTimeout(t *testing.T) {
	h := newHarness(t)
	h.addRule(`{"id":"h2","action":"hold","timeout_seconds":0.3,"match":{"resource":"pods","subresource":"status"}}`)
	t0 := time.Now()
	resp, _, err := h.put("/api/v1/namespaces/default/pods/p1/status")
	must(t, err)
	el := time.Since(t0)
	if resp.StatusCode != 200 || el < 280*time.Millisecond || el > 3*time.Second {
		t.Fatalf("status %d after %v", resp.StatusCode, el)
	}
	h.waitRule("h2", "expired")
	// subresource "" would not have matched status; check the converse
	h.addRule(`{"id":"h3","action":"hold","timeout_seconds":5,"match":{"resource":"pods","subresource":""}}`)
	t0 = time.Now()
	resp, _, err = h.put("/api/v1/namespaces/default/pods/p1/status")
	must(t, err)
	if time.Since(t0) > time.Second {
		t.Fatal("status write held by a rule on the main resource")
	}
}

func TestFailTwiceThenPass(t *testing.T) {
	h := newHarness(t)
	h.addRule(`{"id":"f1","action":"fail","status":409,"times":2,"match":{"group":"core.matrixorigin.io","resource":"cnclaims","verbs":["update"]}}`)
	path := "/apis/core.matrixorigin.io/v1alpha1/namespaces/default/cnclaims/c1"
	for i := 0; i < 3; i++ {
		resp, body, err := h.do(h.h2, "PUT", path, "application/json", []byte(`{"metadata":{"name":"c1"}}`))
		must(t, err)
		if i < 2 {
			var st map[string]any
			must(t, json.Unmarshal(body, &st))
			if resp.StatusCode != 409 || st["reason"] != "Conflict" || st["kind"] != "Status" ||
				!strings.Contains(st["message"].(string), `Operation cannot be fulfilled on cnclaims.core.matrixorigin.io "c1": the object has been modified; please apply your changes to the latest version and try again`) {
				t.Fatalf("try %d: %d %s", i, resp.StatusCode, body)
			}
		} else if resp.StatusCode != 200 {
			t.Fatalf("try 3: %d %s", resp.StatusCode, body)
		}
	}
	if n := h.api.count("update"); n != 1 {
		t.Fatalf("apiserver saw %d updates", n)
	}
	if v := h.ruleView("f1"); v["failed"].(float64) != 2 || v["remaining"].(float64) != 0 {
		t.Fatalf("view %v", v)
	}
	recs := h.findRecords(2, func(m map[string]any) bool { return m["type"] == "request" && m["action"] == "failed" })
	if recs[0]["status"].(float64) != 409 || recs[0]["rule"] != "f1" {
		t.Fatalf("%v", recs[0])
	}

	h.addRule(`{"id":"f500","action":"fail","status":500,"match":{"resource":"configmaps"}}`)
	resp, body, err := h.do(h.h2, "POST", "/api/v1/namespaces/default/configmaps", "application/json", []byte(`{"metadata":{"name":"cm"}}`))
	must(t, err)
	if resp.StatusCode != 500 || !strings.Contains(string(body), `"InternalError"`) {
		t.Fatalf("500: %d %s", resp.StatusCode, body)
	}
	h.addRule(`{"id":"f504","action":"fail","status":"timeout","timeout_seconds":0.2,"match":{"resource":"services"}}`)
	t0 := time.Now()
	resp, body, err = h.do(h.h2, "DELETE", "/api/v1/namespaces/default/services/s", "", nil)
	must(t, err)
	if resp.StatusCode != 504 || !strings.Contains(string(body), `"Timeout"`) || time.Since(t0) < 190*time.Millisecond {
		t.Fatalf("504: %d %s after %v", resp.StatusCode, body, time.Since(t0))
	}
}

func TestCrash(t *testing.T) {
	for _, proto := range []string{"h2", "h1"} {
		t.Run(proto, func(t *testing.T) {
			h := newHarness(t)
			c := h.h2
			if proto == "h1" {
				c = h.h1
			}
			child := exec.Command("sleep", "30")
			must(t, child.Start())
			exited := make(chan error, 1)
			go func() { exited <- child.Wait() }()
			t.Cleanup(func() { child.Process.Kill() })
			h.addRule(`{"id":"c1","action":"crash","signal_pid":` + itoa(child.Process.Pid) + `,"match":{"verbs":["create"],"resource":"pods"}}`)
			done := make(chan error, 1)
			go func() {
				_, _, err := h.do(c, "POST", "/api/v1/namespaces/default/pods", "application/json", []byte(podJSON("default", "boom", 0)))
				done <- err
			}()
			rec := h.waitRule("c1", "crashed")
			d := rec["detail"].(map[string]any)
			if d["killed"] != true || d["name"] != "boom" || d["status"].(float64) != 201 {
				t.Fatalf("crashed detail %v", d)
			}
			select {
			case err := <-exited:
				if ws, ok := child.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
					t.Fatalf("child exit: %v", err)
				}
			case <-time.After(3 * time.Second):
				t.Fatal("signal_pid not killed")
			}
			if n := h.api.count("create"); n != 1 {
				t.Fatalf("apiserver saw %d creates", n)
			}
			select {
			case err := <-done:
				t.Fatalf("client got an answer before release: %v", err)
			case <-time.After(200 * time.Millisecond):
			}
			h.release("c1", "")
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("client got a response; want a reset")
				}
				t.Logf("client error (expected): %v", err)
			case <-time.After(5 * time.Second):
				t.Fatal("client still waiting after release")
			}
			r := h.findRecords(1, func(m map[string]any) bool { return m["type"] == "request" && m["verb"] == "create" })[0]
			if r["action"] != "crashed" || r["rule"] != "c1" || r["status"].(float64) != 0 || r["upstream_status"].(float64) != 201 {
				t.Fatalf("record %v", r)
			}
			if r["object"].(map[string]any)["name"] != "boom" {
				t.Fatalf("record object %v", r["object"])
			}
		})
	}
}

func TestCrashReleaseWithoutDrop(t *testing.T) {
	h := newHarness(t)
	h.addRule(`{"id":"c2","action":"crash","match":{"verbs":["update"],"resource":"pods"}}`)
	done := make(chan int, 1)
	go func() {
		resp, _, err := h.put("/api/v1/namespaces/default/pods/p")
		if err != nil {
			done <- -1
			return
		}
		done <- resp.StatusCode
	}()
	h.waitRule("c2", "crashed")
	h.release("c2", `{"drop": false}`)
	if code := <-done; code != 200 {
		t.Fatalf("status %d", code)
	}
}

func TestCrashNotOnFailedWrite(t *testing.T) {
	h := newHarness(t)
	// the fail rule answers first; the crash rule is behind it
	h.addRule(`{"id":"f","action":"fail","status":409,"match":{"verbs":["update"],"resource":"pods","name":"x"}}`)
	h.addRule(`{"id":"c","action":"crash","match":{"verbs":["update"],"resource":"pods"}}`)
	resp, _, err := h.put("/api/v1/namespaces/default/pods/x")
	must(t, err)
	if resp.StatusCode != 409 {
		t.Fatal(resp.StatusCode)
	}
	if v := h.ruleView("c"); v["matched"].(float64) != 0 {
		t.Fatalf("crash rule matched behind a fail rule: %v", v)
	}
}

func TestStaleList(t *testing.T) {
	h := newHarness(t)
	list := `{"apiVersion":"v1","kind":"PodList","metadata":{"resourceVersion":"42"},"items":[` + podJSON("default", "ghost", 40) + `]}`
	h.addRule(`{"id":"s1","action":"stale-list","match":{"resource":"pods"},"list":` + list + `}`)
	resp, body, err := h.do(h.h2, "GET", "/api/v1/namespaces/default/pods?limit=500&resourceVersion=0", "", nil)
	must(t, err)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"ghost"`) || !strings.Contains(string(body), `"42"`) {
		t.Fatalf("stale list: %d %s", resp.StatusCode, body)
	}
	if n := h.api.count("list"); n != 0 {
		t.Fatalf("apiserver asked (%d)", n)
	}
	resp, body, err = h.do(h.h2, "GET", "/api/v1/namespaces/default/pods?limit=500&resourceVersion=0", "", nil)
	must(t, err)
	if !strings.Contains(string(body), `"live"`) {
		t.Fatalf("second list not forwarded: %s", body)
	}
	recs := h.findRecords(2, func(m map[string]any) bool { return m["type"] == "request" && m["verb"] == "list" })
	if recs[0]["action"] != "stale-list" || recs[0]["rule"] != "s1" || recs[1]["action"] != "pass" {
		t.Fatalf("records %v", recs)
	}
}

func TestIdentity(t *testing.T) {
	h := newHarness(t)
	_, _, err := h.do(h.h2, "GET", "/api/v1/namespaces/default/pods/a", "", nil, "Authorization", "Bearer mochaos-interposer")
	must(t, err)
	r := h.api.requests()[0]
	if r.Auth != "" || !r.ClientCert {
		t.Fatalf("identity upstream: auth %q client cert %v", r.Auth, r.ClientCert)
	}
	hf := newHarness(t, "--identity", "forward")
	_, _, err = hf.do(hf.h2, "GET", "/api/v1/namespaces/default/pods/a", "", nil, "Authorization", "Bearer sa-token")
	must(t, err)
	r = hf.api.requests()[0]
	if r.Auth != "Bearer sa-token" || r.ClientCert {
		t.Fatalf("identity forward: auth %q client cert %v", r.Auth, r.ClientCert)
	}
}

func TestDiscoveryAndLeasesNotMatched(t *testing.T) {
	h := newHarness(t)
	h.addRule(`{"id":"all","action":"fail","status":500,"times":100,"match":{"verbs":["get","list","update","create"]}}`)
	for _, p := range []string{"/api", "/apis", "/version", "/openapi/v2"} {
		resp, _, err := h.do(h.h2, "GET", p, "", nil, "Accept", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")
		must(t, err)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", p, resp.StatusCode)
		}
	}
	for _, r := range h.api.requests() {
		if r.Accept != "application/com.github.proto-openapi.spec.v2@v1.0+protobuf" {
			t.Fatalf("Accept of %s rewritten: %q", r.Path, r.Accept)
		}
	}
	resp, _, err := h.do(h.h2, "PUT", "/apis/coordination.k8s.io/v1/namespaces/default/leases/op", "application/json", []byte(`{}`))
	must(t, err)
	if resp.StatusCode != 200 {
		t.Fatalf("lease: %d", resp.StatusCode)
	}
	h.addRule(`{"id":"lease","action":"fail","status":500,"match":{"resource":"leases"}}`)
	resp, _, err = h.do(h.h2, "PUT", "/apis/coordination.k8s.io/v1/namespaces/default/leases/op", "application/json", []byte(`{}`))
	must(t, err)
	if resp.StatusCode != 500 {
		t.Fatalf("lease named by a rule: %d", resp.StatusCode)
	}
}

func TestFieldsOnJSONBody(t *testing.T) {
	h := newHarness(t)
	h.addRule(`{"id":"ph","action":"fail","status":409,"times":5,"match":{"resource":"pods","subresource":"status","fields":[{"path":"status.phase","op":"eq","value":"Failed"},{"path":"metadata.labels.app\\.kubernetes\\.io/name","op":"exists"}]}}`)
	send := func(phase string, label bool) int {
		lbl := ""
		if label {
			lbl = `,"labels":{"app.kubernetes.io/name":"mo"}`
		}
		resp, _, err := h.do(h.h2, "PUT", "/api/v1/namespaces/default/pods/p/status", "application/json",
			[]byte(`{"metadata":{"name":"p"`+lbl+`},"status":{"phase":"`+phase+`"}}`))
		must(t, err)
		return resp.StatusCode
	}
	if c := send("Failed", true); c != 409 {
		t.Fatal("should match", c)
	}
	if c := send("Running", true); c != 200 {
		t.Fatal("phase differs", c)
	}
	if c := send("Failed", false); c != 200 {
		t.Fatal("label absent", c)
	}
	// the body the apiserver got is byte for byte what the client sent
	for _, r := range h.api.requests() {
		if !strings.HasPrefix(string(r.Body), `{"metadata":{"name":"p"`) {
			t.Fatalf("body changed: %s", r.Body)
		}
	}
}

func TestKubeconfigOut(t *testing.T) {
	h := newHarness(t)
	kc := filepath.Join(h.dir, "operator.kubeconfig")
	b, err := os.ReadFile(kc)
	must(t, err)
	if !strings.Contains(string(b), "token: mochaos-interposer") || !strings.Contains(string(b), "server: "+h.base) {
		t.Fatalf("kubeconfig:\n%s", b)
	}
	// a client that only has this kubeconfig can talk through the proxy
	up, err := loadUpstream(kc, "", "upstream")
	must(t, err)
	if up.token != "mochaos-interposer" || up.url.String() != h.base || up.namespace != "default" {
		t.Fatalf("parsed %+v", up)
	}
	c := &httpClient{up}
	code := c.get(t, "/api/v1/namespaces/default/pods")
	if code != 200 {
		t.Fatal(code)
	}
	addr, _ := os.ReadFile(filepath.Join(h.dir, "addr"))
	ctrl, _ := os.ReadFile(filepath.Join(h.dir, "ctrl"))
	if strings.TrimSpace(string(addr)) != h.app.Addr || strings.TrimSpace(string(ctrl)) != h.app.CtrlAddr {
		t.Fatalf("addr-out %q control-out %q", addr, ctrl)
	}
}

// --control-out is the caller's sign that both files are there: when --addr-out cannot be
// written, --control-out is not written either.
func TestControlOutIsWrittenAfterAddrOut(t *testing.T) {
	api := newFakeAPI(t)
	dir := t.TempDir()
	up := writeUpstreamKubeconfig(t, dir, api)
	ctrl := filepath.Join(dir, "ctrl")
	cfg, err := parseFlags([]string{
		"--upstream-kubeconfig", up, "--listen", "127.0.0.1:0", "--control", "127.0.0.1:0",
		"--journal", filepath.Join(dir, "journal.jsonl"),
		"--addr-out", filepath.Join(dir, "missing", "addr"), "--control-out", ctrl,
	}, io.Discard)
	must(t, err)
	a, err := newApp(cfg)
	must(t, err)
	defer a.Shutdown()
	if err := a.Start(); err == nil {
		t.Fatal("Start wrote --addr-out into a folder that does not exist")
	}
	if _, err := os.Stat(ctrl); !os.IsNotExist(err) {
		t.Fatalf("--control-out written although --addr-out failed: %v", err)
	}
}
