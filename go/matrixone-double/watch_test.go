package main

// The double as a whole against a fake apiserver: LogSets and pods drive clusters and
// stores, files and the control interface follow, a watch that expired relists.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

type fakeResource struct {
	objects  map[string]map[string]any
	watchers []chan string
}

// fakeAPI serves list+watch of pods and logsets and GET of cnsets.
type fakeAPI struct {
	mu        sync.Mutex
	rv        int
	compacted int // a watch from a version below this gets 410 Gone
	res       map[string]*fakeResource
	lists     map[string]int
	cnsets    map[string]map[string]any
}

func newFakeAPI() *fakeAPI {
	return &fakeAPI{
		res:    map[string]*fakeResource{podsPath: {objects: map[string]map[string]any{}}, logSetsPath: {objects: map[string]map[string]any{}}},
		lists:  map[string]int{},
		cnsets: map[string]map[string]any{},
	}
}

func (f *fakeAPI) put(path, kind string, obj map[string]any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rv++
	meta := obj["metadata"].(map[string]any)
	meta["resourceVersion"] = strconv.Itoa(f.rv)
	key := meta["namespace"].(string) + "/" + meta["name"].(string)
	r := f.res[path]
	if kind == "DELETED" {
		delete(r.objects, key)
	} else {
		r.objects[key] = obj
	}
	line, _ := json.Marshal(map[string]any{"type": kind, "object": obj})
	for _, w := range r.watchers {
		w <- string(line)
	}
}

// expire drops every watcher's stream with 410 Gone and forgets history before now.
func (f *fakeAPI) expire(path string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.compacted = f.rv + 1
	for _, w := range f.res[path].watchers {
		close(w)
	}
	f.res[path].watchers = nil
}

func (f *fakeAPI) listCount(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lists[path]
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.Contains(r.URL.Path, "/cnsets/") {
		f.mu.Lock()
		obj, ok := f.cnsets[r.URL.Path]
		f.mu.Unlock()
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"kind":"Status","code":404,"message":"not found"}`))
			return
		}
		_ = json.NewEncoder(w).Encode(obj)
		return
	}
	f.mu.Lock()
	r0, ok := f.res[r.URL.Path]
	if !ok {
		f.mu.Unlock()
		w.WriteHeader(http.StatusNotFound)
		return
	}
	if r.URL.Query().Get("watch") == "" {
		f.lists[r.URL.Path]++
		items := make([]map[string]any, 0, len(r0.objects))
		for _, o := range r0.objects {
			items = append(items, o)
		}
		rv := f.rv
		f.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{
			"metadata": map[string]any{"resourceVersion": strconv.Itoa(rv)}, "items": items})
		return
	}
	from, _ := strconv.Atoi(r.URL.Query().Get("resourceVersion"))
	if from < f.compacted-1 {
		f.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"type": "ERROR",
			"object": map[string]any{"kind": "Status", "code": 410, "message": "too old resource version"}})
		return
	}
	ch := make(chan string, 100)
	r0.watchers = append(r0.watchers, ch)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case line, ok := <-ch:
			if !ok {
				_ = json.NewEncoder(w).Encode(map[string]any{"type": "ERROR",
					"object": map[string]any{"kind": "Status", "code": 410, "message": "expired"}})
				return
			}
			_, _ = w.Write([]byte(line + "\n"))
			w.(http.Flusher).Flush()
		}
	}
}

func podObject(ns, name, component, phase, uid string) map[string]any {
	return map[string]any{
		"metadata": map[string]any{"name": name, "namespace": ns, "uid": uid,
			"labels": map[string]any{componentLabel: component, instanceLabel: "cn"}},
		"spec":   map[string]any{"subdomain": "cn-headless"},
		"status": map[string]any{"phase": phase},
	}
}

func logSetObject(ns, name string) map[string]any {
	return map[string]any{"metadata": map[string]any{"name": name, "namespace": ns, "uid": "ls"}}
}

func startFakeDouble(t *testing.T) (*double, *fakeAPI, string) {
	t.Helper()
	api := newFakeAPI()
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	cfgText := fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: fake
clusters: [{name: fake, cluster: {server: %q}}]
contexts: [{name: fake, context: {cluster: fake, user: fake}}]
users: [{name: fake, user: {token: t0k3n}}]
`, srv.URL)
	if err := os.WriteFile(kc, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	kube, err := newKubeClient(kc)
	if err != nil {
		t.Fatal(err)
	}
	events, err := openEventLog(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(dir, "base-hosts")
	_ = os.WriteFile(base, []byte("127.0.0.1 localhost\n"), 0o644)
	d := newDouble(config{
		stateDir: dir, addressPool: netip.MustParsePrefix("127.102.0.0/16"), baseHostsFile: base,
		cluster: clusterOptions{
			heartbeatInterval: 200 * time.Millisecond, pollInterval: 100 * time.Millisecond,
			hakeeper: hakeeperOptions{cnStoreTimeout: 30 * time.Second, tnStoreTimeout: 10 * time.Second,
				checkInterval: time.Second, rttMillisecond: 10},
		},
	}, kube, events)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = events.close()
	})
	return d, api, dir
}

