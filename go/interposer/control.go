package main

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The control API: plain HTTP, JSON bodies.
func (a *App) controlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "ok")
	})
	mux.HandleFunc("POST /rules", a.postRule)
	mux.HandleFunc("GET /rules", func(w http.ResponseWriter, r *http.Request) {
		views := []ruleView{}
		for _, rule := range a.rules.all() {
			views = append(views, rule.view())
		}
		writeJSON(w, http.StatusOK, map[string]any{"rules": views})
	})
	mux.HandleFunc("GET /rules/{id}", func(w http.ResponseWriter, r *http.Request) {
		rule := a.rules.get(r.PathValue("id"))
		if rule == nil {
			writeErr(w, http.StatusNotFound, "no rule "+strconv.Quote(r.PathValue("id")))
			return
		}
		writeJSON(w, http.StatusOK, rule.view())
	})
	mux.HandleFunc("POST /rules/{id}/release", a.releaseRule)
	mux.HandleFunc("DELETE /rules/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if !a.rules.remove(id) {
			writeErr(w, http.StatusNotFound, "no rule "+strconv.Quote(id))
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"removed": id})
	})
	mux.HandleFunc("POST /release-all", func(w http.ResponseWriter, r *http.Request) {
		ids := a.rules.releaseAll()
		if ids == nil {
			ids = []string{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"released": ids})
	})
	mux.HandleFunc("GET /wait", a.wait)
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		v := a.stats.view()
		v.WatchesOpen = a.proxy.watchesOpen.Load()
		v.InFlight = a.proxy.inflight.Load()
		v.Seq = a.j.LastSeq()
		writeJSON(w, http.StatusOK, v)
	})
	return mux
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeErr(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

func writeErr(w http.ResponseWriter, code int, msg string) {
	msg = strings.ReplaceAll(msg, "\n", " ")
	b, _ := json.Marshal(map[string]string{"error": msg})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

func (a *App) postRule(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		writeErr(w, http.StatusBadRequest, err.Error())
		return
	}
	rule, err := parseRule(body)
	if err != nil {
		writeErr(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := a.rules.add(rule); err != nil {
		code := http.StatusBadRequest
		if errors.Is(err, errDuplicate) {
			code = http.StatusConflict
		}
		writeErr(w, code, err.Error())
		return
	}
	writeJSON(w, http.StatusCreated, rule.view())
}

func (a *App) releaseRule(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	rule := a.rules.get(id)
	if rule == nil {
		writeErr(w, http.StatusNotFound, "no rule "+strconv.Quote(id))
		return
	}
	var opts struct {
		Drop *bool `json:"drop"`
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if len(strings.TrimSpace(string(body))) > 0 {
		dec := json.NewDecoder(strings.NewReader(string(body)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&opts); err != nil {
			writeErr(w, http.StatusBadRequest, "release body: "+err.Error())
			return
		}
	}
	drop := true
	if opts.Drop != nil {
		drop = *opts.Drop
	}
	a.rules.release(rule, stReleased, drop)
	writeJSON(w, http.StatusOK, rule.view())
}

// wait long-polls for rule records (added, matched, crashed, released,
// expired, removed) with seq > since.
func (a *App) wait(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var since int64
	if s := q.Get("since"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			writeErr(w, http.StatusBadRequest, "since: "+err.Error())
			return
		}
		since = n
	}
	timeout := 30 * time.Second
	if s := q.Get("timeout"); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f < 0 {
			writeErr(w, http.StatusBadRequest, "timeout: want seconds >= 0")
			return
		}
		if f > 600 {
			f = 600
		}
		timeout = time.Duration(f * float64(time.Second))
	}
	var rule string
	if s := q.Get("rule"); s != "" {
		rule = s
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		recs, wakeCh := a.j.since(since)
		if rule != "" && len(recs) > 0 {
			kept := recs[:0]
			for _, rec := range recs {
				if rec.Rule == rule {
					kept = append(kept, rec)
				}
			}
			if len(kept) == 0 {
				since = recs[len(recs)-1].Seq
				continue
			}
			recs = kept
		}
		if len(recs) > 0 {
			writeJSON(w, http.StatusOK, map[string]any{"seq": recs[len(recs)-1].Seq, "records": recs})
			return
		}
		select {
		case <-wakeCh:
		case <-deadline.C:
			writeJSON(w, http.StatusOK, map[string]any{"seq": since, "records": []ruleRecord{}})
			return
		case <-r.Context().Done():
			return
		}
	}
}
