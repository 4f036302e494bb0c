package main

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/matrixorigin/matrixone/pkg/hakeeper"
	"github.com/matrixorigin/matrixone/pkg/logservice"
	pb "github.com/matrixorigin/matrixone/pkg/pb/logservice"
	"github.com/matrixorigin/matrixone/pkg/pb/metadata"
)

// cnStore is one CN pod as a MatrixOne CN: its store identity, its addresses on the
// namespace's loopback address, its query service and the knobs mo-chaos sets.
type cnStore struct {
	pod, podUID, uuid string
	slot              int
	sqlAddr           string
	pipelineAddr      string
	lockAddr          string
	queryAddr         string
	initWorkState     string
	taskService       bool
	query             *endpoint // the query service (a fault may hold it down)
	knobs             queryKnobs
	lock              lockKnobs
}

// tnStore is one DN pod as a MatrixOne TN: heartbeats and the lock service.
type tnStore struct {
	pod, podUID, uuid string
	host              string
	serviceAddr       string
	logtailAddr       string
	lockAddr          string
	lock              *endpoint // the lock service (a fault may hold it down)
	shards            map[uint64]pb.TNShardInfo
}

// cnSpec / tnSpec are what the watcher derives from a Running pod.
type cnSpec struct {
	pod, podUID, uuid string
	initWorkState     string
}

type tnSpec struct {
	pod, podUID, uuid string
	host              string
}

// moCluster is the MatrixOne control plane of one namespace on its own loopback
// address: a real log store with the HAKeeper, the logging proxy the operator dials,
// TN and CN stores kept alive with heartbeats through MatrixOne's own HAKeeper clients.
type moCluster struct {
	namespace string
	ip        string
	logSets   string // UIDs of the LogSets it was started for
	opts      clusterOptions
	events    *eventLog
	onChange  func()

	log      *logStore
	proxy    *endpoint // the HAKeeper proxy the operator dials (a fault may hold it down)
	cnClient logservice.CNHAKeeperClient
	tnClient logservice.TNHAKeeperClient
	reader   logservice.ProxyHAKeeperClient

	mu         sync.Mutex
	cns        map[string]*cnStore
	tns        map[string]*tnStore
	podOfID    map[string]string
	details    *pb.ClusterDetails
	state      pb.HAKeeperState
	lockOthers map[string]*lockKnobs  // lock knobs of services the double does not run
	faults     map[string]activeFault // by component (faults.go)
	faultMu    sync.Mutex             // one fault change at a time

	stop chan struct{}
	wg   sync.WaitGroup
}

type clusterOptions struct {
	hakeeper          hakeeperOptions
	heartbeatInterval time.Duration
	pollInterval      time.Duration
}

func startCluster(
	namespace, ip string, opts clusterOptions, events *eventLog, onChange func(),
) (*moCluster, error) {
	if err := portsFree(ip, logServicePort, raftPort, gossipPort, logServiceInnerPort); err != nil {
		return nil, err
	}
	c := &moCluster{
		namespace: namespace, ip: ip, opts: opts, events: events, onChange: onChange,
		cns: map[string]*cnStore{}, tns: map[string]*tnStore{}, podOfID: map[string]string{},
		lockOthers: map[string]*lockKnobs{}, faults: map[string]activeFault{},
		stop: make(chan struct{}),
	}
	moRuntime(metadata.ServiceType_LOG, doubleSID)
	t0 := time.Now()
	log, err := startLogStore(ip, opts.hakeeper)
	if err != nil {
		return nil, err
	}
	c.log = log
	proxy, err := newEndpoint(fmt.Sprintf("%s:%d", ip, logServicePort), "", func() (server, error) {
		p, err := newHAProxy(namespace, fmt.Sprintf("%s:%d", ip, logServicePort),
			log.innerAddr, events, c.podOf)
		if err != nil {
			return nil, err
		}
		return p, nil
	})
	if err != nil {
		_ = log.close()
		return nil, err
	}
	c.proxy = proxy
	if err := c.waitDiscoverable(); err != nil {
		c.closeServers()
		return nil, err
	}
	if err := c.connectClients(); err != nil {
		c.closeServers()
		return nil, err
	}
	events.emit(namespace, svcDouble, "clusterStarted", map[string]any{
		"address": ip, "logStore": log.uuid,
		"elapsedMs": float64(time.Since(t0).Microseconds()) / 1000,
	})
	c.wg.Add(2)
	go c.heartbeatLoop()
	go c.pollLoop()
	return c, nil
}

