package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestControlAPIErrors(t *testing.T) {
	h := newHarness(t)
	bad := []string{
		`{`,
		`[]`,
		`{"id":"a","action":"hold","bogus":1}`,
		`{"id":"a","action":"explode"}`,
		`{"id":"a"}`,
		`{"action":"hold"}`,
		`{"id":"a","action":"hold","match":{"verbs":["frobnicate"]}}`,
		`{"id":"a","action":"hold","match":{"resource":5}}`,
		`{"id":"a","action":"hold","match":{"colour":"red"}}`,
		`{"id":"a","action":"hold","match":{"fields":[{"path":"status.phase","op":"like","value":"x"}]}}`,
		`{"id":"a","action":"hold","match":{"fields":[{"path":"status.phase","op":"eq"}]}}`,
		`{"id":"a","action":"hold","match":{"fields":[{"path":"","op":"exists"}]}}`,
		`{"id":"a","action":"hold","match":{"fields":[{"path":"a","op":"exists","value":1}]}}`,
		`{"id":"a","action":"hold","times":0}`,
		`{"id":"a","action":"hold","list":{}}`,
		`{"id":"a","action":"fail","status":418}`,
		`{"id":"a","action":"fail","status":409,"timeout_seconds":3}`,
		`{"id":"a","action":"freeze","times":2}`,
		`{"id":"a","action":"freeze","match":{"verbs":["update"]}}`,
		`{"id":"a","action":"stale-list"}`,
		`{"id":"a","action":"stale-list","list":"nope"}`,
		`{"id":"a","action":"hold"} {"id":"b"}`,
	}
	for _, b := range bad {
		code, m := h.ctl("POST", "/rules", b)
		if code != 400 || m["error"] == nil || m["error"] == "" {
			t.Errorf("%s: %d %v", b, code, m)
		}
	}
	if code, m := h.ctl("GET", "/rules", ""); code != 200 || len(m["rules"].([]any)) != 0 {
		t.Fatalf("rules after bad posts: %d %v", code, m)
	}
	h.addRule(`{"id":"a","action":"hold","match":{"verbs":["get"]}}`) // a verb the operator may never hold: fine
	if code, _ := h.ctl("POST", "/rules", `{"id":"a","action":"hold"}`); code != 409 {
		t.Fatalf("duplicate id: %d", code)
	}
	if code, _ := h.ctl("POST", "/rules/zz/release", ""); code != 404 {
		t.Fatalf("release unknown: %d", code)
	}
	if code, _ := h.ctl("DELETE", "/rules/zz", ""); code != 404 {
		t.Fatalf("delete unknown: %d", code)
	}
	if code, m := h.ctl("POST", "/rules/a/release", `{"dorp":true}`); code != 400 || m["error"] == nil {
		t.Fatalf("bad release body: %d", code)
	}
	code, m := h.ctl("GET", "/rules", "")
	rules := m["rules"].([]any)
	r0 := rules[0].(map[string]any)
	if code != 200 || len(rules) != 1 || r0["id"] != "a" || r0["state"] != "active" {
		t.Fatalf("GET /rules %v", m)
	}
	for _, k := range []string{"matched", "held_now", "released", "failed", "crashed"} {
		if _, ok := r0[k]; !ok {
			t.Fatalf("counter %s missing: %v", k, r0)
		}
	}
	if code, _ := h.ctl("DELETE", "/rules/a", ""); code != 200 {
		t.Fatal(code)
	}
	h.waitRule("a", "removed")
	code, m = h.ctl("GET", "/rules", "")
	if len(m["rules"].([]any)) != 0 {
		t.Fatalf("rule not removed: %v", m)
	}
	// /healthz, /stats
	resp, err := h.h1.Get(strings.Replace(h.ctrl, "http://", "http://", 1) + "/healthz")
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatal("healthz", resp.StatusCode)
	}
	h.do(h.h2, "GET", "/api/v1/namespaces/default/pods", "", nil)
	code, m = h.ctl("GET", "/stats", "")
	lat := m["latency_ms"].(map[string]any)
	if code != 200 || m["requests"].(float64) < 1 || lat["list"] == nil || m["rss_bytes"].(float64) <= 0 {
		t.Fatalf("stats %v", m)
	}
}

