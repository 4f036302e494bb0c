// Command bench measures what the interposer adds, against a real
// apiserver: GET latency direct vs proxied (interleaved), per-event delay of
// a watch direct vs proxied, and the proxy's RSS. It uses client-go with
// protobuf, like the operator, so it also checks that protobuf clients
// decode the JSON the proxy negotiates.
//
//	go run ./cmd/bench --kubeconfig <apiserver> --proxy-kubeconfig <from --kubeconfig-out> --proxy-pid <pid>
//
// It creates a namespace of its own and deletes it at the end.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

func clientset(path string, json bool) (*kubernetes.Clientset, *rest.Config) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		fail(err)
	}
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf, */*"
	if json {
		cfg.ContentType = "application/json"
		cfg.AcceptContentTypes = "application/json"
	}
	cfg.QPS, cfg.Burst = 10000, 10000
	cfg.UserAgent = "Go-http-client/2.0"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fail(err)
	}
	return cs, cfg
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}

func rss(pid int) string {
	if pid <= 0 {
		return "n/a"
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "n/a"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			f := strings.Fields(l)
			kb, _ := strconv.Atoi(f[1])
			return fmt.Sprintf("%.1f MiB", float64(kb)/1024)
		}
	}
	return "n/a"
}

// cpuTime: user+system CPU time of pid from /proc/<pid>/stat (-1 if unknown).
func cpuTime(pid int) time.Duration {
	if pid <= 0 {
		return -1
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

func pct(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(q*float64(len(s)-1)+0.5)]
}

func summary(name string, d []time.Duration) {
	fmt.Printf("  %-28s n=%-4d p50=%-10v p99=%-10v max=%v\n", name, len(d),
		pct(d, 0.5).Round(time.Microsecond), pct(d, 0.99).Round(time.Microsecond), pct(d, 1).Round(time.Microsecond))
}

func main() {
	kc := flag.String("kubeconfig", "", "kubeconfig of the apiserver")
	pkc := flag.String("proxy-kubeconfig", "", "kubeconfig written by interposer --kubeconfig-out")
	pid := flag.Int("proxy-pid", 0, "pid of the interposer (for RSS)")
	n := flag.Int("gets", 500, "GETs per side")
	nev := flag.Int("events", 100, "ADDED events to watch")
	flag.Parse()
	if *kc == "" || *pkc == "" {
		fail(fmt.Errorf("--kubeconfig and --proxy-kubeconfig are required"))
	}
	ctx := context.Background()
	direct, _ := clientset(*kc, false)
	directJSON, _ := clientset(*kc, true)
	proxied, _ := clientset(*pkc, false)
	fmt.Printf("proxy RSS idle: %s\n", rss(*pid))

	ns := fmt.Sprintf("interposer-bench-%04d", rand.Intn(10000))
	if _, err := direct.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		fail(err)
	}
	defer direct.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bench", Labels: map[string]string{"x": "y"}}, Data: map[string]string{"k": strings.Repeat("v", 512)}}
	if _, err := proxied.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		fail(fmt.Errorf("create through the proxy: %v", err))
	}

	// warm both connections
	for i := 0; i < 20; i++ {
		direct.CoreV1().ConfigMaps(ns).Get(ctx, "bench", metav1.GetOptions{})
		proxied.CoreV1().ConfigMaps(ns).Get(ctx, "bench", metav1.GetOptions{})
	}
	for i := 0; i < 20; i++ {
		directJSON.CoreV1().ConfigMaps(ns).Get(ctx, "bench", metav1.GetOptions{})
	}
	var dGet, jGet, pGet []time.Duration
	cpu0 := cpuTime(*pid)
	for i := 0; i < *n; i++ {
		t0 := time.Now()
		if _, err := directJSON.CoreV1().ConfigMaps(ns).Get(ctx, "bench", metav1.GetOptions{}); err != nil {
			fail(err)
		}
		jGet = append(jGet, time.Since(t0))
		t0 = time.Now()
		if _, err := direct.CoreV1().ConfigMaps(ns).Get(ctx, "bench", metav1.GetOptions{}); err != nil {
			fail(err)
		}
		dGet = append(dGet, time.Since(t0))
		t0 = time.Now()
		got, err := proxied.CoreV1().ConfigMaps(ns).Get(ctx, "bench", metav1.GetOptions{})
		if err != nil {
			fail(err)
		}
		if got.Labels["x"] != "y" {
			fail(fmt.Errorf("proxied GET decoded wrong: %+v", got.ObjectMeta))
		}
		pGet = append(pGet, time.Since(t0))
	}
	fmt.Printf("GET configmap, %d interleaved each side (client-go, protobuf Accept, HTTP/2 keep-alive):\n", *n)
	summary("direct (protobuf)", dGet)
	summary("direct (JSON Accept)", jGet)
	summary("through interposer", pGet)
	if cpu1 := cpuTime(*pid); cpu0 >= 0 && cpu1 >= 0 {
		fmt.Printf("  interposer CPU: %v for %d GETs = %v per GET (user+sys, 10ms ticks)\n", cpu1-cpu0, *n, (cpu1-cpu0)/time.Duration(*n))
	}

	// the same GETs from 8 concurrent goroutines: CPU per request amortized
	const workers = 8
	per := *n / workers
	cpuC := cpuTime(*pid)
	t0 := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				if _, err := proxied.CoreV1().ConfigMaps(ns).Get(ctx, "bench", metav1.GetOptions{}); err != nil {
					fail(err)
				}
			}
		}()
	}
	wg.Wait()
	if cpu1 := cpuTime(*pid); cpuC >= 0 && cpu1 >= 0 {
		fmt.Printf("  %d concurrent clients, %d GETs through interposer in %v: interposer CPU %v = %v per GET\n",
			workers, workers*per, time.Since(t0).Round(time.Millisecond), cpu1-cpuC, (cpu1-cpuC)/time.Duration(workers*per))
	}

	// an informer-shaped LIST through the proxy
	l, err := proxied.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 500, ResourceVersion: "0"})
	if err != nil {
		fail(err)
	}
	fmt.Printf("LIST through interposer: %d items, rv %s\n", len(l.Items), l.ResourceVersion)

	// watches
	rv := l.ResourceVersion
	wd, err := direct.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
	if err != nil {
		fail(err)
	}
	wp, err := proxied.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
	if err != nil {
		fail(err)
	}
	var mu sync.Mutex
	recvD, recvP := map[string]time.Time{}, map[string]time.Time{}
	collect := func(w watch.Interface, into map[string]time.Time, done chan struct{}) {
		defer close(done)
		for ev := range w.ResultChan() {
			if ev.Type != watch.Added {
				continue
			}
			c, ok := ev.Object.(*corev1.ConfigMap)
			if !ok {
				fail(fmt.Errorf("watch decoded %T", ev.Object))
			}
			mu.Lock()
			into[c.Name] = time.Now()
			k := 0
			for name := range into {
				if strings.HasPrefix(name, "ev-") {
					k++
				}
			}
			mu.Unlock()
			if k >= *nev {
				return
			}
		}
	}
	cpuW := cpuTime(*pid)
	doneD, doneP := make(chan struct{}), make(chan struct{})
	go collect(wd, recvD, doneD)
	go collect(wp, recvP, doneP)
	time.Sleep(300 * time.Millisecond)
	sent := map[string]time.Time{}
	for i := 0; i < *nev; i++ {
		name := fmt.Sprintf("ev-%03d", i)
		c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"i": strconv.Itoa(i)}}
		mu.Lock()
		sent[name] = time.Now()
		mu.Unlock()
		if _, err := direct.CoreV1().ConfigMaps(ns).Create(ctx, c, metav1.CreateOptions{}); err != nil {
			fail(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	timeout := time.After(30 * time.Second)
	for _, d := range []chan struct{}{doneD, doneP} {
		select {
		case <-d:
		case <-timeout:
			fail(fmt.Errorf("watch events missing: direct %d proxied %d", len(recvD), len(recvP)))
		}
	}
	wd.Stop()
	wp.Stop()
	var evD, evP, extra []time.Duration
	mu.Lock()
	for name, t0 := range sent {
		evD = append(evD, recvD[name].Sub(t0))
		evP = append(evP, recvP[name].Sub(t0))
		extra = append(extra, recvP[name].Sub(recvD[name]))
	}
	mu.Unlock()
	fmt.Printf("watch: %d ADDED events, delay from create sent to event received (client-go watch, protobuf Accept):\n", *nev)
	summary("direct", evD)
	summary("through interposer", evP)
	summary("proxied minus direct", extra)
	if cpu1 := cpuTime(*pid); cpuW >= 0 && cpu1 >= 0 {
		fmt.Printf("  interposer CPU during the watch phase: %v (10ms ticks)\n", cpu1-cpuW)
	}
	fmt.Printf("proxy RSS after run: %s\n", rss(*pid))
}
