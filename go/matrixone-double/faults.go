package main

import (
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Faults a scenario injects into a namespace's MatrixOne: one of the servers the operator
// dials taken off the network, and put back on the same address.
//
// Components, as the control interface names them:
//
//	hakeeper      the log service as the operator reaches it: the proxy on <ip>:32001
//	              (HAKeeper itself keeps running, and the stores keep heartbeating to it
//	              through their own clients: only the operator's path is cut)
//	lockservice   every TN's lock service (<ip>:6003)
//	query/<pod>   one CN's query service (its store's query address)
//
// How the operator sees a component that is down:
//
//	refuse  nothing listens: a connection is refused at once (RST on loopback), as when the
//	        component's process is gone; the operator's RPCs fail fast and it retries.
//	hang    a listener nobody accepts on: the kernel completes the handshake and buffers
//	        what is sent, nothing ever answers, as when the process is frozen or a network
//	        partition drops its answers; every RPC runs into the operator's own timeout:
//	        its HAKeeper client's discovery (1 s, matrixone pkg/logservice/shardinfo.go:49),
//	        which each call starts with once its connection was cut; a lock or query
//	        call's (10 s, mocli.DefaultRPCTimeout).
//
// Either way every connection open when the fault lands is cut (the server closes its
// sessions), so a client cannot keep using one from before. Up starts the real server
// again on the same address; connections held by a hang are reset then.
const (
	faultRefuse = "refuse"
	faultHang   = "hang"

	componentHAKeeper    = "hakeeper"
	componentLockService = "lockservice"
	componentQuery       = "query/"
)

// rebindTimeout bounds how long a fault waits for an address to be free again right after
// the previous listener on it closed.
const rebindTimeout = 5 * time.Second

// server is what an endpoint runs while it is up (the HAKeeper proxy, a lock server, a
// CN's query service).
type server interface{ close() }

// endpoint is one server of the double the operator dials, which a fault takes off the
// network and puts back on the same address.
type endpoint struct {
	addr  string
	start func() (server, error)

	mu     sync.Mutex
	srv    server       // the running server (nil while down)
	hole   net.Listener // bound and never accepted on (while down with hang)
	how    string       // "" up, else the fault's how
	closed bool
}

// newEndpoint starts an endpoint at addr: serving (how ""), or already down (a fault on
// its component stood when it was made).
// A new endpoint binds once, as the double always has (its caller checked the port).
func newEndpoint(addr, how string, start func() (server, error)) (*endpoint, error) {
	e := &endpoint{addr: addr, start: start}
	if err := e.apply(how, false); err != nil {
		return nil, err
	}
	return e, nil
}

// set puts the endpoint in state how ("" serving, faultRefuse, faultHang), waiting for its
// address to be released by the listener it just closed; a closed endpoint stays closed.
func (e *endpoint) set(how string) error {
	return e.apply(how, true)
}

func (e *endpoint) apply(how string, rebind bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed || (how == e.how && (how != "" || e.srv != nil)) {
		return nil
	}
	e.takeDown()
	e.how = how
	switch how {
	case "":
		srv, err := bindWith(rebind, e.start)
		if err != nil {
			return err
		}
		e.srv = srv
	case faultHang:
		ln, err := bindWith(rebind, func() (net.Listener, error) { return net.Listen("tcp", e.addr) })
		if err != nil {
			return err
		}
		e.hole = ln
	}
	return nil
}

func (e *endpoint) takeDown() {
	if e.srv != nil {
		e.srv.close()
		e.srv = nil
	}
	if e.hole != nil {
		_ = e.hole.Close()
		e.hole = nil
	}
}

// close stops whatever the endpoint runs, for good (its store or cluster stops).
func (e *endpoint) close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	e.takeDown()
}

