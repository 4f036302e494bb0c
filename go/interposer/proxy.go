package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Proxy is the HTTP handler between the operator and the apiserver.
type Proxy struct {
	j        *Journal
	rules    *RuleSet
	stats    *Stats
	rp       *httputil.ReverseProxy
	upstream *url.URL
	forward  bool   // --identity forward: keep the client's Authorization
	token    string // bearer token from the upstream kubeconfig (identity upstream)

	watchesOpen atomic.Int64
	inflight    atomic.Int64 // non-watch requests being served
}

const maxBodyCapture = 32 << 20 // request bodies read for matching / naming
const maxRespCapture = 4 << 20  // write responses kept to learn the object

var (
	errCrashDrop  = errors.New("crash rule: response withheld, downstream request aborted")
	errClientGone = errors.New("client went away")
)

type ctxKey struct{}

// reqState is what the proxy learns about one request while serving it.
type reqState struct {
	seq         int64
	start       time.Time
	ri          reqInfo
	accept      string
	userAgent   string
	contentType string
	req         *http.Request

	action   string
	rule     *Rule
	heldMs   float64
	crash    *Rule
	upStatus int
	object   *objRef
	capture  *captureBody
	watch    *watchStream
	errMsg   string

	bodyRead  bool
	body      []byte
	bodyBig   bool
	valueDone bool
	value     any
	name      string
}

func stateOf(r *http.Request) *reqState {
	st, _ := r.Context().Value(ctxKey{}).(*reqState)
	return st
}

func newProxy(up *upstreamConfig, j *Journal, rules *RuleSet, stats *Stats, errLog *log.Logger) *Proxy {
	p := &Proxy{j: j, rules: rules, stats: stats, upstream: up.url, forward: up.forward, token: up.token}
	p.rp = &httputil.ReverseProxy{
		Rewrite:        p.rewrite,
		Transport:      up.transport,
		FlushInterval:  -1,
		ModifyResponse: p.modifyResponse,
		ErrorHandler:   p.errorHandler,
		ErrorLog:       errLog,
		BufferPool:     bufPool{},
	}
	return p
}

type bufPool struct{}

var bufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (bufPool) Get() []byte  { return *(bufs.Get().(*[]byte)) }
func (bufPool) Put(b []byte) { bufs.Put(&b) }

func (p *Proxy) rewrite(pr *httputil.ProxyRequest) {
	pr.SetURL(p.upstream)
	if st := stateOf(pr.In); st != nil && shouldRewriteAccept(&st.ri) {
		pr.Out.Header.Set("Accept", rewriteAccept(st.accept))
	}
	if !p.forward {
		pr.Out.Header.Del("Authorization")
		if p.token != "" {
			pr.Out.Header.Set("Authorization", "Bearer "+p.token)
		}
	}
}

// readBody buffers a request body so that it can be decoded and still be
// forwarded unchanged.
func (st *reqState) readBody() []byte {
	if st.bodyRead {
		return st.body
	}
	st.bodyRead = true
	r := st.req
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBodyCapture+1))
	if len(b) > maxBodyCapture {
		st.bodyBig = true
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(b), r.Body), r.Body}
		return nil
	}
	if err != nil {
		// forward what was read followed by the error
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(b), &errReader{err}), r.Body}
		return nil
	}
	r.Body.Close()
	st.body = b
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.ContentLength = int64(len(b))
	return b
}

type errReader struct{ err error }

func (e *errReader) Read([]byte) (int, error) { return 0, e.err }

func (st *reqState) bodyValue() any {
	if !st.valueDone {
		st.valueDone = true
		st.value = bodyToValue(st.contentType, st.readBody())
	}
	return st.value
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	st := &reqState{
		seq: p.j.NextSeq(), start: time.Now(), ri: parseRequestInfo(r),
		accept: r.Header.Get("Accept"), userAgent: r.UserAgent(),
		contentType: r.Header.Get("Content-Type"), req: r, action: "pass",
	}
	rw := &respWriter{ResponseWriter: w}
	if st.ri.Verb != "watch" {
		p.inflight.Add(1)
		defer p.inflight.Add(-1)
	}
	defer p.finish(st, rw)
	ctx := r.Context()

	var rule *Rule
	if st.ri.IsResource {
		rule = p.rules.matchRequest(&st.ri, st.bodyValue)
		if st.ri.Verb == "create" && st.ri.Name == "" {
			if b := st.readBody(); b != nil {
				n, gn, _ := bodyName(st.contentType, b)
				if n == "" && gn != "" {
					n = gn + "*"
				}
				st.name = n
			}
		}
	}
	if rule != nil {
		st.rule = rule
		p.j.rule(rule.id, "matched", map[string]any{
			"seq": st.seq, "action": rule.action, "verb": st.ri.Verb, "group": st.ri.Group,
			"resource": st.ri.Resource, "subresource": st.ri.Subresource,
			"namespace": st.ri.Namespace, "name": st.objName(), "dry_run": st.ri.DryRun,
		})
		switch rule.action {
		case actHold:
			st.action = "held"
			rule.heldNow.Add(1)
			t0 := time.Now()
			select {
			case <-rule.releaseCh:
			case <-ctx.Done():
			}
			rule.heldNow.Add(-1)
			st.heldMs = ms(time.Since(t0))
			if ctx.Err() != nil {
				st.errMsg = "client went away while held; not forwarded"
				return
			}
			rule.released.Add(1)
		case actFail:
			st.action = "failed"
			if rule.failWait {
				rule.heldNow.Add(1)
				t0 := time.Now()
				t := time.NewTimer(rule.timeout)
				select {
				case <-t.C:
				case <-rule.releaseCh:
				case <-ctx.Done():
				}
				t.Stop()
				rule.heldNow.Add(-1)
				st.heldMs = ms(time.Since(t0))
				if ctx.Err() != nil {
					st.errMsg = "client went away while held"
					return
				}
			}
			rule.failed.Add(1)
			writeStatus(rw, rule.failCode, &st.ri, st.objName())
			return
		case actCrash:
			st.crash = rule
		case actStaleList:
			st.action = "stale-list"
			h := rw.Header()
			h.Set("Content-Type", "application/json")
			h.Set("Content-Length", strconv.Itoa(len(rule.list)))
			rw.WriteHeader(http.StatusOK)
			rw.Write(rule.list)
			return
		}
	}
	p.rp.ServeHTTP(rw, r.WithContext(context.WithValue(ctx, ctxKey{}, st)))
}