func TestDoubleFollowsLogSetsAndPods(t *testing.T) {
	d, api, dir := startFakeDouble(t)
	api.cnsets["/apis/core.matrixorigin.io/v1alpha1/namespaces/n1/cnsets/cn"] = map[string]any{
		"spec": map[string]any{"scalingConfig": map[string]any{"storeDrainEnabled": true}}}
	api.put(podsPath, "ADDED", podObject("n1", "cn-1", "CNSet", "Running", "p1"))
	api.put(podsPath, "ADDED", podObject("n1", "cn-2", "CNSet", "Pending", "p2"))
	api.put(podsPath, "ADDED", podObject("n2", "cn-3", "CNSet", "Running", "p3"))
	// No LogSet yet: no cluster anywhere.
	time.Sleep(300 * time.Millisecond)
	if _, ok := d.cluster("n1"); ok {
		t.Fatal("a cluster started in a namespace without a LogSet")
	}
	api.put(logSetsPath, "ADDED", logSetObject("n1", "mo"))
	var c *moCluster
	eventually(t, "a cluster for n1", 20*time.Second, func() bool {
		var ok bool
		c, ok = d.cluster("n1")
		return ok
	})
	if _, ok := d.cluster("n2"); ok {
		t.Fatal("namespace n2 has no LogSet but got a cluster")
	}
	uuid1 := cnStoreUUID("cn-1", "cn-headless", "n1")
	eventually(t, "cn-1 registered as Draining", 10*time.Second, func() bool {
		dt, _, err := c.clusterDetails()
		if err != nil {
			return false
		}
		s, ok := cnStoreOf(dt, uuid1)
		return ok && s.WorkState.String() == "Draining" && len(dt.CNStores) == 1
	})
	// The Pending pod starts running: its store appears.
	api.put(podsPath, "MODIFIED", podObject("n1", "cn-2", "CNSet", "Running", "p2"))
	eventually(t, "cn-2 registered", 10*time.Second, func() bool { return c.hasCN("cn-2", "p2") })

	// Files: the discovery name in the hosts file, the namespace in namespaces.json.
	eventually(t, "hosts entry", 5*time.Second, func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "hosts"))
		return bytes.Contains(b, []byte(c.ip+"\tmo-log-discovery.n1.svc\n"))
	})
	var nsFile namespacesFile
	eventually(t, "namespaces.json lists cn-1 and cn-2", 5*time.Second, func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "namespaces.json"))
		if json.Unmarshal(b, &nsFile) != nil {
			return false
		}
		info := nsFile.Namespaces["n1"]
		return info.State == "running" && len(info.CNStores) == 2
	})
	if got := nsFile.Namespaces["n1"].CNStores["cn-1"].UUID; got != uuid1 {
		t.Errorf("namespaces.json cn-1 uuid %s, want %s", got, uuid1)
	}

	// The control interface.
	ctl := httptest.NewServer(d.controlHandler())
	defer ctl.Close()
	put := func(path, body string) (int, map[string]any) {
		req, _ := http.NewRequest(http.MethodPut, ctl.URL+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	if code, out := put("/v1/namespaces/n1/pods/cn-1/sessions", `{"count": 4}`); code != 200 {
		t.Fatalf("set sessions: %d %v", code, out)
	}
	knobs, _, _ := c.queryKnobs(uuid1)
	if knobs.Sessions.Count != 4 {
		t.Fatalf("sessions knob %d, want 4", knobs.Sessions.Count)
	}
	for path, want := range map[string]int{
		"/v1/namespaces/n1/pods/cn-1/sessions":  400, // body below is bad
		"/v1/namespaces/n1/pods/nope/sessions":  404,
		"/v1/namespaces/zz/pods/cn-1/sessions":  404,
		"/v1/namespaces/n1/pods/cn-1/replicas":  400,
		"/v1/namespaces/n1/pods/cn-1/pipelines": 400,
	} {
		if code, out := put(path, `{"count": -1}`); code != want {
			t.Errorf("PUT %s: %d %v, want %d", path, code, out, want)
		}
	}
	resp, err := http.Get(ctl.URL + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	_ = resp.Body.Close()

	// The pod is deleted: its heartbeats stop.
	api.put(podsPath, "DELETED", podObject("n1", "cn-1", "CNSet", "Running", "p1"))
	eventually(t, "cn-1's store stopped", 5*time.Second, func() bool { return !c.hasCN("cn-1", "p1") })

	// The LogSet is deleted: the cluster goes, its names leave the hosts file.
	api.put(logSetsPath, "DELETED", logSetObject("n1", "mo"))
	eventually(t, "n1's cluster torn down", 10*time.Second, func() bool {
		_, ok := d.cluster("n1")
		return !ok
	})
	eventually(t, "hosts entry removed", 5*time.Second, func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "hosts"))
		return !bytes.Contains(b, []byte("mo-log-discovery.n1.svc"))
	})
}

