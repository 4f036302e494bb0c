package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Rule actions.
const (
	actHold      = "hold"
	actFail      = "fail"
	actCrash     = "crash"
	actFreeze    = "freeze"
	actCoalesce  = "coalesce"
	actStaleList = "stale-list"
)

// Rule states.
const (
	stActive   = "active"
	stReleased = "released"
	stExpired  = "expired"
	stRemoved  = "removed"
)

// MatchSpec: every given field must match; an omitted one matches anything.
type MatchSpec struct {
	Verbs       []string    `json:"verbs,omitempty"`
	Group       *string     `json:"group,omitempty"`
	Resource    *string     `json:"resource,omitempty"`
	Subresource *string     `json:"subresource,omitempty"`
	Namespace   *string     `json:"namespace,omitempty"`
	Name        *string     `json:"name,omitempty"`
	DryRun      bool        `json:"dry_run,omitempty"`
	Fields      []FieldCond `json:"fields,omitempty"`
}

// RuleSpec is the JSON a client POSTs to /rules.
type RuleSpec struct {
	ID             string          `json:"id"`
	Action         string          `json:"action"`
	Match          MatchSpec       `json:"match"`
	Times          *int            `json:"times,omitempty"`
	TimeoutSeconds *float64        `json:"timeout_seconds,omitempty"`
	Status         json.RawMessage `json:"status,omitempty"`
	SignalPID      int             `json:"signal_pid,omitempty"`
	List           json.RawMessage `json:"list,omitempty"`
}

type Rule struct {
	spec     RuleSpec
	id       string
	action   string
	verbs    map[string]bool
	times    int
	timeout  time.Duration
	failCode int  // fail: 409, 500 or 504
	failWait bool // fail: hold timeout_seconds then 504
	list     []byte
	set      *RuleSet

	mu        sync.Mutex
	state     string
	used      int // consumed matches (times)
	drop      bool
	releaseCh chan struct{}
	timer     *time.Timer
	streams   map[*watchStream]struct{}

	matched  atomic.Int64
	heldNow  atomic.Int64
	released atomic.Int64
	failed   atomic.Int64
	crashed  atomic.Int64
}

func (r *Rule) isEventRule() bool { return r.action == actFreeze || r.action == actCoalesce }

var errBadRule = errors.New("bad rule")

func badRule(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errBadRule}, a...)...)
}