func (st *reqState) objName() string {
	if st.ri.Name != "" {
		return st.ri.Name
	}
	return st.name
}

func isJSONType(ct string) bool {
	return strings.HasPrefix(ct, "application/json")
}

func (p *Proxy) modifyResponse(resp *http.Response) error {
	st := stateOf(resp.Request)
	if st == nil {
		return nil
	}
	st.upStatus = resp.StatusCode
	if st.crash != nil {
		return p.crashResponse(st, resp)
	}
	plainJSON := isJSONType(resp.Header.Get("Content-Type")) && resp.Header.Get("Content-Encoding") == ""
	switch {
	case st.ri.Verb == "watch" && resp.StatusCode == http.StatusOK && plainJSON:
		ws := newWatchStream(p, st, resp.Body, resp.Request.Context())
		st.watch = ws
		resp.Body = ws
		lat := ms(time.Since(st.start))
		rec := p.requestRecord(st, resp.StatusCode, lat, nil)
		p.j.write(rec)
		p.stats.observe(st.ri.Verb, lat)
	case isWriteVerb(st.ri.Verb) && resp.StatusCode/100 == 2 && plainJSON:
		st.capture = &captureBody{rc: resp.Body, limit: maxRespCapture}
		resp.Body = st.capture
	}
	return nil
}

// crashResponse: the write reached the apiserver. On 2xx the answer is
// withheld from the operator, the pid killed, and the response held until
// the rule is released; then the downstream request is aborted (drop) or
// answered.
func (p *Proxy) crashResponse(st *reqState, resp *http.Response) error {
	r := st.crash
	if resp.StatusCode/100 != 2 {
		r.unconsume()
		st.crash = nil
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	st.object = parseObjRef(body)
	st.action, st.rule = "crashed", r
	r.crashed.Add(1)
	r.heldNow.Add(1)
	detail := map[string]any{
		"seq": st.seq, "verb": st.ri.Verb, "group": st.ri.Group, "resource": st.ri.Resource,
		"subresource": st.ri.Subresource, "namespace": st.ri.Namespace, "name": st.objName(),
		"status": resp.StatusCode, "object": st.object,
	}
	if pid := r.spec.SignalPID; pid > 0 {
		detail["signal_pid"] = pid
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			detail["killed"] = false
			detail["kill_error"] = err.Error()
		} else {
			detail["killed"] = true
		}
	}
	p.j.rule(r.id, "crashed", detail)
	ctx := resp.Request.Context()
	t0 := time.Now()
	select {
	case <-r.releaseCh:
	case <-ctx.Done():
	}
	r.heldNow.Add(-1)
	st.heldMs = ms(time.Since(t0))
	if ctx.Err() != nil {
		st.errMsg = "client went away; response withheld"
		return errClientGone
	}
	r.released.Add(1)
	r.mu.Lock()
	drop := r.drop
	r.mu.Unlock()
	if drop {
		st.errMsg = "response withheld; downstream request aborted"
		return errCrashDrop
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return nil
}

func (p *Proxy) errorHandler(w http.ResponseWriter, r *http.Request, err error) {
	st := stateOf(r)
	if errors.Is(err, errCrashDrop) {
		// resets the HTTP/2 stream, or closes the HTTP/1 connection
		panic(http.ErrAbortHandler)
	}
	if errors.Is(err, errClientGone) || r.Context().Err() != nil {
		if st != nil && st.errMsg == "" {
			st.errMsg = "client went away"
		}
		return
	}
	if st != nil {
		st.errMsg = "upstream: " + err.Error()
	}
	b, _ := json.Marshal(map[string]any{
		"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{}, "status": "Failure",
		"message": "interposer: upstream error: " + err.Error(), "reason": "ServiceUnavailable", "code": http.StatusBadGateway,
	})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadGateway)
	w.Write(b)
}

