package main

// Faults a scenario injects, as the operator's own clients see them.

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matrixorigin/matrixone/pkg/logservice"
	"github.com/matrixorigin/matrixone/pkg/pb/lock"
	"github.com/matrixorigin/matrixone/pkg/pb/query"
)

func refused(t *testing.T, addr string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err == nil {
		_ = conn.Close()
		t.Fatalf("%s accepted a connection while down (refuse)", addr)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial %s while down (refuse): %v, want connection refused", addr, err)
	}
}

func clusterDetailsWithin(cli logservice.ProxyHAKeeperClient, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_, err := cli.GetClusterDetails(ctx)
	return err
}

func eventNames(t *testing.T, path, service string) []string {
	t.Helper()
	var out []string
	for _, ev := range readEvents(t, path) {
		if ev["service"] == service {
			out = append(out, ev["method"].(string))
		}
	}
	return out
}

func TestHAKeeperDownIsRefusedToTheOperatorOnly(t *testing.T) {
	c := startTestCluster(t, nil)
	id := cnStoreUUID("cn-a", "h", c.namespace)
	c.syncStores([]cnSpec{{pod: "cn-a", podUID: "u1", uuid: id}}, nil)
	cli := operatorClient(t, c)
	details(t, cli)

	view, err := c.setFault(componentHAKeeper, faultRefuse)
	if err != nil {
		t.Fatal(err)
	}
	addr := c.ip + ":32001"
	if len(view.Addresses) != 1 || view.Addresses[0] != addr {
		t.Fatalf("fault addresses %v, want [%s]", view.Addresses, addr)
	}
	refused(t, addr)
	// The operator's client connected before the fault: its connection is cut.
	if err := clusterDetailsWithin(cli, 3*time.Second); err == nil {
		t.Fatal("the operator's HAKeeper client still answered with HAKeeper down")
	}
	// A client built now (the operator after a restart) cannot discover HAKeeper.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if fresh, err := logservice.NewProxyHAKeeperClient(ctx, "", logservice.HAKeeperClientConfig{
		DiscoveryAddress: addr,
	}); err == nil {
		_ = fresh.Close()
		t.Fatal("a new HAKeeper client was built with HAKeeper down")
	}
	// HAKeeper itself runs on: the stores heartbeat, the double's own view reads it.
	d, _, err := c.clusterDetails()
	if err != nil {
		t.Fatalf("the double's own view of HAKeeper: %v", err)
	}
	if _, ok := cnStoreOf(d, id); !ok {
		t.Fatalf("CN store %s left HAKeeper while only the operator's path was down", id)
	}
	if got := c.faultList(); len(got) != 1 || got[0].Component != componentHAKeeper || got[0].How != faultRefuse {
		t.Fatalf("faultList = %+v", got)
	}

	if _, err := c.clearFault(componentHAKeeper); err != nil {
		t.Fatal(err)
	}
	// The operator's client built before the fault recovers on its own.
	eventually(t, "the operator's client to reach HAKeeper again", 20*time.Second, func() bool {
		return clusterDetailsWithin(cli, 2*time.Second) == nil
	})
	if got := c.faultList(); len(got) != 0 {
		t.Fatalf("faultList after up = %+v", got)
	}
	names := strings.Join(eventNames(t, c.eventsPath, svcDouble), ",")
	if !strings.Contains(names, "faultDown") || !strings.Contains(names, "faultUp") {
		t.Fatalf("double events %s: want faultDown and faultUp", names)
	}
}

func TestLockServiceHangsUntilUp(t *testing.T) {
	c := startTestCluster(t, nil)
	id := cnStoreUUID("cn-a", "h", c.namespace)
	c.syncStores([]cnSpec{{pod: "cn-a", podUID: "u1", uuid: id}},
		[]tnSpec{{pod: "tn-0", podUID: "t", uuid: tnStoreUUID("tn-0", "", false)}})
	addr := c.ip + ":6003"
	lc := mustLockClient(t)
	canRestart := func(d time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		f, err := lc.Send(ctx, addr, &lock.Request{Method: lock.Method_CanRestartService,
			CanRestartService: lock.CanRestartServiceRequest{ServiceID: id}})
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.Get()
		return err
	}
	if err := canRestart(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := c.setFault(componentLockService, faultHang); err != nil {
		t.Fatal(err)
	}
	// A connection is taken (the kernel's handshake) but nothing ever answers.
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial %s while hanging: %v (want a connection nobody answers)", addr, err)
	}
	_ = conn.Close()
	// The client's connection from before the fault was cut: calls on it fail at once
	// until the client has noticed and dials anew (how long that takes depends on the
	// machine's load: 3 quick tries were not always enough); on a new connection a call
	// runs into the caller's timeout.
	hung := false
	for deadline := time.Now().Add(15 * time.Second); !hung && time.Now().Before(deadline); {
		start := time.Now()
		if err := canRestart(time.Second); err == nil {
			t.Fatal("the lock service answered while hanging")
		}
		hung = time.Since(start) >= 900*time.Millisecond
		if !hung {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if !hung {
		t.Fatal("every call to the hanging lock service failed at once: want the caller's timeout")
	}
	if _, err := c.clearFault(componentLockService); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the lock service to answer again", 20*time.Second, func() bool {
		return canRestart(2*time.Second) == nil
	})
}