// parseRule decodes and validates a rule. Unknown fields are errors.
func parseRule(body []byte) (*Rule, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var spec RuleSpec
	if err := dec.Decode(&spec); err != nil {
		return nil, badRule("%v", err)
	}
	if dec.More() {
		return nil, badRule("trailing data after the rule object")
	}
	if spec.ID == "" {
		return nil, badRule("missing id")
	}
	r := &Rule{spec: spec, id: spec.ID, action: spec.Action, state: stActive,
		releaseCh: make(chan struct{}), drop: true, times: 1}
	m := &r.spec.Match
	allowed := map[string]bool{}
	switch spec.Action {
	case actHold:
		allowed = map[string]bool{"times": true, "timeout_seconds": true}
	case actFail:
		allowed = map[string]bool{"times": true, "timeout_seconds": true, "status": true}
	case actCrash:
		allowed = map[string]bool{"times": true, "timeout_seconds": true, "signal_pid": true}
	case actFreeze, actCoalesce:
		allowed = map[string]bool{"timeout_seconds": true}
	case actStaleList:
		allowed = map[string]bool{"times": true, "list": true}
	case "":
		return nil, badRule("missing action (hold, fail, crash, freeze, coalesce, stale-list)")
	default:
		return nil, badRule("unknown action %q (hold, fail, crash, freeze, coalesce, stale-list)", spec.Action)
	}
	given := map[string]bool{
		"times": spec.Times != nil, "timeout_seconds": spec.TimeoutSeconds != nil,
		"status": len(spec.Status) > 0, "signal_pid": spec.SignalPID != 0, "list": len(spec.List) > 0,
	}
	for _, k := range []string{"times", "timeout_seconds", "status", "signal_pid", "list"} {
		if given[k] && !allowed[k] {
			return nil, badRule("field %q does not apply to action %q", k, spec.Action)
		}
	}
	if spec.Times != nil {
		if *spec.Times < 1 {
			return nil, badRule("times must be >= 1")
		}
		r.times = *spec.Times
	}
	if spec.TimeoutSeconds != nil {
		t := *spec.TimeoutSeconds
		if t < 0 || math.IsNaN(t) || t > 1e6 {
			return nil, badRule("timeout_seconds must be >= 0")
		}
		r.timeout = time.Duration(t * float64(time.Second))
	}
	if spec.SignalPID < 0 {
		return nil, badRule("signal_pid must be > 0")
	}
	// verbs
	if len(m.Verbs) > 0 {
		r.verbs = map[string]bool{}
		for _, v := range m.Verbs {
			if !knownVerbs[v] {
				return nil, badRule("unknown verb %q", v)
			}
			r.verbs[v] = true
		}
	}
	switch spec.Action {
	case actFreeze, actCoalesce:
		if r.verbs != nil && (len(r.verbs) != 1 || !r.verbs["watch"]) {
			return nil, badRule("%s acts on watch events: verbs must be omitted or [\"watch\"]", spec.Action)
		}
		if m.Subresource != nil && *m.Subresource != "" {
			return nil, badRule("%s: watch streams have no subresource", spec.Action)
		}
		r.verbs = map[string]bool{"watch": true}
	case actStaleList:
		if r.verbs != nil && (len(r.verbs) != 1 || !r.verbs["list"]) {
			return nil, badRule("stale-list acts on lists: verbs must be omitted or [\"list\"]")
		}
		r.verbs = map[string]bool{"list": true}
		if len(spec.List) == 0 {
			return nil, badRule("stale-list needs a list")
		}
		var l struct {
			Kind     string `json:"kind"`
			Metadata struct {
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(spec.List, &l); err != nil {
			return nil, badRule("list: %v", err)
		}
		if l.Items == nil {
			l.Items = []json.RawMessage{}
		}
		r.list = bytes.TrimSpace(spec.List)
	default:
		if r.verbs == nil {
			r.verbs = map[string]bool{"create": true, "update": true, "patch": true, "delete": true, "deletecollection": true}
		}
	}
	if spec.Action == actFail {
		r.failCode = 409
		if len(spec.Status) > 0 {
			var n int
			var s string
			switch {
			case json.Unmarshal(spec.Status, &n) == nil:
				switch n {
				case 409, 500:
					r.failCode = n
				case 504:
					r.failCode, r.failWait = 504, true
				default:
					return nil, badRule("status must be 409, 500, 504 or \"timeout\"")
				}
			case json.Unmarshal(spec.Status, &s) == nil:
				switch s {
				case "timeout":
					r.failCode, r.failWait = 504, true
				case "conflict":
					r.failCode = 409
				case "internal", "internal-error":
					r.failCode = 500
				default:
					return nil, badRule("status must be 409, 500, 504 or \"timeout\"")
				}
			default:
				return nil, badRule("status must be 409, 500, 504 or \"timeout\"")
			}
		}
		if spec.TimeoutSeconds != nil && !r.failWait {
			return nil, badRule("timeout_seconds on a fail rule applies only to status 504/\"timeout\"")
		}
	}
	for i := range m.Fields {
		if err := m.Fields[i].compile(); err != nil {
			return nil, badRule("%v", err)
		}
	}
	return r, nil
}

// matchRequest: the static part of the match (no body).
func (r *Rule) matchRequest(ri *reqInfo) bool {
	if !ri.IsResource || !r.verbs[ri.Verb] {
		return false
	}
	m := &r.spec.Match
	if m.DryRun != ri.DryRun {
		return false
	}
	if m.Resource == nil {
		if housekeepingResources[ri.Resource] {
			return false
		}
	} else if *m.Resource != ri.Resource {
		return false
	}
	if m.Group != nil && *m.Group != ri.Group {
		return false
	}
	if m.Subresource != nil && *m.Subresource != ri.Subresource {
		return false
	}
	if m.Namespace != nil && *m.Namespace != ri.Namespace {
		return false
	}
	if m.Name != nil && *m.Name != ri.Name {
		return false
	}
	return true
}

// matchStream: can the rule apply to events of this watch stream at all?
func (r *Rule) matchStream(ri *reqInfo) bool {
	m := &r.spec.Match
	if m.DryRun || !ri.IsResource {
		return false
	}
	if m.Resource == nil {
		if housekeepingResources[ri.Resource] {
			return false
		}
	} else if *m.Resource != ri.Resource {
		return false
	}
	if m.Group != nil && *m.Group != ri.Group {
		return false
	}
	if m.Namespace != nil && ri.Namespace != "" && *m.Namespace != ri.Namespace {
		return false
	}
	return true
}

// matchEvent: the per-event part (namespace, name, fields of the object).
func (r *Rule) matchEvent(s *watchStream, ev *watchEvent) bool {
	m := &r.spec.Match
	if m.Namespace != nil {
		ns := ev.namespace
		if ns == "" {
			ns = s.ri.Namespace
		}
		if *m.Namespace != ns {
			return false
		}
	}
	if m.Name != nil && *m.Name != ev.name {
		return false
	}
	if len(m.Fields) > 0 {
		obj := ev.objectMap()
		if obj == nil {
			return false
		}
		for i := range m.Fields {
			if !m.Fields[i].eval(obj) {
				return false
			}
		}
	}
	return true
}

func (r *Rule) matchFields(obj any) bool {
	for i := range r.spec.Match.Fields {
		if !r.spec.Match.Fields[i].eval(obj) {
			return false
		}
	}
	return true
}

func (r *Rule) startTimerLocked() {
	if r.timer == nil && r.timeout > 0 && r.action != actFail && r.action != actStaleList {
		r.timer = time.AfterFunc(r.timeout, func() { r.set.release(r, stExpired, true) })
	}
}

// consume takes one of the rule's `times`; false when spent or released.
func (r *Rule) consume() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state != stActive || r.used >= r.times {
		return false
	}
	r.used++
	r.startTimerLocked()
	r.matched.Add(1)
	return true
}

// unconsume gives back a crash rule's reservation when the write failed.
func (r *Rule) unconsume() {
	r.mu.Lock()
	if r.used > 0 {
		r.used--
	}
	r.mu.Unlock()
}

// attachStream registers a watch stream as held by this rule.
func (r *Rule) attachStream(s *watchStream) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state != stActive {
		return false
	}
	if r.streams == nil {
		r.streams = map[*watchStream]struct{}{}
	}
	r.streams[s] = struct{}{}
	r.startTimerLocked()
	return true
}

