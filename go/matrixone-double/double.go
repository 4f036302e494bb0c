package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// Pod labels set by the operator's CloneSet / StatefulSet templates
// (matrixone-operator pkg/controllers/common/consts.go; cnstore/controller.go:680 filters
// CN pods on component=CNSet).
const (
	componentLabel = "matrixorigin.io/component"
	instanceLabel  = "matrixorigin.io/instance"
	podSelector    = componentLabel + " in (CNSet,DNSet)"
	logSetsPath    = "/apis/core.matrixorigin.io/v1alpha1/logsets"
	podsPath       = "/api/v1/pods"
	resyncInterval = 5 * time.Second
)

type podObj struct {
	Metadata objectMeta `json:"metadata"`
	Spec     struct {
		Subdomain  string `json:"subdomain"`
		Containers []struct {
			Env []struct {
				Name  string `json:"name"`
				Value string `json:"value"`
			} `json:"env"`
		} `json:"containers"`
	} `json:"spec"`
	Status struct {
		Phase string `json:"phase"`
	} `json:"status"`
}

func (p *podObj) env(name string) (string, bool) {
	for _, c := range p.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == name {
				return e.Value, true
			}
		}
	}
	return "", false
}

func (p *podObj) running() bool {
	return p.Status.Phase == "Running" && p.Metadata.DeletionTimestamp == nil
}

type logSetObj struct {
	Metadata objectMeta `json:"metadata"`
	Status   struct {
		Discovery *struct {
			Address string `json:"address"`
			Port    int    `json:"port"`
		} `json:"discovery"`
	} `json:"status"`
}

// discoveryNames are the names the operator may dial for this LogSet: status.discovery
// when the logset controller has set it, and the name it sets there
// (matrixone-operator pkg/controllers/logset/controller.go:103-106, discovery.go:44-51,
// sts.go:45: "<logset>-log-discovery.<ns>.svc").
func (l *logSetObj) discoveryNames() []string {
	names := []string{fmt.Sprintf("%s-log-discovery.%s.svc", l.Metadata.Name, l.Metadata.Namespace)}
	if d := l.Status.Discovery; d != nil && d.Address != "" && d.Address != names[0] {
		names = append(names, d.Address)
	}
	return names
}

type watchStatus struct {
	Synced bool   `json:"synced"`
	Error  string `json:"error,omitempty"`
}

type config struct {
	stateDir      string
	addressPool   netip.Prefix
	cluster       clusterOptions
	baseHostsFile string
}

type double struct {
	cfg    config
	kube   *kubeClient
	events *eventLog
	hosts  *hostsFile

	mu         sync.Mutex
	pods       map[string]podObj
	logsets    map[string]logSetObj
	clusters   map[string]*moCluster
	failed     map[string]string
	leases     map[string]string
	watches    map[string]watchStatus
	drainState map[string]cachedInitState
	dirty      map[string]bool
	kick       chan struct{}
	control    string
}

type cachedInitState struct {
	state string
	at    time.Time
}

func newDouble(cfg config, kube *kubeClient, events *eventLog) *double {
	return &double{
		cfg: cfg, kube: kube, events: events,
		hosts:      newHostsFile(filepath.Join(cfg.stateDir, "hosts"), cfg.baseHostsFile),
		pods:       map[string]podObj{},
		logsets:    map[string]logSetObj{},
		clusters:   map[string]*moCluster{},
		failed:     map[string]string{},
		leases:     readLeases(filepath.Join(cfg.stateDir, "namespaces.json")),
		watches:    map[string]watchStatus{},
		drainState: map[string]cachedInitState{},
		dirty:      map[string]bool{},
		kick:       make(chan struct{}, 1),
	}
}