func TestReleaseAllAndWait(t *testing.T) {
	h := newHarness(t)
	h.addRule(`{"id":"a","action":"hold","match":{"resource":"pods"}}`)
	h.addRule(`{"id":"b","action":"hold","match":{"resource":"configmaps"}}`)
	done := make(chan int, 2)
	go func() {
		resp, _, err := h.put("/api/v1/namespaces/default/pods/p")
		if err != nil {
			done <- -1
			return
		}
		done <- resp.StatusCode
	}()
	go func() {
		resp, _, err := h.do(h.h1, "POST", "/api/v1/namespaces/default/configmaps", "application/json", []byte(`{"metadata":{"name":"cm"}}`))
		if err != nil {
			done <- -1
			return
		}
		done <- resp.StatusCode
	}()
	h.waitRule("a", "matched")
	h.waitRule("b", "matched")
	code, m := h.ctl("POST", "/release-all", "")
	if code != 200 || len(m["released"].([]any)) != 2 {
		t.Fatalf("release-all %d %v", code, m)
	}
	for i := 0; i < 2; i++ {
		if c := <-done; c != 200 && c != 201 {
			t.Fatalf("write after release-all: %d", c)
		}
	}
	// a wait with nothing new times out with no records
	last := h.app.j.LastSeq()
	t0 := time.Now()
	code, m = h.ctl("GET", "/wait?since="+itoa(int(last))+"&timeout=0.3", "")
	if code != 200 || len(m["records"].([]any)) != 0 || time.Since(t0) < 250*time.Millisecond {
		t.Fatalf("wait %d %v", code, m)
	}
	// a wait returns as soon as a record appears
	go func() {
		time.Sleep(100 * time.Millisecond)
		h.addRule(`{"id":"c","action":"hold"}`)
	}()
	code, m = h.ctl("GET", "/wait?since="+itoa(int(last))+"&timeout=5", "")
	recs := m["records"].([]any)
	if code != 200 || len(recs) != 1 || recs[0].(map[string]any)["what"] != "added" {
		t.Fatalf("wait %v", m)
	}
}

// TestMain lets the SIGTERM test run main() in a child process.
func TestMain(m *testing.M) {
	if args := os.Getenv("INTERPOSER_TEST_MAIN"); args != "" {
		var a []string
		json.Unmarshal([]byte(args), &a)
		os.Args = append([]string{"interposer"}, a...)
		main()
		return
	}
	os.Exit(m.Run())
}

func TestSIGTERMReleases(t *testing.T) {
	api := newFakeAPI(t)
	dir := t.TempDir()
	up := writeUpstreamKubeconfig(t, dir, api)
	args, _ := json.Marshal([]string{"--upstream-kubeconfig", up, "--control", "unix:" + filepath.Join(dir, "ctl.sock"),
		"--control-out", filepath.Join(dir, "ctrl"), "--cert-out", filepath.Join(dir, "proxy.crt"),
		"--journal", filepath.Join(dir, "j.jsonl")})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	// GORACE: under -race the runtime sleeps 1s at exit by default
	cmd.Env = append(os.Environ(), "INTERPOSER_TEST_MAIN="+string(args), "GORACE=atexit_sleep_ms=0")
	out, err := cmd.StdoutPipe()
	must(t, err)
	cmd.Stderr = os.Stderr
	must(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill() })
	buf := make([]byte, 200)
	n, err := out.Read(buf)
	must(t, err)
	line := string(buf[:n])
	if !strings.HasPrefix(line, "interposer: listening on 127.0.0.1:") || strings.Count(line, "\n") != 1 {
		t.Fatalf("first line %q", line)
	}
	addr := strings.TrimSpace(strings.TrimPrefix(line, "interposer: listening on "))
	ctrlB, err := os.ReadFile(filepath.Join(dir, "ctrl"))
	must(t, err)
	if strings.TrimSpace(string(ctrlB)) != "unix:"+filepath.Join(dir, "ctl.sock") {
		t.Fatalf("control-out %q", ctrlB)
	}
	// a harness that talks to the child
	h := &harness{t: t, api: api, dir: dir, journal: filepath.Join(dir, "j.jsonl"), base: "https://" + addr}
	h.ctrl = "http://unix"
	h.h2, h.h1 = clientsFor(t, filepath.Join(dir, "proxy.crt"))
	uc := unixClient(filepath.Join(dir, "ctl.sock"))
	post := func(path, body string) int {
		resp, err := uc.Post("http://unix"+path, "application/json", strings.NewReader(body))
		must(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := post("/rules", `{"id":"h","action":"hold","match":{"resource":"pods"}}`); c != 201 {
		t.Fatal(c)
	}
	done := make(chan int, 1)
	go func() {
		resp, _, err := h.put("/api/v1/namespaces/default/pods/p")
		if err != nil {
			done <- -1
			return
		}
		done <- resp.StatusCode
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := os.ReadFile(h.journal)
		if strings.Contains(string(b), `"what":"matched"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("hold never matched")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t0 := time.Now()
	must(t, cmd.Process.Signal(syscall.SIGTERM))
	if c := <-done; c != 200 {
		t.Fatalf("held write after SIGTERM: %d", c)
	}
	werr := make(chan error, 1)
	go func() { werr <- cmd.Wait() }()
	select {
	case err := <-werr:
		if err != nil {
			t.Fatalf("exit: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("no exit within 2s of SIGTERM")
	}
	if el := time.Since(t0); el > time.Second {
		t.Fatalf("exit took %v", el)
	}
	if api.count("update") != 1 {
		t.Fatal("held write not forwarded on SIGTERM")
	}
}