func (r *Rule) detachStream(s *watchStream) {
	r.mu.Lock()
	delete(r.streams, s)
	r.mu.Unlock()
}

// RuleSet is the ordered list of rules. Matching reads an immutable snapshot
// of the active rules without taking a lock.
type RuleSet struct {
	j      *Journal
	mu     sync.Mutex
	rules  []*Rule
	active atomic.Pointer[[]*Rule]
}

func newRuleSet(j *Journal) *RuleSet {
	rs := &RuleSet{j: j}
	empty := []*Rule{}
	rs.active.Store(&empty)
	return rs
}

func (rs *RuleSet) refreshLocked() {
	act := make([]*Rule, 0, len(rs.rules))
	for _, r := range rs.rules {
		r.mu.Lock()
		if r.state == stActive {
			act = append(act, r)
		}
		r.mu.Unlock()
	}
	rs.active.Store(&act)
}

func (rs *RuleSet) refresh() {
	rs.mu.Lock()
	rs.refreshLocked()
	rs.mu.Unlock()
}

var errDuplicate = errors.New("duplicate rule id")

func (rs *RuleSet) add(r *Rule) error {
	rs.mu.Lock()
	for _, o := range rs.rules {
		if o.id == r.id {
			rs.mu.Unlock()
			return fmt.Errorf("%w: %q already exists (DELETE it first)", errDuplicate, r.id)
		}
	}
	r.set = rs
	rs.rules = append(rs.rules, r)
	rs.refreshLocked()
	rs.mu.Unlock()
	spec := r.spec
	spec.List = nil
	rs.j.rule(r.id, "added", map[string]any{"spec": spec})
	return nil
}

