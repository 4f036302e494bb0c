package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
)

// The control interface (HTTP + JSON on 127.0.0.1) mo-chaos drives the double with:
//
//	GET  /healthz                                  200 serving, 503 + reason otherwise
//	GET  /v1/clusters                              every namespace: address, state
//	GET  /v1/namespaces/{ns}/stores                HAKeeper's cluster details + knobs
//	GET  /v1/namespaces/{ns}/pods/{pod}            one CN: identity, addresses, knobs
//	GET|PUT /v1/namespaces/{ns}/pods/{pod}/sessions   {"count", "account", "fromProxy"}
//	GET|PUT /v1/namespaces/{ns}/pods/{pod}/replicas   {"count"}
//	GET|PUT /v1/namespaces/{ns}/pods/{pod}/pipelines  {"count"}
//	GET|PUT /v1/namespaces/{ns}/pods/{pod}/lock       {"bound", "remainTxns"} (+ status)
//	GET  /v1/namespaces/{ns}/faults                every fault standing: component, how, since
//	PUT  /v1/namespaces/{ns}/faults/{component}    {"mode": "down"|"up", "how": "refuse"|"hang"}
//
// A fault's component is hakeeper, lockservice or query/<pod> (faults.go says what each is
// and how the operator sees it down); "how" defaults to refuse. Up is idempotent: it
// answers 200 whether or not the component was down, and when the namespace is gone.
//
// Errors are {"error": "..."} with 400 (bad input) or 404 (unknown namespace or pod, a
// component with nothing running to take down).

type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func notFound(format string, args ...any) error {
	return &httpError{http.StatusNotFound, fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) error {
	return &httpError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	var he *httpError
	if errors.As(err, &he) {
		code = he.code
	}
	writeJSON(w, code, map[string]string{"error": err.Error()})
}

func (d *double) controlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		body, err := d.health()
		if err != nil {
			body["error"] = err.Error()
			writeJSON(w, http.StatusServiceUnavailable, body)
			return
		}
		body["status"] = "ok"
		writeJSON(w, http.StatusOK, body)
	})
	mux.HandleFunc("GET /v1/clusters", func(w http.ResponseWriter, _ *http.Request) {
		d.mu.Lock()
		out := map[string]any{}
		for ns, ip := range d.leases {
			state := "starting"
			if _, ok := d.clusters[ns]; ok {
				state = "running"
			}
			entry := map[string]any{"address": ip, "state": state}
			if e, ok := d.failed[ns]; ok {
				entry["state"], entry["error"] = "failed", e
			}
			out[ns] = entry
		}
		d.mu.Unlock()
		writeJSON(w, http.StatusOK, out)
	})
	mux.HandleFunc("GET /v1/namespaces/{ns}/stores", func(w http.ResponseWriter, r *http.Request) {
		c, err := d.need(r.PathValue("ns"))
		if err != nil {
			writeErr(w, err)
			return
		}
		details, state, err := c.clusterDetails()
		if err != nil {
			writeErr(w, fmt.Errorf("HAKeeper: %w", err))
			return
		}
		cns := summarizeCNs(details.CNStores, c.podOf)
		tns := make([]map[string]any, 0, len(details.TNStores))
		for _, t := range details.TNStores {
			tns = append(tns, map[string]any{
				"uuid": t.UUID, "pod": c.podOf(t.UUID), "state": t.State.String(),
				"lockServiceAddress": t.LockServiceAddress, "serviceAddress": t.ServiceAddress,
			})
		}
		logs := make([]map[string]any, 0, len(details.LogStores))
		for _, l := range details.LogStores {
			logs = append(logs, map[string]any{
				"uuid": l.UUID, "state": l.State.String(), "serviceAddress": l.ServiceAddress,
			})
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"namespace": c.namespace, "address": c.ip, "hakeeperState": state.String(),
			"cnStores": cns, "tnStores": tns, "logStores": logs,
		})
	})
	mux.HandleFunc("GET /v1/namespaces/{ns}/pods/{pod}", func(w http.ResponseWriter, r *http.Request) {
		d.podEndpoint(w, r, "", nil)
	})
	for _, knob := range []string{"sessions", "replicas", "pipelines", "lock"} {
		knob := knob
		handler := func(w http.ResponseWriter, r *http.Request) {
			var body []byte
			if r.Method == http.MethodPut {
				b, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
				if err != nil {
					writeErr(w, badRequest("read body: %v", err))
					return
				}
				body = b
			}
			d.podEndpoint(w, r, knob, body)
		}
		mux.HandleFunc("GET /v1/namespaces/{ns}/pods/{pod}/"+knob, handler)
		mux.HandleFunc("PUT /v1/namespaces/{ns}/pods/{pod}/"+knob, handler)
	}
	mux.HandleFunc("GET /v1/namespaces/{ns}/faults", func(w http.ResponseWriter, r *http.Request) {
		c, err := d.need(r.PathValue("ns"))
		if err != nil {
			writeErr(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"namespace": c.namespace, "faults": c.faultList()})
	})
	mux.HandleFunc("PUT /v1/namespaces/{ns}/faults/{component...}", d.faultEndpoint)
	return mux
}

// faultBody is the body of a fault PUT.
type faultBody struct {
	Mode string `json:"mode"`
	How  string `json:"how"`
}

