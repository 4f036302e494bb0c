// Command matrixone-double serves MatrixOne's control plane, as the matrixone-operator
// sees it over morpc, for every namespace of a Kubernetes cluster that has a LogSet: a
// real HAKeeper (MatrixOne's own log service, in memory) fed with heartbeats of one CN
// store per Running CN pod and one TN store per Running DN pod, the TN's lock service
// and each CN's query service. It is a test double for mo-chaos's embedded cluster,
// where no MatrixOne process can run.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/matrixorigin/matrixone/pkg/logutil"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "probe" {
		if err := runProbe(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "matrixone-double probe:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "matrixone-double:", err)
		os.Exit(2)
	}
}

func run() error {
	var (
		kubeconfig  = flag.String("kubeconfig", "", "kubeconfig of the cluster to watch (required)")
		stateDir    = flag.String("state-dir", "", "folder for hosts, namespaces.json, events.jsonl, logs (required)")
		control     = flag.String("control-address", "127.0.0.1:0", "HTTP control address; port 0 picks one (written to <state-dir>/control-address)")
		pool        = flag.String("address-pool", "127.100.0.0/16", "loopback addresses handed to namespaces, one each")
		heartbeat   = flag.Duration("heartbeat-interval", time.Second, "CN/TN heartbeat interval (a CN's default: 1s)")
		cnTimeout   = flag.Duration("cn-store-timeout", 30*time.Second, "HAKeeper's CN store timeout (MatrixOne's default: 30s)")
		tnTimeout   = flag.Duration("tn-store-timeout", 10*time.Second, "HAKeeper's TN store timeout (MatrixOne's default: 10s)")
		check       = flag.Duration("hakeeper-check-interval", 3*time.Second, "HAKeeper's health-check interval (MatrixOne's default: 3s)")
		poll        = flag.Duration("poll-interval", 250*time.Millisecond, "how often the double reads HAKeeper to log store changes")
		rtt         = flag.Uint64("rtt-millisecond", 10, "raft RTT of the in-memory log stores (MatrixOne's tests: 10)")
		logLevel    = flag.String("mo-log-level", "warn", "level of MatrixOne's own log (<state-dir>/matrixone.log)")
		hostsSource = flag.String("base-hosts", "/etc/hosts", "hosts file copied at the top of <state-dir>/hosts")
	)
	flag.Parse()
	if *kubeconfig == "" || *stateDir == "" {
		return fmt.Errorf("--kubeconfig and --state-dir are required")
	}
	prefix, err := netip.ParsePrefix(*pool)
	if err != nil || !prefix.Addr().IsLoopback() {
		return fmt.Errorf("--address-pool %q: give a loopback CIDR such as 127.100.0.0/16", *pool)
	}
	if err := os.MkdirAll(*stateDir, 0o755); err != nil {
		return err
	}
	logutil.SetupMOLogger(&logutil.LogConfig{
		Level: *logLevel, Format: "json", MaxSize: 64, MaxBackups: 2,
		Filename: filepath.Join(*stateDir, "matrixone.log"),
	})
	kube, err := newKubeClient(*kubeconfig)
	if err != nil {
		return err
	}
	events, err := openEventLog(filepath.Join(*stateDir, "events.jsonl"))
	if err != nil {
		return err
	}
	defer events.close()

	cfg := config{
		stateDir: *stateDir, addressPool: prefix, baseHostsFile: *hostsSource,
		cluster: clusterOptions{
			heartbeatInterval: *heartbeat, pollInterval: *poll,
			hakeeper: hakeeperOptions{
				cnStoreTimeout: *cnTimeout, tnStoreTimeout: *tnTimeout,
				checkInterval: *check, rttMillisecond: *rtt,
			},
		},
	}
	d := newDouble(cfg, kube, events)
	ln, err := net.Listen("tcp", *control)
	if err != nil {
		return fmt.Errorf("control address %s: %w", *control, err)
	}
	d.control = ln.Addr().String()
	srv := &http.Server{Handler: d.controlHandler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	if err := os.WriteFile(filepath.Join(*stateDir, "control-address"), []byte(d.control+"\n"), 0o644); err != nil {
		return err
	}
	events.emit("", svcDouble, "started", map[string]any{
		"pid": os.Getpid(), "controlAddress": d.control, "addressPool": prefix.String()})

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	d.run(ctx)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	_ = os.Remove(filepath.Join(*stateDir, "control-address"))
	events.emit("", svcDouble, "stopped", map[string]any{"pid": os.Getpid()})
	return nil
}