// waitDiscoverable waits until the log store knows the HAKeeper leader, then checks once
// that the operator's discovery (GET_SHARD_INFO of the HAKeeper shard at the published
// address, through the proxy) finds it.
func (c *moCluster) waitDiscoverable() error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, ok, err := logservice.GetShardInfo(doubleSID, c.log.innerAddr, hakeeper.DefaultHAKeeperShardID)
		if err == nil && ok {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("HAKeeper has no leader after 30s (last error: %v)", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	addr := fmt.Sprintf("%s:%d", c.ip, logServicePort)
	if _, ok, err := logservice.GetShardInfo(doubleSID, addr, hakeeper.DefaultHAKeeperShardID); err != nil || !ok {
		return fmt.Errorf("HAKeeper not discoverable at %s (ok=%v, error: %v)", addr, ok, err)
	}
	return nil
}

// connectClients opens the HAKeeper clients a CN and a TN use (ServiceAddresses, like a
// store configured with hakeeper-client.service-addresses) plus a reader for the
// double's own view; they talk to the log service directly, not through the proxy.
func (c *moCluster) connectClients() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := logservice.HAKeeperClientConfig{ServiceAddresses: []string{c.log.innerAddr}}
	var err error
	if c.cnClient, err = logservice.NewCNHAKeeperClient(ctx, doubleSID, cfg); err != nil {
		return fmt.Errorf("CN HAKeeper client: %w", err)
	}
	if c.tnClient, err = logservice.NewTNHAKeeperClient(ctx, doubleSID, cfg); err != nil {
		return fmt.Errorf("TN HAKeeper client: %w", err)
	}
	if c.reader, err = logservice.NewProxyHAKeeperClient(ctx, doubleSID, cfg); err != nil {
		return fmt.Errorf("HAKeeper reader: %w", err)
	}
	return nil
}

func (c *moCluster) podOf(uuid string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.podOfID[uuid]
}

// close stops every store and the log service (the namespace's LogSet is gone).
func (c *moCluster) close() {
	close(c.stop)
	c.wg.Wait()
	c.mu.Lock()
	for _, s := range c.cns {
		s.query.close()
	}
	for _, t := range c.tns {
		t.lock.close()
	}
	c.cns, c.tns = map[string]*cnStore{}, map[string]*tnStore{}
	c.mu.Unlock()
	for _, cl := range []interface{ Close() error }{c.cnClient, c.tnClient, c.reader} {
		if cl != nil && !reflect.ValueOf(cl).IsNil() {
			_ = cl.Close()
		}
	}
	c.closeServers()
	c.events.emit(c.namespace, svcDouble, "clusterStopped", map[string]any{"address": c.ip})
}

func (c *moCluster) closeServers() {
	if c.proxy != nil {
		c.proxy.close()
	}
	if c.log != nil {
		_ = c.log.close()
	}
}

