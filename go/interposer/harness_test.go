package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// ---- a fake apiserver with the shapes of the real one ----

type fakeReq struct {
	Method, Path, Query, Accept, Auth, ContentType, Proto, UserAgent string
	ClientCert                                                       bool
	Body                                                             []byte
	Verb                                                             string
}

type fakeWatch struct {
	req   fakeReq
	lines chan string
}

type fakeAPI struct {
	srv     *httptest.Server
	mu      sync.Mutex
	reqs    []fakeReq
	watches chan *fakeWatch
	rv      atomic.Int64
	caPEM   []byte
}

func newFakeAPI(t *testing.T) *fakeAPI {
	f := &fakeAPI{watches: make(chan *fakeWatch, 16)}
	f.rv.Store(100)
	f.srv = httptest.NewUnstartedServer(f)
	f.srv.EnableHTTP2 = true
	f.srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	f.srv.StartTLS()
	f.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.srv.Certificate().Raw})
	t.Cleanup(func() {
		f.srv.CloseClientConnections()
		f.srv.Close()
	})
	return f
}

func (f *fakeAPI) requests() []fakeReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeReq(nil), f.reqs...)
}

func (f *fakeAPI) count(verb string) int {
	n := 0
	for _, r := range f.requests() {
		if r.Verb == verb {
			n++
		}
	}
	return n
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	ri := parseRequestInfo(r)
	fr := fakeReq{
		Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Accept: r.Header.Get("Accept"),
		Auth: r.Header.Get("Authorization"), ContentType: r.Header.Get("Content-Type"), Proto: r.Proto,
		UserAgent: r.UserAgent(), ClientCert: r.TLS != nil && len(r.TLS.PeerCertificates) > 0,
		Body: body, Verb: ri.Verb,
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, fr)
	f.mu.Unlock()
	fl := w.(http.Flusher)
	switch {
	case !ri.IsResource:
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"kind":"APIVersions","versions":["v1"]}`)
	case ri.Verb == "watch":
		fw := &fakeWatch{req: fr, lines: make(chan string, 100)}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		fl.Flush()
		f.watches <- fw
		for {
			select {
			case l, ok := <-fw.lines:
				if !ok {
					return
				}
				io.WriteString(w, l+"\n")
				fl.Flush()
			case <-r.Context().Done():
				return
			}
		}
	case ri.Verb == "list":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"%d"},"items":[%s]}`,
			f.rv.Load(), podJSON(ri.Namespace, "live", f.rv.Load()))
	case ri.Verb == "get":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, podJSON(ri.Namespace, ri.Name, f.rv.Load()))
	default:
		name := ri.Name
		if name == "" {
			name, _, _ = bodyName(r.Header.Get("Content-Type"), body)
		}
		rv := f.rv.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost {
			w.WriteHeader(201)
		}
		io.WriteString(w, podJSON(ri.Namespace, name, rv))
	}
}

func podJSON(ns, name string, rv int64) string {
	return fmt.Sprintf(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":%q,"namespace":%q,"resourceVersion":"%d"},"status":{"phase":"Running"}}`, name, ns, rv)
}

func evLine(typ, ns, name string, rv int64) string {
	return fmt.Sprintf(`{"type":%q,"object":%s}`, typ, podJSON(ns, name, rv))
}

func bookmarkLine(rv int64) string {
	return fmt.Sprintf(`{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"%d","creationTimestamp":null},"spec":{"containers":null},"status":{}}}`, rv)
}

// ---- certificates for the upstream kubeconfig's user ----

func clientCertPEM(t *testing.T) (certPEM, keyPEM []byte) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "tester"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kd, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd})
}

// writeUpstreamKubeconfig: server + CA file + client cert/key files, like
// the local cluster's.
func writeUpstreamKubeconfig(t *testing.T, dir string, api *fakeAPI) string {
	certPEM, keyPEM := clientCertPEM(t)
	must(t, os.WriteFile(filepath.Join(dir, "ca.crt"), api.caPEM, 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "client.crt"), certPEM, 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "client.key"), keyPEM, 0o600))
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster:
    server: %s
    certificate-authority: ca.crt