func TestQueryFaultStaysWithItsPod(t *testing.T) {
	c := startTestCluster(t, nil)
	a := cnSpec{pod: "cn-a", podUID: "u1", uuid: cnStoreUUID("cn-a", "h", c.namespace)}
	b := cnSpec{pod: "cn-b", podUID: "u2", uuid: cnStoreUUID("cn-b", "h", c.namespace)}
	c.syncStores([]cnSpec{a, b}, nil)
	queryAddr := func(pod string) (addr string) {
		c.cnByPod(pod, func(s *cnStore) { addr = s.queryAddr })
		return addr
	}
	qc := mustQueryClient(t)
	replicas := func(addr string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		f, err := qc.Send(ctx, addr, &query.Request{
			CmdMethod: query.CmdMethod_GetReplicaCount, GetReplicaCount: query.GetReplicaCountRequest{}})
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.Get()
		return err
	}
	if _, err := c.setFault("query/nope", faultRefuse); err == nil {
		t.Fatal("a fault on the query service of a pod with no CN store landed")
	}
	if _, err := c.setFault("cn-a", faultRefuse); err == nil {
		t.Fatal("an unknown component was accepted")
	}
	if _, err := c.setFault("query/cn-a", faultRefuse); err != nil {
		t.Fatal(err)
	}
	refused(t, queryAddr("cn-a"))
	if err := replicas(queryAddr("cn-b")); err != nil {
		t.Fatalf("cn-b's query service, not faulted: %v", err)
	}
	// cn-a's pod is replaced (a new incarnation, same name): its new CN starts down.
	c.syncStores([]cnSpec{{pod: "cn-a", podUID: "u3", uuid: a.uuid}, b}, nil)
	if !c.hasCN("cn-a", "u3") {
		t.Fatal("the new cn-a store did not start")
	}
	refused(t, queryAddr("cn-a"))
	if _, err := c.clearFault("query/cn-a"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "cn-a's query service to answer again", 20*time.Second, func() bool {
		return replicas(queryAddr("cn-a")) == nil
	})
}

func TestFaultsThroughTheControlInterface(t *testing.T) {
	d, api, _ := startFakeDouble(t)
	api.put(podsPath, "ADDED", podObject("n1", "cn-1", "CNSet", "Running", "p1"))
	api.put(logSetsPath, "ADDED", logSetObject("n1", "mo"))
	eventually(t, "n1's cluster with cn-1", 20*time.Second, func() bool {
		c, ok := d.cluster("n1")
		return ok && c.hasCN("cn-1", "p1")
	})
	ctl := httptest.NewServer(d.controlHandler())
	defer ctl.Close()
	call := func(method, path, body string) (int, map[string]any) {
		req, _ := http.NewRequest(method, ctl.URL+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	for path, want := range map[string]int{
		"/v1/namespaces/n1/faults/hakeeper":    200,
		"/v1/namespaces/n1/faults/query/cn-1":  200,
		"/v1/namespaces/n1/faults/query/nope":  404,
		"/v1/namespaces/n1/faults/lockservice": 404, // no DN pod runs
		"/v1/namespaces/n1/faults/etcd":        400,
		"/v1/namespaces/zz/faults/hakeeper":    404,
	} {
		if code, out := call(http.MethodPut, path, `{"mode": "down"}`); code != want {
			t.Errorf("PUT %s down: %d %v, want %d", path, code, out, want)
		}
	}
	for body, want := range map[string]int{
		`{"mode": "sideways"}`:             400,
		`{"mode": "down", "how": "maybe"}`: 400,
		`{"mode": "down", "for": 3}`:       400,
		`{"mode": "down", "how": "hang"}`:  200,
	} {
		if code, out := call(http.MethodPut, "/v1/namespaces/n1/faults/hakeeper", body); code != want {
			t.Errorf("PUT hakeeper %s: %d %v, want %d", body, code, out, want)
		}
	}
	code, out := call(http.MethodGet, "/v1/namespaces/n1/faults", "")
	faults, _ := out["faults"].([]any)
	if code != 200 || len(faults) != 2 {
		t.Fatalf("GET faults: %d %v, want hakeeper and query/cn-1", code, out)
	}
	if first := faults[0].(map[string]any); first["component"] != "hakeeper" || first["how"] != "hang" {
		t.Fatalf("GET faults: first %v, want hakeeper hanging", first)
	}
	// A component made unreachable on purpose is no outage of the double: it stays healthy.
	if code, out := call(http.MethodGet, "/healthz", ""); code != 200 {
		t.Fatalf("healthz with faults standing: %d %v", code, out)
	}
	for _, path := range []string{
		"/v1/namespaces/n1/faults/hakeeper", "/v1/namespaces/n1/faults/query/cn-1",
		"/v1/namespaces/n1/faults/hakeeper", // again: nothing to do
		"/v1/namespaces/zz/faults/hakeeper", // a namespace gone: nothing to do
	} {
		if code, out := call(http.MethodPut, path, `{"mode": "up"}`); code != 200 {
			t.Errorf("PUT %s up: %d %v", path, code, out)
		}
	}
	if code, out := call(http.MethodGet, "/v1/namespaces/n1/faults", ""); code != 200 ||
		len(out["faults"].([]any)) != 0 {
		t.Fatalf("GET faults after up: %d %v", code, out)
	}
}