// syncStores makes the running stores match the Running pods: new pods start a store
// (a CN process starting), gone pods stop theirs (the process exits, its heartbeats
// stop; HAKeeper then times the store out and deletes it, as for a real CN).
func (c *moCluster) syncStores(cns []cnSpec, tns []tnSpec) {
	wantCN := map[string]cnSpec{}
	for _, s := range cns {
		wantCN[s.pod] = s
	}
	wantTN := map[string]tnSpec{}
	for _, s := range tns {
		wantTN[s.pod] = s
	}
	c.mu.Lock()
	var stopQ []*endpoint
	var stopL []*endpoint
	for pod, s := range c.cns {
		if w, ok := wantCN[pod]; !ok || w.podUID != s.podUID {
			stopQ = append(stopQ, s.query)
			delete(c.cns, pod)
			c.storeEvent("stopHeartbeat", "cn", s.uuid, pod, "pod not running")
		}
	}
	for pod, t := range c.tns {
		if w, ok := wantTN[pod]; !ok || w.podUID != t.podUID {
			stopL = append(stopL, t.lock)
			delete(c.tns, pod)
			c.storeEvent("stopHeartbeat", "tn", t.uuid, pod, "pod not running")
		}
	}
	var newCNs []*cnStore
	for pod, w := range wantCN {
		if _, ok := c.cns[pod]; ok {
			continue
		}
		s, err := c.newCNStoreLocked(w)
		if err != nil {
			c.events.emit(c.namespace, svcDouble, "error", map[string]any{
				"pod": pod, "error": err.Error()})
			continue
		}
		c.cns[pod] = s
		c.podOfID[s.uuid] = pod
		newCNs = append(newCNs, s)
		c.storeEvent("startHeartbeat", "cn", s.uuid, pod, "pod running")
	}
	var newTNs []*tnStore
	for pod, w := range wantTN {
		if _, ok := c.tns[pod]; ok {
			continue
		}
		t, err := c.newTNStoreLocked(w)
		if err != nil {
			c.events.emit(c.namespace, svcDouble, "error", map[string]any{
				"pod": pod, "error": err.Error()})
			continue
		}
		c.tns[pod] = t
		c.podOfID[t.uuid] = pod
		newTNs = append(newTNs, t)
		c.storeEvent("startHeartbeat", "tn", t.uuid, pod, "pod running")
	}
	c.mu.Unlock()
	for _, q := range stopQ {
		q.close()
	}
	for _, l := range stopL {
		l.close()
	}
	// A starting store heartbeats at once, like a CN/TN process does on start-up.
	for _, s := range newCNs {
		c.sendCNHeartbeat(s)
	}
	for _, t := range newTNs {
		c.sendTNHeartbeat(t)
	}
	if len(stopQ)+len(stopL)+len(newCNs)+len(newTNs) > 0 {
		c.onChange()
	}
}

func (c *moCluster) storeEvent(method, kind, uuid, pod, reason string) {
	c.events.emit(c.namespace, svcStore, method, map[string]any{
		"kind": kind, "uuid": uuid, "pod": pod, "reason": reason})
}

func (c *moCluster) newCNStoreLocked(w cnSpec) (*cnStore, error) {
	used := map[int]bool{}
	for _, s := range c.cns {
		used[s.slot] = true
	}
	for slot := 0; slot < 1000; slot++ {
		if used[slot] {
			continue
		}
		base := cnPortBase + 10*slot
		if portsFree(c.ip, base+3) != nil {
			continue
		}
		s := &cnStore{
			pod: w.pod, podUID: w.podUID, uuid: w.uuid, slot: slot,
			sqlAddr:       fmt.Sprintf("%s:%d", c.ip, base),
			pipelineAddr:  fmt.Sprintf("%s:%d", c.ip, base+1),
			lockAddr:      fmt.Sprintf("%s:%d", c.ip, base+2),
			queryAddr:     fmt.Sprintf("%s:%d", c.ip, base+3),
			initWorkState: w.initWorkState,
			knobs:         defaultQueryKnobs(),
		}
		if k, ok := c.lockOthers[w.uuid]; ok {
			s.lock = *k
			delete(c.lockOthers, w.uuid)
		}
		q, err := newEndpoint(s.queryAddr, c.faultOnLocked(componentQuery+w.pod), func() (server, error) {
			q, err := newCNQueryServer(w.uuid, s.queryAddr, c)
			if err != nil {
				return nil, err
			}
			return q, nil
		})
		if err != nil {
			return nil, fmt.Errorf("query service %s: %w", s.queryAddr, err)
		}
		s.query = q
		return s, nil
	}
	return nil, fmt.Errorf("no free CN port block on %s", c.ip)
}

