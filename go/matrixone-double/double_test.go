package main

// Tests of the double through MatrixOne's own clients, built the way the operator builds
// them (matrixone-operator pkg/mocli/manager.go:148, lockservice_client.go:327-340,
// pkg/querycli/query.go:34-45).

import (
	"bufio"
	"context"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matrixorigin/matrixone/pkg/common/morpc"
	"github.com/matrixorigin/matrixone/pkg/logservice"
	"github.com/matrixorigin/matrixone/pkg/logutil"
	"github.com/matrixorigin/matrixone/pkg/pb/lock"
	pb "github.com/matrixorigin/matrixone/pkg/pb/logservice"
	"github.com/matrixorigin/matrixone/pkg/pb/metadata"
	"github.com/matrixorigin/matrixone/pkg/pb/query"
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "matrixone-double-test")
	if err != nil {
		panic(err)
	}
	logutil.SetupMOLogger(&logutil.LogConfig{
		Level: "error", Format: "json", Filename: filepath.Join(dir, "matrixone.log")})
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

var testAddresses = struct {
	sync.Mutex
	taken map[string]bool
}{taken: map[string]bool{}}

type testCluster struct {
	*moCluster
	eventsPath string
}

func startTestCluster(t *testing.T, mutate func(*clusterOptions)) *testCluster {
	t.Helper()
	testAddresses.Lock()
	ip, err := freeAddress(netip.MustParsePrefix("127.101.0.0/16"), testAddresses.taken)
	if err == nil {
		testAddresses.taken[ip] = true
	}
	testAddresses.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "events.jsonl")
	events, err := openEventLog(path)
	if err != nil {
		t.Fatal(err)
	}
	opts := clusterOptions{
		heartbeatInterval: 200 * time.Millisecond,
		pollInterval:      100 * time.Millisecond,
		hakeeper: hakeeperOptions{
			cnStoreTimeout: 30 * time.Second, tnStoreTimeout: 10 * time.Second,
			checkInterval: 500 * time.Millisecond, rttMillisecond: 10,
		},
	}
	if mutate != nil {
		mutate(&opts)
	}
	c, err := startCluster("ns-"+strings.ReplaceAll(ip, ".", "-"), ip, opts, events, func() {})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.close()
		_ = events.close()
	})
	return &testCluster{moCluster: c, eventsPath: path}
}