// faultEndpoint takes a component down or brings it up and answers the fault.
func (d *double) faultEndpoint(w http.ResponseWriter, r *http.Request) {
	ns, component := r.PathValue("ns"), r.PathValue("component")
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<16))
	dec.DisallowUnknownFields()
	var in faultBody
	if err := dec.Decode(&in); err != nil {
		writeErr(w, badRequest("fault: %v", err))
		return
	}
	if err := checkComponent(component); err != nil {
		writeErr(w, err)
		return
	}
	switch in.Mode {
	case "down":
		if in.How == "" {
			in.How = faultRefuse
		}
		c, err := d.need(ns)
		if err != nil {
			writeErr(w, err)
			return
		}
		view, err := c.setFault(component, in.How)
		if err != nil {
			writeErr(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"mode": "down", "fault": view})
	case "up":
		c, ok := d.cluster(ns)
		view := faultView{Component: component}
		if ok {
			var err error
			if view, err = c.clearFault(component); err != nil {
				writeErr(w, err)
				return
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"mode": "up", "fault": view})
	default:
		writeErr(w, badRequest(`fault: give {"mode": "down"|"up"}, got %q`, in.Mode))
	}
}

func (d *double) need(ns string) (*moCluster, error) {
	c, ok := d.cluster(ns)
	if !ok {
		d.mu.Lock()
		known := make([]string, 0, len(d.clusters))
		for k := range d.clusters {
			known = append(known, k)
		}
		d.mu.Unlock()
		sort.Strings(known)
		return nil, notFound("no MatrixOne cluster in namespace %q (namespaces with a LogSet: %s)",
			ns, strings.Join(known, ", "))
	}
	return c, nil
}

// countBody is the body of the replicas and pipelines knobs.
type countBody struct {
	Count *int64 `json:"count"`
}

// podEndpoint reads (body nil) or sets one knob of a CN pod and answers its state.
func (d *double) podEndpoint(w http.ResponseWriter, r *http.Request, knob string, body []byte) {
	ns, pod := r.PathValue("ns"), r.PathValue("pod")
	c, err := d.need(ns)
	if err != nil {
		writeErr(w, err)
		return
	}
	var setErr error
	var logged map[string]any
	found := c.cnByPod(pod, func(s *cnStore) {
		if body == nil {
			return
		}
		logged, setErr = applyKnob(s, knob, body)
	})
	if !found {
		writeErr(w, notFound("pod %s/%s runs no CN store (not a Running CN pod of this namespace)", ns, pod))
		return
	}
	if setErr != nil {
		writeErr(w, setErr)
		return
	}
	var out map[string]any
	c.cnByPod(pod, func(s *cnStore) {
		s.lock.settle()
		out = map[string]any{
			"namespace": ns, "pod": pod, "uuid": s.uuid,
			"queryAddress": s.queryAddr, "sqlAddress": s.sqlAddr,
			"lockServiceAddress": s.lockAddr, "pipelineServiceAddress": s.pipelineAddr,
			"sessions": s.knobs.Sessions, "replicas": s.knobs.Replicas,
			"pipelines": s.knobs.Pipelines, "lock": s.lock,
		}
		if logged != nil {
			logged["uuid"], logged["pod"] = s.uuid, pod
		}
	})
	if logged != nil {
		d.events.emit(ns, svcDouble, "set"+strings.ToUpper(knob[:1])+knob[1:], logged)
	}
	if knob != "" {
		writeJSON(w, http.StatusOK, map[string]any{knob: out[knob], "pod": pod, "uuid": out["uuid"]})
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// applyKnob sets one knob from a JSON body (unknown fields are an error).
func applyKnob(s *cnStore, knob string, body []byte) (map[string]any, error) {
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	switch knob {
	case "sessions":
		spec := s.knobs.Sessions
		var in struct {
			Count     *int    `json:"count"`
			Account   *string `json:"account"`
			FromProxy *bool   `json:"fromProxy"`
		}
		if err := dec.Decode(&in); err != nil {
			return nil, badRequest("sessions: %v", err)
		}
		if in.Count == nil || *in.Count < 0 {
			return nil, badRequest(`sessions: give {"count": n >= 0}`)
		}
		spec.Count = *in.Count
		if in.Account != nil {
			spec.Account = *in.Account
		}
		if in.FromProxy != nil {
			spec.FromProxy = *in.FromProxy
		}
		s.knobs.Sessions = spec
		return map[string]any{"count": spec.Count, "account": spec.Account, "fromProxy": spec.FromProxy}, nil
	case "replicas", "pipelines":
		var in countBody
		if err := dec.Decode(&in); err != nil {
			return nil, badRequest("%s: %v", knob, err)
		}
		if in.Count == nil || *in.Count < 0 {
			return nil, badRequest(`%s: give {"count": n >= 0}`, knob)
		}
		if knob == "replicas" {
			s.knobs.Replicas = *in.Count
		} else {
			s.knobs.Pipelines = *in.Count
		}
		return map[string]any{"count": *in.Count}, nil
	case "lock":
		var in struct {
			Bound      *bool `json:"bound"`
			RemainTxns *int  `json:"remainTxns"`
		}
		if err := dec.Decode(&in); err != nil {
			return nil, badRequest("lock: %v", err)
		}
		if in.Bound == nil && in.RemainTxns == nil {
			return nil, badRequest(`lock: give {"bound": bool} and/or {"remainTxns": n >= 0}`)
		}
		if in.RemainTxns != nil && *in.RemainTxns < 0 {
			return nil, badRequest("lock: remainTxns must be >= 0")
		}
		if in.Bound != nil {
			s.lock.Bound = *in.Bound
			if !*in.Bound {
				s.lock.Status = lockNormal
			}
		}
		if in.RemainTxns != nil {
			s.lock.RemainTxns = *in.RemainTxns
		}
		s.lock.settle()
		return map[string]any{"bound": s.lock.Bound, "remainTxns": s.lock.RemainTxns, "status": s.lock.Status}, nil
	}
	return nil, badRequest("unknown knob %q", knob)
}