func (c *moCluster) newTNStoreLocked(w tnSpec) (*tnStore, error) {
	lockPort := tnLockServicePort
	if len(c.tns) > 0 {
		// A second TN in one namespace (not a topology the operator builds) gets a port
		// from the CN range.
		lockPort = cnPortBase - 10*(len(c.tns)+1)
	}
	if err := portsFree(c.ip, lockPort); err != nil {
		return nil, err
	}
	host := w.host
	if host == "" {
		host = c.ip
	}
	t := &tnStore{
		pod: w.pod, podUID: w.podUID, uuid: w.uuid, host: w.host,
		serviceAddr: fmt.Sprintf("%s:%d", host, tnServicePort),
		logtailAddr: fmt.Sprintf("%s:%d", host, tnLogtailPort),
		lockAddr:    fmt.Sprintf("%s:%d", host, lockPort),
		shards:      map[uint64]pb.TNShardInfo{},
	}
	listen := fmt.Sprintf("%s:%d", c.ip, lockPort)
	l, err := newEndpoint(listen, c.faultOnLocked(componentLockService), func() (server, error) {
		l, err := newLockServer(listen, c)
		if err != nil {
			return nil, err
		}
		return l, nil
	})
	if err != nil {
		return nil, fmt.Errorf("lock service: %w", err)
	}
	t.lock = l
	return t, nil
}

// hostnames are the DNS names this cluster's TN stores advertise (for the hosts file).
func (c *moCluster) hostnames() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, t := range c.tns {
		if t.host != "" {
			out = append(out, t.host)
		}
	}
	sort.Strings(out)
	return out
}

func (c *moCluster) heartbeatLoop() {
	defer c.wg.Done()
	tick := time.NewTicker(c.opts.heartbeatInterval)
	defer tick.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-tick.C:
		}
		c.mu.Lock()
		cns := make([]*cnStore, 0, len(c.cns))
		for _, s := range c.cns {
			cns = append(cns, s)
		}
		tns := make([]*tnStore, 0, len(c.tns))
		for _, t := range c.tns {
			tns = append(tns, t)
		}
		c.mu.Unlock()
		for _, s := range cns {
			c.sendCNHeartbeat(s)
		}
		for _, t := range tns {
			c.sendTNHeartbeat(t)
		}
	}
}

// heartbeatTimeout is a CN's default hakeeper-heartbeat-timeout
// (matrixone pkg/cnservice/types.go:311-313).
const heartbeatTimeout = 3 * time.Second

func (c *moCluster) sendCNHeartbeat(s *cnStore) {
	ctx, cancel := context.WithTimeout(context.Background(), heartbeatTimeout)
	defer cancel()
	// The fields a CN sends (matrixone pkg/cnservice/server_heartbeat.go:75-93); the
	// schedule commands HAKeeper answers with (task service, gossip) are not acted on.
	c.mu.Lock()
	taskService := s.taskService
	c.mu.Unlock()
	cb, err := c.cnClient.SendCNHeartbeat(ctx, pb.CNStoreHeartbeat{
		UUID:               s.uuid,
		ServiceAddress:     s.pipelineAddr,
		SQLAddress:         s.sqlAddr,
		LockServiceAddress: s.lockAddr,
		QueryAddress:       s.queryAddr,
		InitWorkState:      s.initWorkState,
		TaskServiceCreated: taskService,
		CommitID:           "mochaos-double",
	})
	if err != nil {
		c.events.emit(c.namespace, svcStore, "heartbeatFailed", map[string]any{
			"kind": "cn", "uuid": s.uuid, "pod": s.pod, "error": err.Error()})
		return
	}
	// A CN creates its task service when HAKeeper asks (cnservice handleCommands) and
	// says so in its next heartbeat; that keeps HAKeeper from asking again.
	for _, cmd := range cb.Commands {
		if cmd.CreateTaskService != nil {
			c.mu.Lock()
			s.taskService = true
			c.mu.Unlock()
		}
	}
}

