package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

const hostsMarker = "# --- names served by the mo-chaos MatrixOne double ---"

// hostsFile is <state-dir>/hosts: the machine's /etc/hosts as read at start-up, then one
// line per name the operator dials (LogSet discovery, TN pod names) mapped to its
// namespace's loopback address. It is rewritten in place (same inode) because it is
// bind-mounted over /etc/hosts in the operator's mount namespace.
type hostsFile struct {
	path string
	base []byte
	last []byte
}

func newHostsFile(path, basePath string) *hostsFile {
	base, err := os.ReadFile(basePath)
	if err != nil {
		base = []byte("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	}
	// A restart must not nest the previous run's section inside the base.
	if i := bytes.Index(base, []byte(hostsMarker)); i >= 0 {
		base = base[:i]
	}
	if len(base) > 0 && base[len(base)-1] != '\n' {
		base = append(base, '\n')
	}
	return &hostsFile{path: path, base: base}
}

// write replaces the served section; names maps host name -> address.
func (h *hostsFile) write(names map[string]string) error {
	var b bytes.Buffer
	b.Write(h.base)
	b.WriteString(hostsMarker + "\n")
	keys := make([]string, 0, len(names))
	for k := range names {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s\t%s\n", names[k], k)
	}
	content := b.Bytes()
	if bytes.Equal(content, h.last) {
		return nil
	}
	f, err := os.OpenFile(h.path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	// Write first, then cut: a reader never sees an empty file, at worst a longer one.
	if _, err := f.WriteAt(content, 0); err != nil {
		return err
	}
	if err := f.Truncate(int64(len(content))); err != nil {
		return err
	}
	h.last = append([]byte{}, content...)
	return nil
}

// writeJSONAtomic writes v as indented JSON through a temporary file and a rename.
func writeJSONAtomic(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// namespaceInfo is one entry of <state-dir>/namespaces.json.
type namespaceInfo struct {
	Address   string            `json:"address"`
	State     string            `json:"state"`
	Error     string            `json:"error,omitempty"`
	Ports     map[string]int    `json:"ports"`
	Discovery []string          `json:"discovery"`
	Hostnames []string          `json:"hostnames"`
	CNStores  map[string]cnInfo `json:"cnStores"`
	TNStores  map[string]tnInfo `json:"tnStores"`
}

type cnInfo struct {
	UUID               string `json:"uuid"`
	QueryAddress       string `json:"queryAddress"`
	SQLAddress         string `json:"sqlAddress"`
	LockServiceAddress string `json:"lockServiceAddress"`
	ServiceAddress     string `json:"pipelineServiceAddress"`
	InitWorkState      string `json:"initWorkState"`
}

type tnInfo struct {
	UUID               string `json:"uuid"`
	LockServiceAddress string `json:"lockServiceAddress"`
	ListenAddress      string `json:"lockServiceListenAddress"`
}

// namespacesFile is <state-dir>/namespaces.json.
type namespacesFile struct {
	ControlAddress string                   `json:"controlAddress"`
	AddressPool    string                   `json:"addressPool"`
	Namespaces     map[string]namespaceInfo `json:"namespaces"`
}

func readLeases(path string) map[string]string {
	out := map[string]string{}
	raw, err := os.ReadFile(path)
	if err != nil {
		return out
	}
	var f namespacesFile
	if json.Unmarshal(raw, &f) != nil {
		return out
	}
	for ns, info := range f.Namespaces {
		if strings.TrimSpace(info.Address) != "" {
			out[ns] = info.Address
		}
	}
	return out
}