// operatorClient is the operator's HAKeeper client: discovery through the log-service
// address the LogSet publishes.
func operatorClient(t *testing.T, c *testCluster) logservice.ProxyHAKeeperClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli, err := logservice.NewProxyHAKeeperClient(ctx, "", logservice.HAKeeperClientConfig{
		DiscoveryAddress: c.ip + ":32001",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

func details(t *testing.T, cli logservice.ProxyHAKeeperClient) pb.ClusterDetails {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := cli.GetClusterDetails(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func cnStoreOf(d pb.ClusterDetails, uuid string) (pb.CNStore, bool) {
	for _, s := range d.CNStores {
		if s.UUID == uuid {
			return s, true
		}
	}
	return pb.CNStore{}, false
}

func eventually(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestStoreIdentities(t *testing.T) {
	// Expected values from the CN start script's own pipeline:
	// echo ADDR | sha256sum | od -x | head -1 | awk '{OFS="-"; print $2$3,$4,$5,$6,$7$8$9}'
	cases := map[[3]string]string{
		{"cn-abc12", "mo-cn-headless", "ns1"}:            "36313562-6437-3562-3935-386464313133",
		{"pool-cn-x7k2p", "pool-cn-headless", "poole2e"}: "33313566-3666-6532-3036-653266356164",
	}
	for in, want := range cases {
		if got := cnStoreUUID(in[0], in[1], in[2]); got != want {
			t.Errorf("cnStoreUUID%v = %s, want %s", in, got, want)
		}
	}
	if got := tnStoreUUID("mo-tn-12", "", false); got != "00000000-0000-0000-0000-10000000000c" {
		t.Errorf("ordinal TN UUID = %s", got)
	}
	if got := tnStoreUUID("cn-abc12", "cn-abc12.mo-cn-headless.ns1.svc", true); got != cnStoreUUID("cn-abc12", "mo-cn-headless", "ns1") {
		t.Errorf("DNS-based TN UUID = %s", got)
	}
}

func TestStoresRegisterUnderPodUUIDs(t *testing.T) {
	c := startTestCluster(t, nil)
	cn1 := cnSpec{pod: "cn-a", podUID: "u1", uuid: cnStoreUUID("cn-a", "cn-h", c.namespace), initWorkState: "Draining"}
	cn2 := cnSpec{pod: "cn-b", podUID: "u2", uuid: cnStoreUUID("cn-b", "cn-h", c.namespace)}
	tn := tnSpec{pod: "tn-0", podUID: "u3", uuid: tnStoreUUID("tn-0", "", false)}
	c.syncStores([]cnSpec{cn1, cn2}, []tnSpec{tn})

	cli := operatorClient(t, c)
	d := details(t, cli)
	a, ok := cnStoreOf(d, cn1.uuid)
	if !ok {
		t.Fatalf("CN %s not in cluster details %+v", cn1.uuid, d.CNStores)
	}
	if a.WorkState != metadata.WorkState_Draining {
		t.Errorf("a CN with init-work-state Draining registers as %s", a.WorkState)
	}
	b, ok := cnStoreOf(d, cn2.uuid)
	if !ok || b.WorkState != metadata.WorkState_Working {
		t.Errorf("a CN without init-work-state registers Working, got %+v", b)
	}
	if a.QueryAddress == b.QueryAddress || !strings.HasPrefix(a.QueryAddress, c.ip+":") {
		t.Errorf("query addresses %q and %q: want distinct ports on %s", a.QueryAddress, b.QueryAddress, c.ip)
	}
	if len(d.TNStores) != 1 || d.TNStores[0].UUID != tn.uuid ||
		d.TNStores[0].LockServiceAddress != c.ip+":6003" {
		t.Errorf("TN stores %+v: want %s with lock service %s:6003", d.TNStores, tn.uuid, c.ip)
	}
}

func TestPatchAndLabelSemanticsAreHAKeepers(t *testing.T) {
	c := startTestCluster(t, nil)
	id := cnStoreUUID("cn-a", "cn-h", c.namespace)
	c.syncStores([]cnSpec{{pod: "cn-a", podUID: "u1", uuid: id, initWorkState: "Draining"}}, nil)
	cli := operatorClient(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	labels := map[string]metadata.LabelList{"account": {Labels: []string{"sys"}}}

	// The claim's bind: Working with the claim's labels (cnclaim/controller.go:412-451).
	if err := cli.PatchCNStore(ctx, pb.CNStateLabel{UUID: id, State: metadata.WorkState_Working, Labels: labels}); err != nil {
		t.Fatal(err)
	}
	s, _ := cnStoreOf(details(t, cli), id)
	if s.WorkState != metadata.WorkState_Working || strings.Join(s.Labels["account"].Labels, ",") != "sys" {
		t.Fatalf("after PatchCNStore(Working, account=sys): %s %v", s.WorkState, s.Labels)
	}
	// Draining with nil labels keeps the labels (HAKeeper's PatchCNStore) ...
	if err := cli.PatchCNStore(ctx, pb.CNStateLabel{UUID: id, State: metadata.WorkState_Draining}); err != nil {
		t.Fatal(err)
	}
	s, _ = cnStoreOf(details(t, cli), id)
	if s.WorkState != metadata.WorkState_Draining || len(s.Labels) != 1 {
		t.Fatalf("after PatchCNStore(Draining, nil): %s %v (labels must stay)", s.WorkState, s.Labels)
	}
	// ... which is why the operator follows with UpdateCNLabel(nil): that replaces them.
	if err := cli.UpdateCNLabel(ctx, pb.CNStoreLabel{UUID: id}); err != nil {
		t.Fatal(err)
	}
	s, _ = cnStoreOf(details(t, cli), id)
	if len(s.Labels) != 0 {
		t.Fatalf("after UpdateCNLabel(nil): labels %v, want none", s.Labels)
	}
	// Draining -> Working is accepted at this MatrixOne version.
	if err := cli.PatchCNStore(ctx, pb.CNStateLabel{UUID: id, State: metadata.WorkState_Working}); err != nil {
		t.Fatal(err)
	}
	s, _ = cnStoreOf(details(t, cli), id)
	if s.WorkState != metadata.WorkState_Working {
		t.Fatalf("Draining -> Working: got %s", s.WorkState)
	}
	// An unknown store: the error text the operator matches on ("does not exist").
	err := cli.PatchCNStore(ctx, pb.CNStateLabel{UUID: "no-such-store", State: metadata.WorkState_Draining})
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("PatchCNStore(unknown) = %v, want a 'does not exist' error", err)
	}
	// Every call went through the logging proxy.
	want := map[string]bool{"PATCH_CN_STORE": false, "UPDATE_CN_LABEL": false, "GET_CLUSTER_DETAILS": false}
	for _, ev := range readEvents(t, c.eventsPath) {
		if ev["service"] == svcHAKeeper {
			if _, ok := want[ev["method"].(string)]; ok {
				want[ev["method"].(string)] = true
				if ev["method"] == "PATCH_CN_STORE" && ev["uuid"] == id && ev["pod"] != "cn-a" {
					t.Errorf("PATCH_CN_STORE event without the pod name: %v", ev)
				}
			}
		}
	}
	for m, seen := range want {
		if !seen {
			t.Errorf("no %s event in the event log", m)
		}
	}
}

func TestDeletedAndStoppedStoresLeaveHAKeeper(t *testing.T) {
	c := startTestCluster(t, func(o *clusterOptions) { o.hakeeper.cnStoreTimeout = time.Second })
	a := cnSpec{pod: "cn-a", podUID: "u1", uuid: cnStoreUUID("cn-a", "h", c.namespace)}
	b := cnSpec{pod: "cn-b", podUID: "u2", uuid: cnStoreUUID("cn-b", "h", c.namespace)}
	c.syncStores([]cnSpec{a, b}, nil)
	cli := operatorClient(t, c)
	if _, ok := cnStoreOf(details(t, cli), a.uuid); !ok {
		t.Fatal("store a not registered")
	}
	// Pod a is deleted: its CN process stops heartbeating, HAKeeper times the store out
	// and its checker deletes it (needs HAKeeperRunning).
	c.syncStores([]cnSpec{b}, nil)
	eventually(t, "store a to leave HAKeeper", 20*time.Second, func() bool {
		_, ok := cnStoreOf(details(t, cli), a.uuid)
		return !ok
	})
	if _, ok := cnStoreOf(details(t, cli), b.uuid); !ok {
		t.Fatal("store b, still heartbeating, was removed too")
	}
	// The operator's OnDeleted: DeleteCNStore removes a store at once.
	c.syncStores(nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cli.DeleteCNStore(ctx, pb.DeleteCNStore{StoreID: b.uuid}); err != nil {
		t.Fatal(err)
	}
	if _, ok := cnStoreOf(details(t, cli), b.uuid); ok {
		t.Fatal("store b still in cluster details after DeleteCNStore")
	}
	eventually(t, "a 'removed' event for each store", 5*time.Second, func() bool {
		removed := map[any]bool{}
		for _, ev := range readEvents(t, c.eventsPath) {
			if ev["service"] == svcStore && ev["method"] == "removed" {
				removed[ev["uuid"]] = true
			}
		}
		return removed[a.uuid] && removed[b.uuid]
	})
}

func mustQueryClient(t *testing.T) morpc.RPCClient {
	t.Helper()
	cli, err := newQueryClient()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

func sendQuery(t *testing.T, cli morpc.RPCClient, addr string, req *query.Request) *query.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f, err := cli.Send(ctx, addr, req)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, err := f.Get()
	if err != nil {
		t.Fatal(err)
	}
	return v.(*query.Response)
}

func TestQueryServiceReportsTheKnobs(t *testing.T) {
	c := startTestCluster(t, nil)
	id := cnStoreUUID("cn-a", "h", c.namespace)
	c.syncStores([]cnSpec{{pod: "cn-a", podUID: "u1", uuid: id}}, nil)
	s, ok := cnStoreOf(details(t, operatorClient(t, c)), id)
	if !ok {
		t.Fatal("store not registered")
	}
	qc := mustQueryClient(t)
	processList := func() []string {
		resp := sendQuery(t, qc, s.QueryAddress, &query.Request{
			CmdMethod:              query.CmdMethod_ShowProcessList,
			ShowProcessListRequest: &query.ShowProcessListRequest{SysTenant: true},
		})
		var out []string
		for _, sess := range resp.ShowProcessListResponse.GetSessions() {
			if sess.FromProxy && sess.Account != "" && sess.Account != "sys" {
				out = append(out, sess.Account)
			}
		}
		return out
	}
	if n := len(processList()); n != 0 {
		t.Fatalf("a fresh CN reports %d sessions", n)
	}
	if !c.cnByPod("cn-a", func(s *cnStore) {
		s.knobs.Sessions.Count = 3
		s.knobs.Replicas = 2
		s.knobs.Pipelines = 5
	}) {
		t.Fatal("cn-a not running")
	}
	if n := len(processList()); n != 3 {
		t.Fatalf("ShowProcessList: %d sessions, want 3", n)
	}
	r := sendQuery(t, qc, s.QueryAddress, &query.Request{
		CmdMethod: query.CmdMethod_GetReplicaCount, GetReplicaCount: query.GetReplicaCountRequest{}})
	if r.GetReplicaCount.Count != 2 {
		t.Errorf("GetReplicaCount = %d, want 2", r.GetReplicaCount.Count)
	}
	p := sendQuery(t, qc, s.QueryAddress, &query.Request{
		CmdMethod: query.CmdMethod_GetPipelineInfo, GetPipelineInfoRequest: &query.GetPipelineInfoRequest{}})
	if p.GetPipelineInfoResponse.GetCount() != 5 {
		t.Errorf("GetPipelineInfo = %d, want 5", p.GetPipelineInfoResponse.GetCount())
	}
	// A tenant's own view holds only its sessions (the CN's processList).
	other := sendQuery(t, qc, s.QueryAddress, &query.Request{
		CmdMethod:              query.CmdMethod_ShowProcessList,
		ShowProcessListRequest: &query.ShowProcessListRequest{Tenant: "someone-else"},
	})
	if n := len(other.ShowProcessListResponse.GetSessions()); n != 0 {
		t.Errorf("another tenant sees %d sessions", n)
	}
}

func mustLockClient(t *testing.T) morpc.RPCClient {
	t.Helper()
	cli, err := newLockClient()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

func sendLock(t *testing.T, cli morpc.RPCClient, addr string, req *lock.Request) *lock.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f, err := cli.Send(ctx, addr, req)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, err := f.Get()
	if err != nil {
		t.Fatal(err)
	}
	resp := v.(*lock.Response)
	if err := resp.UnwrapError(); err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestLockServiceOfTheTN(t *testing.T) {
	c := startTestCluster(t, nil)
	id := cnStoreUUID("cn-a", "h", c.namespace)
	c.syncStores([]cnSpec{{pod: "cn-a", podUID: "u1", uuid: id}},
		[]tnSpec{{pod: "tn-0", podUID: "t", uuid: tnStoreUUID("tn-0", "", false)}})
	d := details(t, operatorClient(t, c))
	if len(d.TNStores) != 1 {
		t.Fatalf("TN stores: %+v", d.TNStores)
	}
	addr := d.TNStores[0].LockServiceAddress
	lc := mustLockClient(t)
	can := func() bool {
		return sendLock(t, lc, addr, &lock.Request{Method: lock.Method_CanRestartService,
			CanRestartService: lock.CanRestartServiceRequest{ServiceID: id}}).CanRestartService.OK
	}
	remain := func() int32 {
		return sendLock(t, lc, addr, &lock.Request{Method: lock.Method_RemainTxnInService,
			RemainTxnInService: lock.RemainTxnInServiceRequest{ServiceID: id}}).RemainTxnInService.RemainTxn
	}
	setRestart := func() bool {
		return sendLock(t, lc, addr, &lock.Request{Method: lock.Method_SetRestartService,
			SetRestartService: lock.SetRestartServiceRequest{ServiceID: id}}).SetRestartService.OK
	}
	// A CN that never bound a lock table can restart at once.
	if !can() || remain() != 0 {
		t.Fatal("an unbound CN must be restartable with 0 remaining txns")
	}
	// A bound CN with 2 open transactions: not restartable until they are gone.
	c.cnByPod("cn-a", func(s *cnStore) { s.lock = lockKnobs{Bound: true, RemainTxns: 2} })
	if can() {
		t.Fatal("a bound CN in normal state must not be restartable")
	}
	if !setRestart() {
		t.Fatal("SetRestartService answers OK")
	}
	if can() || remain() != 2 {
		t.Fatal("a waiting CN with 2 txns: not restartable, 2 remaining")
	}
	c.cnByPod("cn-a", func(s *cnStore) { s.lock.RemainTxns = 0 })
	if !can() || remain() != 0 {
		t.Fatal("a waiting CN without txns becomes restartable")
	}
}

func TestHostsFileIsRewrittenInPlace(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base")
	if err := os.WriteFile(base, []byte("127.0.0.1 localhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHostsFile(filepath.Join(dir, "hosts"), base)
	if err := h.write(map[string]string{"a-log-discovery.ns.svc": "127.100.0.2", "b.ns.svc": "127.100.0.3"}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(h.path)
	if err := h.write(map[string]string{"a-log-discovery.ns.svc": "127.100.0.2"}); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(h.path)
	if !os.SameFile(before, after) {
		t.Fatal("the hosts file was replaced, not rewritten in place")
	}
	got, _ := os.ReadFile(h.path)
	want := "127.0.0.1 localhost\n" + hostsMarker + "\n127.100.0.2\ta-log-discovery.ns.svc\n"
	if string(got) != want {
		t.Fatalf("hosts file:\n%s\nwant:\n%s", got, want)
	}
	// A restart reading its own previous output as the base does not nest sections.
	h2 := newHostsFile(filepath.Join(dir, "hosts2"), h.path)
	if strings.Contains(string(h2.base), hostsMarker) {
		t.Fatal("base kept the served section")
	}
}

func readEvents(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("event log line is not JSON: %s", sc.Text())
		}
		for _, k := range []string{"time", "namespace", "service", "method"} {
			if _, ok := ev[k]; !ok {
				t.Fatalf("event without %q: %s", k, sc.Text())
			}
		}
		out = append(out, ev)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i]["time"].(string) < out[j]["time"].(string) })
	return out
}

func TestCNCreatesItsTaskServiceWhenAsked(t *testing.T) {
	c := startTestCluster(t, nil)
	id := cnStoreUUID("cn-a", "h", c.namespace)
	c.syncStores([]cnSpec{{pod: "cn-a", podUID: "u1", uuid: id}}, nil)
	// Once HAKeeper runs its task scheduler it asks every CN to create its task service;
	// the CN reports it in its heartbeats from then on.
	eventually(t, "HAKeeper to record the CN's task service", 20*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st, err := c.reader.GetClusterState(ctx)
		return err == nil && st.CNState.Stores[id].TaskServiceCreated
	})
}