func TestExpiredWatchRelists(t *testing.T) {
	d, api, _ := startFakeDouble(t)
	api.put(podsPath, "ADDED", podObject("n1", "cn-1", "CNSet", "Running", "p1"))
	eventually(t, "first list", 5*time.Second, func() bool { return api.listCount(podsPath) >= 1 })
	eventually(t, "pod cached", 5*time.Second, func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		_, ok := d.pods["n1/cn-1"]
		return ok
	})
	// History is compacted while the pod is deleted and another added unseen.
	api.mu.Lock()
	delete(api.res[podsPath].objects, "n1/cn-1")
	api.mu.Unlock()
	api.put(podsPath, "ADDED", podObject("n1", "cn-9", "CNSet", "Running", "p9"))
	api.expire(podsPath)
	eventually(t, "relist after 410", 10*time.Second, func() bool { return api.listCount(podsPath) >= 2 })
	eventually(t, "cache replaced by the relist", 5*time.Second, func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		_, old := d.pods["n1/cn-1"]
		_, fresh := d.pods["n1/cn-9"]
		return !old && fresh
	})
}

func TestRecreatedLogSetIsANewCluster(t *testing.T) {
	d, api, _ := startFakeDouble(t)
	api.put(logSetsPath, "ADDED", logSetObject("n1", "mo"))
	var first *moCluster
	eventually(t, "a cluster for n1", 20*time.Second, func() bool {
		var ok bool
		first, ok = d.cluster("n1")
		return ok
	})
	// Deleted and created again before the double reconciles: a new UID.
	recreated := logSetObject("n1", "mo")
	recreated["metadata"].(map[string]any)["uid"] = "ls-2"
	api.put(logSetsPath, "MODIFIED", recreated)
	eventually(t, "a fresh cluster for the new LogSet", 20*time.Second, func() bool {
		c, ok := d.cluster("n1")
		return ok && c != first && c.log.uuid != first.log.uuid
	})
}