// bindWith runs bind once, or with rebind until it stops failing on a busy address (the
// listener closed a moment ago may not have released it yet) or rebindTimeout passes.
func bindWith[T any](rebind bool, bind func() (T, error)) (T, error) {
	if !rebind {
		return bind()
	}
	deadline := time.Now().Add(rebindTimeout)
	for {
		v, err := bind()
		if err == nil || !errors.Is(err, syscall.EADDRINUSE) || time.Now().After(deadline) {
			return v, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// activeFault is a fault that stands on one component of a namespace.
type activeFault struct {
	How   string    `json:"how"`
	Since time.Time `json:"since"`
}

// faultView is a fault as the control interface shows it.
type faultView struct {
	Component string    `json:"component"`
	How       string    `json:"how"`
	Since     time.Time `json:"since"`
	Addresses []string  `json:"addresses"`
}

// checkComponent refuses a component name the double does not know.
func checkComponent(component string) error {
	switch {
	case component == componentHAKeeper, component == componentLockService:
		return nil
	case strings.HasPrefix(component, componentQuery) && len(component) > len(componentQuery):
		return nil
	}
	return badRequest("unknown component %q: give hakeeper, lockservice or query/<pod>", component)
}

// endpointsLocked are the running endpoints of a component (c.mu held).
func (c *moCluster) endpointsLocked(component string) []*endpoint {
	switch {
	case component == componentHAKeeper:
		return []*endpoint{c.proxy}
	case component == componentLockService:
		out := make([]*endpoint, 0, len(c.tns))
		for _, t := range c.tns {
			out = append(out, t.lock)
		}
		return out
	case strings.HasPrefix(component, componentQuery):
		if s, ok := c.cns[strings.TrimPrefix(component, componentQuery)]; ok {
			return []*endpoint{s.query}
		}
	}
	return nil
}

// faultOnLocked is how a fault on component stands ("" none; c.mu held): what a store
// started meanwhile starts as.
func (c *moCluster) faultOnLocked(component string) string {
	return c.faults[component].How
}

func addresses(eps []*endpoint) []string {
	out := make([]string, 0, len(eps))
	for _, e := range eps {
		out = append(out, e.addr)
	}
	sort.Strings(out)
	return out
}

// setFault takes component down (how: refuse or hang) until clearFault. A component
// without a running server (no TN, no CN store for the pod) is not found: the fault
// would change nothing the operator sees.
func (c *moCluster) setFault(component, how string) (faultView, error) {
	if err := checkComponent(component); err != nil {
		return faultView{}, err
	}
	if how != faultRefuse && how != faultHang {
		return faultView{}, badRequest("how %q: give %q or %q", how, faultRefuse, faultHang)
	}
	c.faultMu.Lock()
	defer c.faultMu.Unlock()
	c.mu.Lock()
	eps := c.endpointsLocked(component)
	if len(eps) == 0 {
		c.mu.Unlock()
		return faultView{}, notFound("namespace %s runs no %s", c.namespace, describeComponent(component))
	}
	f, ok := c.faults[component]
	if !ok || f.How != how {
		f = activeFault{How: how, Since: time.Now().UTC()}
		c.faults[component] = f
	}
	c.mu.Unlock()
	view := faultView{Component: component, How: how, Since: f.Since, Addresses: addresses(eps)}
	for _, e := range eps {
		if err := e.set(how); err != nil {
			return view, fmt.Errorf("%s at %s: %w", component, e.addr, err)
		}
	}
	c.events.emit(c.namespace, svcDouble, "faultDown", map[string]any{
		"component": component, "how": how, "addresses": view.Addresses})
	return view, nil
}

// clearFault brings component back (its servers start again on their addresses); a
// component that was not down is left as it is.
func (c *moCluster) clearFault(component string) (faultView, error) {
	if err := checkComponent(component); err != nil {
		return faultView{}, err
	}
	c.faultMu.Lock()
	defer c.faultMu.Unlock()
	c.mu.Lock()
	f, was := c.faults[component]
	delete(c.faults, component)
	eps := c.endpointsLocked(component)
	c.mu.Unlock()
	view := faultView{Component: component, Addresses: addresses(eps)}
	if !was {
		return view, nil
	}
	for _, e := range eps {
		if err := e.set(""); err != nil {
			return view, fmt.Errorf("%s at %s: %w", component, e.addr, err)
		}
	}
	c.events.emit(c.namespace, svcDouble, "faultUp", map[string]any{
		"component": component, "how": f.How, "addresses": view.Addresses,
		"downMs": float64(time.Since(f.Since).Microseconds()) / 1000})
	return view, nil
}

// faultList is every fault standing in the namespace, by component.
func (c *moCluster) faultList() []faultView {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]faultView, 0, len(c.faults))
	for comp, f := range c.faults {
		out = append(out, faultView{
			Component: comp, How: f.How, Since: f.Since,
			Addresses: addresses(c.endpointsLocked(comp)),
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Component < out[j].Component })
	return out
}

func describeComponent(component string) string {
	switch {
	case component == componentHAKeeper:
		return "HAKeeper"
	case component == componentLockService:
		return "TN lock service (no Running DN pod)"
	default:
		return fmt.Sprintf("CN store for pod %s (not a Running CN pod of the namespace)",
			strings.TrimPrefix(component, componentQuery))
	}
}