func (c *moCluster) sendTNHeartbeat(t *tnStore) {
	ctx, cancel := context.WithTimeout(context.Background(), heartbeatTimeout)
	defer cancel()
	c.mu.Lock()
	shards := make([]pb.TNShardInfo, 0, len(t.shards))
	for _, s := range t.shards {
		shards = append(shards, s)
	}
	c.mu.Unlock()
	cb, err := c.tnClient.SendTNHeartbeat(ctx, pb.TNStoreHeartbeat{
		UUID:                 t.uuid,
		ServiceAddress:       t.serviceAddr,
		Shards:               shards,
		LogtailServerAddress: t.logtailAddr,
		LockServiceAddress:   t.lockAddr,
	})
	if err != nil {
		c.events.emit(c.namespace, svcStore, "heartbeatFailed", map[string]any{
			"kind": "tn", "uuid": t.uuid, "pod": t.pod, "error": err.Error()})
		return
	}
	// A TN hosts the TN shard replicas HAKeeper schedules on it; it reports them in
	// its next heartbeat (matrixone pkg/tnservice/store_heartbeat.go:110-132).
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cmd := range cb.Commands {
		cc := cmd.ConfigChange
		if cc == nil {
			continue
		}
		switch cc.ChangeType {
		case pb.AddReplica, pb.StartReplica:
			t.shards[cc.Replica.ShardID] = pb.TNShardInfo{
				ShardID: cc.Replica.ShardID, ReplicaID: cc.Replica.ReplicaID}
		case pb.RemoveReplica, pb.StopReplica:
			delete(t.shards, cc.Replica.ShardID)
		}
	}
}

// pollLoop reads HAKeeper's cluster details and logs every store change it sees.
func (c *moCluster) pollLoop() {
	defer c.wg.Done()
	tick := time.NewTicker(c.opts.pollInterval)
	defer tick.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-tick.C:
		}
		c.refresh()
	}
}

func (c *moCluster) refresh() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d, err := c.reader.GetClusterDetails(ctx)
	if err != nil {
		return
	}
	st, err := c.reader.GetClusterState(ctx)
	c.mu.Lock()
	prev := c.details
	c.details = &d
	prevState, state := c.state, c.state
	if err == nil {
		c.state, state = st.State, st.State
	}
	c.mu.Unlock()
	if state != prevState {
		c.events.emit(c.namespace, svcHAKeeper, "stateChanged", map[string]any{
			"from": prevState.String(), "to": state.String()})
	}
	c.diff(prev, &d)
}