func (d *double) markDirty(ns string) {
	d.mu.Lock()
	d.dirty[ns] = true
	d.mu.Unlock()
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// run starts the watches and reconciles until ctx ends, then stops every cluster.
func (d *double) run(ctx context.Context) {
	d.writeFiles()
	for name, r := range map[string]*reflector{
		"pods":    d.podReflector(),
		"logsets": d.logSetReflector(),
	} {
		name, r := name, r
		r.onState = func(synced bool, err error) {
			d.mu.Lock()
			ws := watchStatus{Synced: synced || d.watches[name].Synced}
			if err != nil {
				ws.Error = err.Error()
				if isStatus(err, http.StatusNotFound) {
					ws.Error = "resource not served (is the CRD installed?)"
				}
			}
			d.watches[name] = ws
			d.mu.Unlock()
		}
		go r.run(ctx)
	}
	resync := time.NewTicker(resyncInterval)
	defer resync.Stop()
	for {
		select {
		case <-ctx.Done():
			d.shutdown()
			return
		case <-d.kick:
		case <-resync.C:
			d.mu.Lock()
			for ns := range d.clusters {
				d.dirty[ns] = true
			}
			for ns := range d.failed {
				d.dirty[ns] = true
			}
			for _, ls := range d.logsets {
				d.dirty[ls.Metadata.Namespace] = true
			}
			d.mu.Unlock()
		}
		d.mu.Lock()
		todo := make([]string, 0, len(d.dirty))
		for ns := range d.dirty {
			todo = append(todo, ns)
		}
		d.dirty = map[string]bool{}
		d.mu.Unlock()
		sort.Strings(todo)
		for _, ns := range todo {
			if ns != "" {
				d.reconcile(ns)
			}
		}
		d.writeFiles()
	}
}

func (d *double) shutdown() {
	d.mu.Lock()
	clusters := d.clusters
	d.clusters = map[string]*moCluster{}
	d.mu.Unlock()
	for _, c := range clusters {
		c.close()
	}
}

func decodeInto[T any](raw json.RawMessage) (T, bool) {
	var v T
	return v, json.Unmarshal(raw, &v) == nil
}

func (d *double) podReflector() *reflector {
	return &reflector{
		client: d.kube, path: podsPath, selector: podSelector,
		replace: func(items []json.RawMessage) {
			d.mu.Lock()
			old := d.pods
			d.pods = map[string]podObj{}
			for _, raw := range items {
				if p, ok := decodeInto[podObj](raw); ok {
					d.pods[p.Metadata.key()] = p
				}
			}
			d.mu.Unlock()
			for _, p := range old {
				d.markDirty(p.Metadata.Namespace)
			}
			for _, raw := range items {
				if p, ok := decodeInto[podObj](raw); ok {
					d.markDirty(p.Metadata.Namespace)
				}
			}
		},
		apply: func(kind string, raw json.RawMessage) {
			p, ok := decodeInto[podObj](raw)
			if !ok {
				return
			}
			d.mu.Lock()
			if kind == "DELETED" {
				delete(d.pods, p.Metadata.key())
			} else {
				d.pods[p.Metadata.key()] = p
			}
			d.mu.Unlock()
			d.markDirty(p.Metadata.Namespace)
		},
	}
}

func (d *double) logSetReflector() *reflector {
	return &reflector{
		client: d.kube, path: logSetsPath,
		replace: func(items []json.RawMessage) {
			d.mu.Lock()
			old := d.logsets
			d.logsets = map[string]logSetObj{}
			for _, raw := range items {
				if l, ok := decodeInto[logSetObj](raw); ok {
					d.logsets[l.Metadata.key()] = l
				}
			}
			d.mu.Unlock()
			for _, l := range old {
				d.markDirty(l.Metadata.Namespace)
			}
			for _, raw := range items {
				if l, ok := decodeInto[logSetObj](raw); ok {
					d.markDirty(l.Metadata.Namespace)
				}
			}
		},
		apply: func(kind string, raw json.RawMessage) {
			l, ok := decodeInto[logSetObj](raw)
			if !ok {
				return
			}
			d.mu.Lock()
			if kind == "DELETED" {
				delete(d.logsets, l.Metadata.key())
			} else {
				d.logsets[l.Metadata.key()] = l
			}
			d.mu.Unlock()
			d.markDirty(l.Metadata.Namespace)
		},
	}
}

// reconcile makes one namespace's MatrixOne cluster match its LogSets and pods.
func (d *double) reconcile(ns string) {
	d.mu.Lock()
	var uids []string
	for _, l := range d.logsets {
		if l.Metadata.Namespace == ns {
			uids = append(uids, l.Metadata.UID)
		}
	}
	sort.Strings(uids)
	logSets := strings.Join(uids, ",")
	var pods []podObj
	for _, p := range d.pods {
		if p.Metadata.Namespace == ns {
			pods = append(pods, p)
		}
	}
	cl := d.clusters[ns]
	d.mu.Unlock()

	if cl != nil && cl.logSets != logSets {
		// Every LogSet of the namespace went or was replaced: a new MatrixOne cluster
		// (the operator, too, drops its clients of a recreated LogSet, mocli/manager.go:132-137).
		d.mu.Lock()
		delete(d.clusters, ns)
		d.mu.Unlock()
		cl.close()
		cl = nil
	}
	if logSets == "" {
		d.mu.Lock()
		delete(d.clusters, ns)
		delete(d.failed, ns)
		delete(d.leases, ns)
		d.mu.Unlock()
		if cl != nil {
			cl.close()
		}
		return
	}
	if cl == nil {
		var err error
		if cl, err = d.startCluster(ns, logSets); err != nil {
			return
		}
	}
	var cns []cnSpec
	var tns []tnSpec
	for i := range pods {
		p := &pods[i]
		if !p.running() {
			continue
		}
		switch p.Metadata.Labels[componentLabel] {
		case "CNSet":
			s := cnSpec{
				pod: p.Metadata.Name, podUID: p.Metadata.UID,
				uuid: cnStoreUUID(p.Metadata.Name, p.Spec.Subdomain, ns),
			}
			if !cl.hasCN(s.pod, s.podUID) {
				s.initWorkState = d.initWorkState(ns, p.Metadata.Labels[instanceLabel])
			}
			cns = append(cns, s)
		case "DNSet":
			svc, ok := p.env("HEADLESS_SERVICE_NAME")
			if !ok || svc == "" {
				svc = p.Spec.Subdomain
			}
			host := ""
			if svc != "" {
				host = fmt.Sprintf("%s.%s.%s.svc", p.Metadata.Name, svc, ns)
			}
			_, dnsIdentity := p.env("HOSTNAME_UUID")
			tns = append(tns, tnSpec{
				pod: p.Metadata.Name, podUID: p.Metadata.UID, host: host,
				uuid: tnStoreUUID(p.Metadata.Name, host, dnsIdentity),
			})
		}
	}
	cl.syncStores(cns, tns)
}

func (d *double) startCluster(ns, logSets string) (*moCluster, error) {
	var lastErr error
	for attempt := 0; attempt < 16; attempt++ {
		ip, err := d.lease(ns)
		if err != nil {
			lastErr = err
			break
		}
		cl, err := startCluster(ns, ip, d.cfg.cluster, d.events, func() { d.markDirty("") })
		if err == nil {
			cl.logSets = logSets
			d.mu.Lock()
			d.clusters[ns] = cl
			delete(d.failed, ns)
			d.mu.Unlock()
			return cl, nil
		}
		lastErr = err
		// The address is taken by someone else (another double): lease another.
		d.mu.Lock()
		delete(d.leases, ns)
		d.mu.Unlock()
		if !strings.Contains(err.Error(), "busy") {
			break
		}
	}
	d.mu.Lock()
	d.failed[ns] = lastErr.Error()
	d.mu.Unlock()
	d.events.emit(ns, svcDouble, "clusterFailed", map[string]any{"error": lastErr.Error()})
	return nil, lastErr
}

// lease returns the namespace's loopback address, allocating the first free one of the
// pool (not leased here and with the log-service ports bindable).
func (d *double) lease(ns string) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if ip, ok := d.leases[ns]; ok {
		return ip, nil
	}
	taken := map[string]bool{}
	for _, ip := range d.leases {
		taken[ip] = true
	}
	ip, err := freeAddress(d.cfg.addressPool, taken)
	if err != nil {
		return "", err
	}
	d.leases[ns] = ip
	return ip, nil
}