users:
- name: admin
  user:
    client-certificate: client.crt
    client-key: %s
contexts:
- name: fake
  context:
    cluster: fake
    user: admin
    namespace: default
current-context: fake
`, api.srv.URL, filepath.Join(dir, "client.key"))
	p := filepath.Join(dir, "upstream.kubeconfig")
	must(t, os.WriteFile(p, []byte(kc), 0o600))
	return p
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// ---- the proxy under test ----

type harness struct {
	t       *testing.T
	api     *fakeAPI
	app     *App
	dir     string
	journal string
	base    string
	ctrl    string
	h2      *http.Client
	h1      *http.Client
}

func newHarness(t *testing.T, extra ...string) *harness {
	t.Helper()
	api := newFakeAPI(t)
	dir := t.TempDir()
	up := writeUpstreamKubeconfig(t, dir, api)
	h := &harness{t: t, api: api, dir: dir, journal: filepath.Join(dir, "journal.jsonl")}
	args := append([]string{
		"--upstream-kubeconfig", up, "--listen", "127.0.0.1:0", "--control", "127.0.0.1:0",
		"--cert-out", filepath.Join(dir, "proxy.crt"), "--kubeconfig-out", filepath.Join(dir, "operator.kubeconfig"),
		"--journal", h.journal, "--addr-out", filepath.Join(dir, "addr"), "--control-out", filepath.Join(dir, "ctrl"),
	}, extra...)
	cfg, err := parseFlags(args, io.Discard)
	must(t, err)
	app, err := newApp(cfg)
	must(t, err)
	must(t, app.Start())
	h.app = app
	t.Cleanup(app.Shutdown)
	h.base = "https://" + app.Addr
	h.ctrl = "http://" + app.CtrlAddr
	h.h2, h.h1 = clientsFor(t, filepath.Join(dir, "proxy.crt"))
	return h
}

// clientsFor: an HTTP/2 and an HTTP/1.1 client trusting the proxy's cert.
func clientsFor(t *testing.T, certFile string) (h2, h1 *http.Client) {
	pool := x509.NewCertPool()
	certPEM, err := os.ReadFile(certFile)
	must(t, err)
	pool.AppendCertsFromPEM(certPEM)
	h2 = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	h1 = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool},
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}}
	t.Cleanup(func() {
		h2.CloseIdleConnections()
		h1.CloseIdleConnections()
	})
	return h2, h1
}

func unixClient(path string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}}}
}

func (h *harness) do(c *http.Client, method, path, ct string, body []byte, hdr ...string) (*http.Response, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, h.base+path, rd)
	if err != nil {
		return nil, nil, err
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	req.Header.Set("User-Agent", "Go-http-client/2.0")
	req.Header.Set("Accept", "application/vnd.kubernetes.protobuf, */*")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func (h *harness) put(path string) (*http.Response, []byte, error) {
	ns, name := "default", path[strings.LastIndex(path, "/")+1:]
	return h.do(h.h2, http.MethodPut, path, "application/json", []byte(podJSON(ns, name, 1)))
}

func (h *harness) ctl(method, path, body string) (int, map[string]any) {
	h.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, h.ctrl+path, rd)
	resp, err := http.DefaultClient.Do(req)
	must(h.t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if len(b) > 0 && b[0] == '{' {
		if err := json.Unmarshal(b, &m); err != nil {
			h.t.Fatalf("control %s %s: bad JSON %q", method, path, b)
		}
	}
	return resp.StatusCode, m
}

func (h *harness) addRule(spec string) {
	h.t.Helper()
	code, m := h.ctl("POST", "/rules", spec)
	if code != 201 {
		h.t.Fatalf("POST /rules %s: %d %v", spec, code, m)
	}
}

func (h *harness) release(id, body string) {
	h.t.Helper()
	code, m := h.ctl("POST", "/rules/"+id+"/release", body)
	if code != 200 {
		h.t.Fatalf("release %s: %d %v", id, code, m)
	}
}

func (h *harness) ruleView(id string) map[string]any {
	h.t.Helper()
	code, m := h.ctl("GET", "/rules/"+id, "")
	if code != 200 {
		h.t.Fatalf("GET /rules/%s: %d", id, code)
	}
	return m
}

// waitRule long-polls /wait until a rule record with rule=id and what=what.
func (h *harness) waitRule(id, what string) map[string]any {
	h.t.Helper()
	var since int64
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		code, m := h.ctl("GET", fmt.Sprintf("/wait?since=%d&timeout=2", since), "")
		if code != 200 {
			h.t.Fatalf("wait: %d", code)
		}
		for _, r := range m["records"].([]any) {
			rec := r.(map[string]any)
			if rec["rule"] == id && rec["what"] == what {
				return rec
			}
		}
		since = int64(m["seq"].(float64))
	}
	h.t.Fatalf("no rule record %s/%s", id, what)
	return nil
}

func (h *harness) records() []map[string]any {
	h.t.Helper()
	b, err := os.ReadFile(h.journal)
	must(h.t, err)
	var out []map[string]any
	for _, l := range bytes.Split(b, []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			h.t.Fatalf("journal line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// findRecords returns the journal records for which pred holds, waiting up
// to 3s for at least n of them.
func (h *harness) findRecords(n int, pred func(map[string]any) bool) []map[string]any {
	h.t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		var out []map[string]any
		for _, r := range h.records() {
			if pred(r) {
				out = append(out, r)
			}
		}
		if len(out) >= n || time.Now().After(deadline) {
			if len(out) < n {
				h.t.Fatalf("want %d journal records, found %d", n, len(out))
			}
			return out
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ---- a watch as seen by the client ----

type clientWatch struct {
	resp  *http.Response
	lines chan string
	done  chan error
}

func (h *harness) watch(c *http.Client, path string) (*clientWatch, *fakeWatch) {
	h.t.Helper()
	req, _ := http.NewRequest("GET", h.base+path, nil)
	req.Header.Set("Accept", "application/vnd.kubernetes.protobuf, */*")
	req.Header.Set("User-Agent", "Go-http-client/2.0")
	resp, err := c.Do(req)
	must(h.t, err)
	if resp.StatusCode != 200 {
		h.t.Fatalf("watch: %d", resp.StatusCode)
	}
	cw := &clientWatch{resp: resp, lines: make(chan string, 100), done: make(chan error, 1)}
	go func() {
		br := bufio.NewReader(resp.Body)
		for {
			l, err := br.ReadString('\n')
			if l != "" {
				cw.lines <- strings.TrimSuffix(l, "\n")
			}
			if err != nil {
				cw.done <- err
				close(cw.lines)
				return
			}
		}
	}()
	h.t.Cleanup(func() { resp.Body.Close() })
	select {
	case fw := <-h.api.watches:
		return cw, fw
	case <-time.After(5 * time.Second):
		h.t.Fatal("watch did not reach the upstream")
	}
	return nil, nil
}

func (cw *clientWatch) next(t *testing.T) map[string]any {
	t.Helper()
	select {
	case l, ok := <-cw.lines:
		if !ok {
			t.Fatal("watch ended")
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("event %q: %v", l, err)
		}
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
	}
	return nil
}

func (cw *clientWatch) none(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case l, ok := <-cw.lines:
		if ok {
			t.Fatalf("unexpected event %s", l)
		}
		t.Fatal("watch ended unexpectedly")
	case <-time.After(d):
	}
}

func evSummary(m map[string]any) string {
	obj, _ := m["object"].(map[string]any)
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	rv, _ := md["resourceVersion"].(string)
	if name == "" {
		return fmt.Sprintf("%s@%s", m["type"], rv)
	}
	return fmt.Sprintf("%s %s@%s", m["type"], name, rv)
}
