// A stand-in for the operator's manager as the webhook host, for tests of the host's life
// cycle without the operator: it accepts the manager's flags, serves TLS with the
// certificate in --webhook-certificate-directory, answers the paths the operator's
// framework would serve (/mutate-… and /validate-… of a matrixorigin.io kind) with 200 and
// anything else with 404, and exits on SIGTERM. Knobs are files, so that the command line
// stays the manager's:
//
//	<certificate directory>/standin-port  the port to serve on (default 9443, the manager's)
//	<exe>.starts       one line (its pid) appended per start
//	<exe>.ignore-term  present: SIGTERM is ignored (only SIGKILL stops it)
//	<exe>.delay        seconds to wait before listening
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func knob(exe, name string) (string, bool) {
	raw, err := os.ReadFile(exe + "." + name)
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(raw)), true
}

func main() {
	flag.String("operator-cfg-directory", "/etc/mo-operator-cfg", "")
	flag.String("metrics-bind-address", ":8080", "")
	flag.String("health-probe-bind-address", ":8081", "")
	certs := flag.String("webhook-certificate-directory", "", "")
	flag.String("ca-file", "caBundle", "")
	flag.Parse()

	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if f, err := os.OpenFile(exe+".starts", os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		fmt.Fprintf(f, "%d\n", os.Getpid())
		f.Close()
	}
	signals := make(chan os.Signal, 1)
	if _, ignore := knob(exe, "ignore-term"); ignore {
		signal.Ignore(syscall.SIGTERM)
	} else {
		signal.Notify(signals, syscall.SIGTERM)
	}
	if delay, ok := knob(exe, "delay"); ok {
		seconds, _ := strconv.ParseFloat(delay, 64)
		time.Sleep(time.Duration(seconds * float64(time.Second)))
	}
	port := "9443"
	if p, err := os.ReadFile(filepath.Join(*certs, "standin-port")); err == nil {
		port = strings.TrimSpace(string(p))
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(*certs, "tls.crt"), filepath.Join(*certs, "tls.key"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "certificate:", err)
		os.Exit(1)
	}
	listener, err := tls.Listen("tcp", "0.0.0.0:"+port, &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "listen:", err)
		os.Exit(1)
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hook := strings.HasPrefix(r.URL.Path, "/mutate-") || strings.HasPrefix(r.URL.Path, "/validate-")
		if hook && strings.Contains(r.URL.Path, "matrixorigin-io") {
			w.WriteHeader(http.StatusOK)
			return
		}
		http.NotFound(w, r)
	})
	go func() { _ = http.Serve(listener, handler) }()
	fmt.Println("serving webhooks on :" + port)
	<-signals
	listener.Close()
}