// freeAddress is the first address of the pool, skipping .0/.1/.255 octets and taken
// ones, on which a namespace's cluster ports can be bound.
func freeAddress(pool netip.Prefix, taken map[string]bool) (string, error) {
	for a := pool.Masked().Addr(); pool.Contains(a); a = a.Next() {
		if a.Is4() {
			if last := a.As4()[3]; last == 0 || last == 1 || last == 255 {
				continue
			}
		}
		ip := a.String()
		if taken[ip] {
			continue
		}
		if portsFree(ip, logServicePort, raftPort, gossipPort, logServiceInnerPort) != nil {
			continue
		}
		return ip, nil
	}
	return "", fmt.Errorf("no free address in %s", pool)
}

// initWorkState is the CN's init-work-state: "Draining" when its CNSet drains stores
// (matrixone-operator pkg/controllers/cnset/resource.go:308-310; every pool CNSet does,
// cnpool/controller.go syncCNSetSpec), else empty (HAKeeper then marks it Working).
func (d *double) initWorkState(ns, cnset string) string {
	if cnset == "" {
		return ""
	}
	key := ns + "/" + cnset
	d.mu.Lock()
	c, ok := d.drainState[key]
	d.mu.Unlock()
	if ok && time.Since(c.at) < 10*time.Second {
		return c.state
	}
	var obj struct {
		Spec struct {
			ScalingConfig struct {
				StoreDrainEnabled *bool `json:"storeDrainEnabled"`
			} `json:"scalingConfig"`
		} `json:"spec"`
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	state := ""
	path := fmt.Sprintf("/apis/core.matrixorigin.io/v1alpha1/namespaces/%s/cnsets/%s", ns, cnset)
	if err := d.kube.get(ctx, path, &obj); err == nil {
		if e := obj.Spec.ScalingConfig.StoreDrainEnabled; e != nil && *e {
			state = "Draining"
		}
	}
	d.mu.Lock()
	d.drainState[key] = cachedInitState{state: state, at: time.Now()}
	d.mu.Unlock()
	return state
}

func (d *double) cluster(ns string) (*moCluster, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c, ok := d.clusters[ns]
	return c, ok
}

// writeFiles refreshes the hosts file and namespaces.json.
func (d *double) writeFiles() {
	d.mu.Lock()
	clusters := map[string]*moCluster{}
	for ns, c := range d.clusters {
		clusters[ns] = c
	}
	discovery := map[string][]string{}
	for _, l := range d.logsets {
		discovery[l.Metadata.Namespace] = append(discovery[l.Metadata.Namespace], l.discoveryNames()...)
	}
	failed := map[string]string{}
	for ns, e := range d.failed {
		failed[ns] = e
	}
	leases := map[string]string{}
	for ns, ip := range d.leases {
		leases[ns] = ip
	}
	d.mu.Unlock()

	names := map[string]string{}
	file := namespacesFile{
		ControlAddress: d.control, AddressPool: d.cfg.addressPool.String(),
		Namespaces: map[string]namespaceInfo{},
	}
	for ns, ip := range leases {
		c := clusters[ns]
		info := namespaceInfo{
			Address: ip, State: "starting",
			Ports: map[string]int{
				"logService": logServicePort, "raft": raftPort, "gossip": gossipPort,
				"tnLockService": tnLockServicePort,
			},
			CNStores: map[string]cnInfo{}, TNStores: map[string]tnInfo{},
		}
		if e, ok := failed[ns]; ok {
			info.State, info.Error = "failed", e
		}
		sort.Strings(discovery[ns])
		for _, n := range discovery[ns] {
			info.Discovery = append(info.Discovery, fmt.Sprintf("%s:%d", n, logServicePort))
			names[n] = ip
		}
		if c != nil {
			info.State = "running"
			info.Hostnames = c.hostnames()
			for _, h := range info.Hostnames {
				names[h] = ip
			}
			c.fillInfo(&info)
		}
		file.Namespaces[ns] = info
	}
	if err := d.hosts.write(names); err != nil {
		d.events.emit("", svcDouble, "error", map[string]any{"error": "hosts: " + err.Error()})
	}
	if err := writeJSONAtomic(filepath.Join(d.cfg.stateDir, "namespaces.json"), file); err != nil {
		d.events.emit("", svcDouble, "error", map[string]any{"error": "namespaces.json: " + err.Error()})
	}
}

// health is nil when the double is serving: the pod watch has listed and no
// namespace's cluster failed to start.
func (d *double) health() (map[string]any, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	body := map[string]any{"watches": d.watches, "clusters": len(d.clusters), "failed": d.failed}
	if !d.watches["pods"].Synced {
		msg := "pod watch not synced"
		if e := d.watches["pods"].Error; e != "" {
			msg += ": " + e
		}
		return body, fmt.Errorf("%s", msg)
	}
	for ns, e := range d.failed {
		return body, fmt.Errorf("namespace %s: %s", ns, e)
	}
	return body, nil
}