func (rs *RuleSet) get(id string) *Rule {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, r := range rs.rules {
		if r.id == id {
			return r
		}
	}
	return nil
}

func (rs *RuleSet) all() []*Rule {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return append([]*Rule(nil), rs.rules...)
}

// release releases everything the rule holds now and disables it.
// what: released, expired or removed. Returns false if it was not active.
func (rs *RuleSet) release(r *Rule, what string, drop bool) bool {
	r.mu.Lock()
	if r.state != stActive {
		r.mu.Unlock()
		return false
	}
	r.state = what
	r.drop = drop
	heldNow := r.heldNow.Load()
	close(r.releaseCh)
	streams := r.streams
	r.streams = nil
	if r.timer != nil {
		r.timer.Stop()
	}
	r.mu.Unlock()
	rs.refresh()
	events := 0
	for s := range streams {
		events += s.release(r)
	}
	detail := map[string]any{"held": heldNow}
	if r.action == actCrash {
		detail["drop"] = drop
	}
	if r.isEventRule() {
		detail["streams"] = len(streams)
		detail["events"] = events
	}
	rs.j.rule(r.id, what, detail)
	return true
}

func (rs *RuleSet) remove(id string) bool {
	r := rs.get(id)
	if r == nil {
		return false
	}
	if !rs.release(r, stRemoved, true) {
		rs.j.rule(r.id, stRemoved, map[string]any{"held": 0})
	}
	rs.mu.Lock()
	for i, o := range rs.rules {
		if o == r {
			rs.rules = append(rs.rules[:i:i], rs.rules[i+1:]...)
			break
		}
	}
	rs.refreshLocked()
	rs.mu.Unlock()
	return true
}

func (rs *RuleSet) releaseAll() []string {
	var ids []string
	for _, r := range rs.all() {
		if rs.release(r, stReleased, true) {
			ids = append(ids, r.id)
		}
	}
	return ids
}

// matchRequest returns the first active request rule that matches and
// takes one of its `times`. body is called (at most once per rule with
// fields) to get the request body as a JSON value; nil = no usable body.
func (rs *RuleSet) matchRequest(ri *reqInfo, body func() any) *Rule {
	for _, r := range *rs.active.Load() {
		if r.isEventRule() || !r.matchRequest(ri) {
			continue
		}
		if len(r.spec.Match.Fields) > 0 {
			obj := body()
			if obj == nil || !r.matchFields(obj) {
				continue
			}
		}
		if r.consume() {
			return r
		}
	}
	return nil
}

// matchEvent returns the first active event rule that matches the event and
// attaches the stream to it. Called with s.mu held.
func (rs *RuleSet) matchEvent(s *watchStream, ev *watchEvent) *Rule {
	for _, r := range *rs.active.Load() {
		if !r.isEventRule() || !r.matchStream(&s.ri) || !r.matchEvent(s, ev) {
			continue
		}
		if r.attachStream(s) {
			return r
		}
	}
	return nil
}

type ruleView struct {
	RuleSpec
	State     string `json:"state"`
	Remaining *int   `json:"remaining,omitempty"`
	Matched   int64  `json:"matched"`
	HeldNow   int64  `json:"held_now"`
	Released  int64  `json:"released"`
	Failed    int64  `json:"failed"`
	Crashed   int64  `json:"crashed"`
}

func (r *Rule) view() ruleView {
	r.mu.Lock()
	v := ruleView{RuleSpec: r.spec, State: r.state}
	if !r.isEventRule() {
		rem := r.times - r.used
		v.Remaining = &rem
	}
	r.mu.Unlock()
	v.List = nil
	v.Matched = r.matched.Load()
	v.HeldNow = r.heldNow.Load()
	v.Released = r.released.Load()
	v.Failed = r.failed.Load()
	v.Crashed = r.crashed.Load()
	return v
}
