// A stand-in for the operator's manager in a container, for tests of the container target
// against a real Docker engine without the operator: it accepts the manager's flags (an
// unknown flag exits 2, as Go's flag package makes the manager do), logs the manager's
// "Starting workers" line for the claim controllers, then one "tick" line every 100 ms
// saying what it sees (its uid, its environment, whether the mounted files are readable,
// the address /etc/hosts gives the name in STANDIN_LOOKUP) until SIGTERM.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func lookup(name string) string {
	f, err := os.Open("/etc/hosts")
	if err != nil {
		return "error: " + err.Error()
	}
	defer f.Close()
	found := ""
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		fields := strings.Fields(strings.SplitN(scanner.Text(), "#", 2)[0])
		for _, alias := range fields[min(1, len(fields)):] {
			if alias == name {
				found = fields[0]
			}
		}
	}
	return found
}

func readable(path string) bool {
	_, err := os.ReadFile(path)
	return err == nil
}

func main() {
	cfg := flag.String("operator-cfg-directory", "/etc/mo-operator-cfg", "")
	flag.String("metrics-bind-address", ":8080", "")
	flag.String("health-probe-bind-address", ":8081", "")
	flag.String("webhook-certificate-directory", "", "")
	flag.String("ca-file", "caBundle", "")
	flag.Parse()

	out := json.NewEncoder(os.Stdout)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM)
	for _, c := range []string{"cn-claim-manager", "cn-claimset-manager", "cn-pool-manager"} {
		out.Encode(map[string]any{"level": "info", "msg": "Starting workers", "controller": c})
	}
	ticker := time.NewTicker(100 * time.Millisecond)
	for n := 0; ; n++ {
		select {
		case <-stop:
			out.Encode(map[string]any{"msg": "stopping", "n": n})
			return
		case <-ticker.C:
			out.Encode(map[string]any{
				"msg": "tick", "n": n, "uid": os.Getuid(),
				"namespace":  os.Getenv("POD_NAMESPACE"),
				"webhooks":   os.Getenv("ENABLE_WEBHOOKS"),
				"kubeconfig": readable(os.Getenv("KUBECONFIG")),
				"config":     readable(filepath.Join(*cfg, "featureGates")),
				"hosts":      lookup(os.Getenv("STANDIN_LOOKUP")),
			})
		}
	}
}
