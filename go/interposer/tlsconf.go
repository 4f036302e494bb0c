package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// ---- front end: a self-signed ECDSA certificate made at start ----

type frontCert struct {
	tls tls.Certificate
	pem []byte // the certificate, PEM (it is its own CA)
}

func makeFrontCert(sans []string) (*frontCert, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "mochaos-interposer", Organization: []string{"mo-chaos"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(10 * 365 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	seen := map[string]bool{}
	for _, s := range sans {
		s = strings.TrimSpace(s)
		if s == "" || seen[s] {
			continue
		}
		seen[s] = true
		if ip := net.ParseIP(strings.Trim(s, "[]")); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, s)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	return &frontCert{tls: c, pem: certPEM}, nil
}

// writeFileAtomic writes via a temporary file and rename, so that a reader
// polling for the file never sees it half written.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	return os.Rename(f.Name(), path)
}

// operatorKubeconfig is a kubeconfig for the operator that points at the
// proxy and trusts its certificate. The token is a placeholder: with
// --identity upstream the proxy drops it and uses its own credentials.
func operatorKubeconfig(server string, caPEM []byte, namespace string) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Config\nclusters:\n- name: mochaos-interposer\n  cluster:\n")
	fmt.Fprintf(&b, "    server: %s\n", server)
	fmt.Fprintf(&b, "    certificate-authority-data: %s\n", base64.StdEncoding.EncodeToString(caPEM))
	b.WriteString("users:\n- name: mochaos-interposer\n  user:\n    token: mochaos-interposer\n")
	b.WriteString("contexts:\n- name: mochaos-interposer\n  context:\n    cluster: mochaos-interposer\n    user: mochaos-interposer\n")
	if namespace != "" {
		fmt.Fprintf(&b, "    namespace: %s\n", namespace)
	}
	b.WriteString("current-context: mochaos-interposer\npreferences: {}\n")
	return []byte(b.String())
}

// ---- upstream: from a kubeconfig ----

type kubeconfigFile struct {
	CurrentContext string `json:"current-context"`
	Clusters       []struct {
		Name    string `json:"name"`
		Cluster struct {
			Server                   string `json:"server"`
			CertificateAuthority     string `json:"certificate-authority"`
			CertificateAuthorityData []byte `json:"certificate-authority-data"`
			InsecureSkipTLSVerify    bool   `json:"insecure-skip-tls-verify"`
			TLSServerName            string `json:"tls-server-name"`
		} `json:"cluster"`
	} `json:"clusters"`
	Users []struct {
		Name string `json:"name"`
		User struct {
			ClientCertificate     string `json:"client-certificate"`
			ClientCertificateData []byte `json:"client-certificate-data"`
			ClientKey             string `json:"client-key"`
			ClientKeyData         []byte `json:"client-key-data"`
			Token                 string `json:"token"`
			TokenFile             string `json:"tokenFile"`
		} `json:"user"`
	} `json:"users"`
	Contexts []struct {
		Name    string `json:"name"`
		Context struct {
			Cluster   string `json:"cluster"`
			User      string `json:"user"`
			Namespace string `json:"namespace"`
		} `json:"context"`
	} `json:"contexts"`
}

type upstreamConfig struct {
	url       *url.URL
	tls       *tls.Config
	token     string
	namespace string
	forward   bool
	transport *http.Transport
}

func loadUpstream(path, context, identity string) (*upstreamConfig, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var kc kubeconfigFile
	if err := yaml.Unmarshal(raw, &kc); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	base := filepath.Dir(path)
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(base, p)
	}
	if context == "" {
		context = kc.CurrentContext
	}
	var clusterName, userName, ns string
	found := false
	for _, c := range kc.Contexts {
		if c.Name == context {
			clusterName, userName, ns = c.Context.Cluster, c.Context.User, c.Context.Namespace
			found = true
		}
	}
	if !found {
		if context != "" || len(kc.Contexts) != 1 {
			return nil, fmt.Errorf("%s: no context %q", path, context)
		}
		c := kc.Contexts[0]
		clusterName, userName, ns = c.Context.Cluster, c.Context.User, c.Context.Namespace
	}
	up := &upstreamConfig{namespace: ns, forward: identity == "forward"}
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}
	clusterFound := false
	for _, c := range kc.Clusters {
		if c.Name != clusterName {
			continue
		}
		clusterFound = true
		u, err := url.Parse(c.Cluster.Server)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("%s: bad server %q", path, c.Cluster.Server)
		}
		up.url = u
		ca := c.Cluster.CertificateAuthorityData
		if len(ca) == 0 && c.Cluster.CertificateAuthority != "" {
			if ca, err = os.ReadFile(rel(c.Cluster.CertificateAuthority)); err != nil {
				return nil, err
			}
		}
		if len(ca) > 0 {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(ca) {
				return nil, fmt.Errorf("%s: no certificate in the CA of cluster %q", path, clusterName)
			}
			tlsCfg.RootCAs = pool
		}
		tlsCfg.InsecureSkipVerify = c.Cluster.InsecureSkipTLSVerify
		tlsCfg.ServerName = c.Cluster.TLSServerName
	}
	if !clusterFound {
		return nil, fmt.Errorf("%s: no cluster %q", path, clusterName)
	}
	if !up.forward {
		for _, u := range kc.Users {
			if u.Name != userName {
				continue
			}
			certPEM, keyPEM := u.User.ClientCertificateData, u.User.ClientKeyData
			if len(certPEM) == 0 && u.User.ClientCertificate != "" {
				if certPEM, err = os.ReadFile(rel(u.User.ClientCertificate)); err != nil {
					return nil, err
				}
			}
			if len(keyPEM) == 0 && u.User.ClientKey != "" {
				if keyPEM, err = os.ReadFile(rel(u.User.ClientKey)); err != nil {
					return nil, err
				}
			}
			if len(certPEM) > 0 || len(keyPEM) > 0 {
				c, err := tls.X509KeyPair(certPEM, keyPEM)
				if err != nil {
					return nil, fmt.Errorf("%s: client certificate of user %q: %v", path, userName, err)
				}
				tlsCfg.Certificates = []tls.Certificate{c}
			}
			up.token = u.User.Token
			if up.token == "" && u.User.TokenFile != "" {
				b, err := os.ReadFile(rel(u.User.TokenFile))
				if err != nil {
					return nil, err
				}
				up.token = strings.TrimSpace(string(b))
			}
		}
	}
	if up.url.Scheme != "https" && up.url.Scheme != "http" {
		return nil, errors.New("upstream server must be http or https")
	}
	up.tls = tlsCfg
	up.transport = &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       tlsCfg,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true, // never add gzip the client did not ask for
		HTTP2: &http.HTTP2Config{
			SendPingTimeout: 30 * time.Second,
			PingTimeout:     15 * time.Second,
		},
	}
	return up, nil
}
