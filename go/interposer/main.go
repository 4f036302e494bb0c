// Command interposer is a reverse proxy between a Kubernetes operator and
// the kube-apiserver that lets mo-chaos hold, fail and reorder what the
// operator writes and sees. See README.md.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	_ "net/http/pprof" // only served with --debug-pprof
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

type Config struct {
	Listen             string
	SANs               []string
	CertOut            string
	KubeconfigOut      string
	Advertise          string
	UpstreamKubeconfig string
	UpstreamContext    string
	Identity           string
	AddrOut            string
	Control            string
	ControlOut         string
	Journal            string
	Verbose            bool
	Pprof              string
}

func parseFlags(args []string, stderr io.Writer) (*Config, error) {
	fs := flag.NewFlagSet("interposer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &Config{}
	var sans listFlag
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:0", "address of the proxy (TLS; port 0 picks one)")
	fs.Var(&sans, "san", "extra subject alternative name of the proxy's certificate (IP or DNS; repeatable, comma lists allowed; 127.0.0.1 and localhost are always included)")
	fs.StringVar(&c.CertOut, "cert-out", "", "write the proxy's CA certificate (PEM) here")
	fs.StringVar(&c.KubeconfigOut, "kubeconfig-out", "", "write a kubeconfig for the operator pointing at the proxy here")
	fs.StringVar(&c.Advertise, "advertise", "127.0.0.1", "host name or IP put in the kubeconfig written by --kubeconfig-out")
	fs.StringVar(&c.UpstreamKubeconfig, "upstream-kubeconfig", "", "kubeconfig of the real apiserver (required)")
	fs.StringVar(&c.UpstreamContext, "upstream-context", "", "context in --upstream-kubeconfig (default: current-context)")
	fs.StringVar(&c.Identity, "identity", "upstream", "upstream: drop the client's Authorization and use the kubeconfig's credentials; forward: keep the client's Authorization (only the CA comes from the kubeconfig)")
	fs.StringVar(&c.AddrOut, "addr-out", "", "write the proxy's host:port here once listening")
	fs.StringVar(&c.Control, "control", "127.0.0.1:0", "control API address: host:port or unix:/path")
	fs.StringVar(&c.ControlOut, "control-out", "", "write the control API's address here (host:port or unix:/path)")
	fs.StringVar(&c.Journal, "journal", "", "append the JSON-lines journal to this file")
	fs.BoolVar(&c.Verbose, "v", false, "log proxy errors to stderr")
	fs.StringVar(&c.Pprof, "debug-pprof", "", "serve net/http/pprof on this address (debugging only)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if c.UpstreamKubeconfig == "" {
		return nil, errors.New("--upstream-kubeconfig is required")
	}
	if c.Identity != "upstream" && c.Identity != "forward" {
		return nil, fmt.Errorf("--identity must be upstream or forward, not %q", c.Identity)
	}
	c.SANs = append([]string{"127.0.0.1", "localhost"}, sans...)
	if c.Advertise != "" {
		c.SANs = append(c.SANs, c.Advertise)
	}
	return c, nil
}

// App is one running interposer: the TLS proxy and the control API.
type App struct {
	cfg      *Config
	j        *Journal
	rules    *RuleSet
	stats    *Stats
	proxy    *Proxy
	cert     *frontCert
	ln       net.Listener
	ctrlLn   net.Listener
	srv      *http.Server
	ctrlSrv  *http.Server
	Addr     string
	CtrlAddr string
}

func newApp(cfg *Config) (*App, error) {
	up, err := loadUpstream(cfg.UpstreamKubeconfig, cfg.UpstreamContext, cfg.Identity)
	if err != nil {
		return nil, err
	}
	j, err := newJournal(cfg.Journal)
	if err != nil {
		return nil, err
	}
	cert, err := makeFrontCert(cfg.SANs)
	if err != nil {
		return nil, err
	}
	a := &App{cfg: cfg, j: j, rules: newRuleSet(j), stats: newStats(), cert: cert}
	errLog := log.New(io.Discard, "", 0)
	if cfg.Verbose {
		errLog = log.New(os.Stderr, "interposer: ", log.LstdFlags)
	}
	a.proxy = newProxy(up, j, a.rules, a.stats, errLog)

	if a.ln, err = net.Listen("tcp", cfg.Listen); err != nil {
		return nil, err
	}
	if strings.HasPrefix(cfg.Control, "unix:") {
		path := strings.TrimPrefix(cfg.Control, "unix:")
		os.Remove(path)
		a.ctrlLn, err = net.Listen("unix", path)
		a.CtrlAddr = "unix:" + path
	} else {
		a.ctrlLn, err = net.Listen("tcp", cfg.Control)
		if err == nil {
			a.CtrlAddr = a.ctrlLn.Addr().String()
		}
	}
	if err != nil {
		a.ln.Close()
		return nil, err
	}
	a.Addr = a.ln.Addr().String()
	a.srv = &http.Server{
		Handler:           a.proxy,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       5 * time.Minute,
		ErrorLog:          errLog,
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{cert.tls},
			NextProtos:   []string{"h2", "http/1.1"},
			MinVersion:   tls.VersionTLS12,
		},
		HTTP2: &http.HTTP2Config{MaxConcurrentStreams: 1000},
	}
	a.ctrlSrv = &http.Server{Handler: a.controlHandler(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: errLog}

	_, port, _ := net.SplitHostPort(a.Addr)
	if cfg.CertOut != "" {
		if err := writeFileAtomic(cfg.CertOut, cert.pem, 0o644); err != nil {
			a.closeListeners()
			return nil, err
		}
	}
	if cfg.KubeconfigOut != "" {
		server := "https://" + net.JoinHostPort(cfg.Advertise, port)
		if err := writeFileAtomic(cfg.KubeconfigOut, operatorKubeconfig(server, cert.pem, up.namespace), 0o600); err != nil {
			a.closeListeners()
			return nil, err
		}
	}
	return a, nil
}

func (a *App) closeListeners() {
	a.ln.Close()
	a.ctrlLn.Close()
}

// Start serves both listeners and writes --addr-out, then --control-out.
func (a *App) Start() error {
	go a.srv.ServeTLS(a.ln, "", "")
	go a.ctrlSrv.Serve(a.ctrlLn)
	if a.cfg.Pprof != "" {
		go http.ListenAndServe(a.cfg.Pprof, http.DefaultServeMux)
	}
	// The proxy's address first: a caller that waits for --control-out as the sign of
	// readiness then finds both files.
	if a.cfg.AddrOut != "" {
		if err := writeFileAtomic(a.cfg.AddrOut, []byte(a.Addr+"\n"), 0o644); err != nil {
			return err
		}
	}
	if a.cfg.ControlOut != "" {
		if err := writeFileAtomic(a.cfg.ControlOut, []byte(a.CtrlAddr+"\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Shutdown releases every rule, lets released writes finish (briefly),
// then closes everything. It returns within about 700ms.
func (a *App) Shutdown() {
	ids := a.rules.releaseAll()
	a.j.rule("", "shutdown", map[string]any{"released": ids})
	deadline := time.Now().Add(600 * time.Millisecond)
	for time.Now().Before(deadline) && a.proxy.inflight.Load() > 0 {
		time.Sleep(10 * time.Millisecond)
	}
	a.srv.Close()
	a.ctrlSrv.Close()
	if strings.HasPrefix(a.CtrlAddr, "unix:") {
		os.Remove(strings.TrimPrefix(a.CtrlAddr, "unix:"))
	}
	a.proxy.closeIdle()
	a.j.Close()
}

func (p *Proxy) closeIdle() {
	if t, ok := p.rp.Transport.(*http.Transport); ok {
		t.CloseIdleConnections()
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	a, err := newApp(cfg)
	if err != nil {
		return err
	}
	if err := a.Start(); err != nil {
		a.Shutdown()
		return err
	}
	fmt.Fprintf(stdout, "interposer: listening on %s\n", a.Addr)
	if f, ok := stdout.(*os.File); ok {
		f.Sync()
	}
	<-ctx.Done()
	a.Shutdown()
	return nil
}

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		cancel()
		<-sig
		os.Exit(1)
	}()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "interposer:", err)
		os.Exit(2)
	}
	os.Exit(0)
}