func parseObjRef(body []byte) *objRef {
	var h struct {
		Kind     string   `json:"kind"`
		Metadata metaHead `json:"metadata"`
	}
	if json.Unmarshal(body, &h) != nil {
		return nil
	}
	return &objRef{Kind: h.Kind, Name: h.Metadata.Name, Namespace: h.Metadata.Namespace, ResourceVersion: h.Metadata.ResourceVersion}
}

func (p *Proxy) requestRecord(st *reqState, status int, latency float64, duration *float64) *requestRecord {
	rec := &requestRecord{
		Type: "request", Seq: st.seq, T: nowT(st.start), Verb: st.ri.Verb, Method: st.ri.Method,
		Path: st.ri.Path, Query: st.ri.Query, Group: st.ri.Group, Version: st.ri.Version,
		Resource: st.ri.Resource, Subresource: st.ri.Subresource, Namespace: st.ri.Namespace,
		Name: st.objName(), DryRun: st.ri.DryRun, UserAgent: st.userAgent, Accept: st.accept,
		ContentType: st.contentType, Proto: st.req.Proto, Status: status, LatencyMs: latency, DurationMs: duration,
		Action: st.action, HeldMs: st.heldMs, Object: st.object, Error: st.errMsg,
	}
	if st.rule != nil {
		rec.Rule = st.rule.id
	}
	if st.upStatus != status {
		rec.UpstreamStatus = st.upStatus
	}
	return rec
}

// finish journals the request (deferred: runs on abort panics too).
func (p *Proxy) finish(st *reqState, rw *respWriter) {
	if st.watch != nil {
		st.watch.finish()
		p.stats.bytesOut.Add(rw.bytes)
		return
	}
	end := time.Now()
	dur := ms(end.Sub(st.start))
	lat := dur
	if !rw.hdrAt.IsZero() {
		lat = ms(rw.hdrAt.Sub(st.start))
	}
	if st.object == nil && st.capture != nil && st.capture.complete() {
		st.object = parseObjRef(st.capture.buf)
	}
	rec := p.requestRecord(st, rw.status, lat, &dur)
	rec.Bytes = rw.bytes
	p.j.write(rec)
	p.stats.observe(st.ri.Verb, lat)
	p.stats.bytesOut.Add(rw.bytes)
}

// writeStatus answers with a Kubernetes Status like the apiserver's.
func writeStatus(w http.ResponseWriter, code int, ri *reqInfo, name string) {
	qualified := ri.Resource
	if ri.Group != "" {
		qualified += "." + ri.Group
	}
	st := map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{}, "status": "Failure", "code": code}
	switch code {
	case http.StatusConflict:
		st["reason"] = "Conflict"
		st["message"] = fmt.Sprintf("Operation cannot be fulfilled on %s %q: the object has been modified; please apply your changes to the latest version and try again", qualified, name)
		st["details"] = map[string]any{"name": name, "group": ri.Group, "kind": ri.Resource}
	case http.StatusGatewayTimeout:
		st["reason"] = "Timeout"
		st["message"] = "Timeout: request did not complete within requested timeout - context deadline exceeded"
		st["details"] = map[string]any{}
	default:
		st["reason"] = "InternalError"
		st["message"] = "Internal error occurred: injected by the mo-chaos interposer"
		st["details"] = map[string]any{"causes": []any{map[string]any{"message": "injected by the mo-chaos interposer"}}}
	}
	b, _ := json.Marshal(st)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(code)
	w.Write(b)
}

// respWriter records status, time to headers and bytes; Flush and Unwrap
// keep ReverseProxy's flushing and upgrade handling working.
type respWriter struct {
	http.ResponseWriter
	status int
	hdrAt  time.Time
	bytes  int64
}

func (w *respWriter) WriteHeader(code int) {
	if code >= 200 && w.status == 0 || code == http.StatusSwitchingProtocols {
		w.status = code
		w.hdrAt = time.Now()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *respWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
		w.hdrAt = time.Now()
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *respWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *respWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// captureBody keeps the first `limit` bytes of a response while it streams.
type captureBody struct {
	rc    io.ReadCloser
	buf   []byte
	limit int
	over  bool
	eof   bool
}

func (c *captureBody) Read(p []byte) (int, error) {
	n, err := c.rc.Read(p)
	if n > 0 && !c.over {
		if len(c.buf)+n > c.limit {
			c.over, c.buf = true, nil
		} else {
			c.buf = append(c.buf, p[:n]...)
		}
	}
	if err == io.EOF {
		c.eof = true
	}
	return n, err
}

func (c *captureBody) Close() error { return c.rc.Close() }

func (c *captureBody) complete() bool { return c.eof && !c.over }