func (c *moCluster) diff(prev, cur *pb.ClusterDetails) {
	before := map[string]cnSummary{}
	if prev != nil {
		for _, s := range summarizeCNs(prev.CNStores, c.podOf) {
			before[s.UUID] = s
		}
	}
	after := map[string]cnSummary{}
	for _, s := range summarizeCNs(cur.CNStores, c.podOf) {
		after[s.UUID] = s
	}
	changed := false
	for id, s := range after {
		old, ok := before[id]
		switch {
		case !ok:
			c.events.emit(c.namespace, svcStore, "added", map[string]any{
				"kind": "cn", "uuid": id, "pod": s.Pod, "workState": s.WorkState,
				"state": s.State, "labels": s.Labels, "queryAddress": s.Query})
			changed = true
		case old.WorkState != s.WorkState || old.State != s.State ||
			!reflect.DeepEqual(old.Labels, s.Labels):
			c.events.emit(c.namespace, svcStore, "updated", map[string]any{
				"kind": "cn", "uuid": id, "pod": s.Pod,
				"workState": s.WorkState, "previousWorkState": old.WorkState,
				"state": s.State, "previousState": old.State,
				"labels": s.Labels, "previousLabels": old.Labels})
			changed = true
		}
	}
	for id, s := range before {
		if _, ok := after[id]; !ok {
			c.events.emit(c.namespace, svcStore, "removed", map[string]any{
				"kind": "cn", "uuid": id, "pod": s.Pod})
			changed = true
		}
	}
	tnBefore := map[string]bool{}
	if prev != nil {
		for _, t := range prev.TNStores {
			tnBefore[t.UUID] = true
		}
	}
	for _, t := range cur.TNStores {
		if !tnBefore[t.UUID] {
			c.events.emit(c.namespace, svcStore, "added", map[string]any{
				"kind": "tn", "uuid": t.UUID, "pod": c.podOf(t.UUID),
				"lockServiceAddress": t.LockServiceAddress})
			changed = true
		}
		delete(tnBefore, t.UUID)
	}
	for id := range tnBefore {
		c.events.emit(c.namespace, svcStore, "removed", map[string]any{
			"kind": "tn", "uuid": id, "pod": c.podOf(id)})
		changed = true
	}
	if changed {
		c.onChange()
	}
}

// clusterDetails reads HAKeeper now (the control API's view).
func (c *moCluster) clusterDetails() (pb.ClusterDetails, pb.HAKeeperState, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d, err := c.reader.GetClusterDetails(ctx)
	if err != nil {
		return d, 0, err
	}
	st, err := c.reader.GetClusterState(ctx)
	if err != nil {
		return d, 0, err
	}
	return d, st.State, nil
}

// queryKnobs implements queryBackend.
func (c *moCluster) queryKnobs(uuid string) (queryKnobs, string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.cns {
		if s.uuid == uuid {
			return s.knobs, s.pod, true
		}
	}
	return queryKnobs{}, c.podOfID[uuid], false
}

// withLockKnobs implements lockBackend: the knobs of a CN the double runs, or of a
// service it does not know (kept until such a CN starts).
func (c *moCluster) withLockKnobs(serviceID string, fn func(k *lockKnobs) any) any {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.cns {
		if s.uuid == serviceID {
			return fn(&s.lock)
		}
	}
	k, ok := c.lockOthers[serviceID]
	if !ok {
		k = &lockKnobs{}
		c.lockOthers[serviceID] = k
	}
	return fn(k)
}

// logRPC implements queryBackend and lockBackend.
func (c *moCluster) logRPC(service, method string, fields map[string]any) {
	if _, ok := fields["pod"]; !ok {
		if id, ok := fields["uuid"].(string); ok {
			fields["pod"] = c.podOf(id)
		}
	}
	c.events.emit(c.namespace, service, method, fields)
}

// cnByPod runs fn on the CN store of a pod under the cluster lock.
func (c *moCluster) cnByPod(pod string, fn func(s *cnStore)) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.cns[pod]
	if ok {
		fn(s)
	}
	return ok
}

// hasCN reports whether the pod (this incarnation) already runs a CN store.
func (c *moCluster) hasCN(pod, podUID string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.cns[pod]
	return ok && s.podUID == podUID
}

// fillInfo adds the running stores to a namespaces.json entry.
func (c *moCluster) fillInfo(info *namespaceInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for pod, s := range c.cns {
		info.CNStores[pod] = cnInfo{
			UUID: s.uuid, QueryAddress: s.queryAddr, SQLAddress: s.sqlAddr,
			LockServiceAddress: s.lockAddr, ServiceAddress: s.pipelineAddr,
			InitWorkState: s.initWorkState,
		}
	}
	for pod, t := range c.tns {
		info.TNStores[pod] = tnInfo{
			UUID: t.uuid, LockServiceAddress: t.lockAddr,
			ListenAddress: fmt.Sprintf("%s:%s", c.ip, t.lockAddr[strings.LastIndex(t.lockAddr, ":")+1:]),
		}
	}
}
