package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// A minimal Kubernetes client: kubeconfig (client certificate or bearer token, CA),
// GET, and list+watch with resourceVersion resume, bookmarks and relist on 410 Gone.
// The double needs three resources; client-go would add ~75 s to a cold build.

type kubeClient struct {
	server string
	http   *http.Client
	token  string
}

type kubeconfig struct {
	CurrentContext string `yaml:"current-context"`
	Clusters       []struct {
		Name    string `yaml:"name"`
		Cluster struct {
			Server                   string `yaml:"server"`
			CertificateAuthority     string `yaml:"certificate-authority"`
			CertificateAuthorityData string `yaml:"certificate-authority-data"`
			InsecureSkipTLSVerify    bool   `yaml:"insecure-skip-tls-verify"`
		} `yaml:"cluster"`
	} `yaml:"clusters"`
	Contexts []struct {
		Name    string `yaml:"name"`
		Context struct {
			Cluster string `yaml:"cluster"`
			User    string `yaml:"user"`
		} `yaml:"context"`
	} `yaml:"contexts"`
	Users []struct {
		Name string `yaml:"name"`
		User struct {
			ClientCertificate     string `yaml:"client-certificate"`
			ClientCertificateData string `yaml:"client-certificate-data"`
			ClientKey             string `yaml:"client-key"`
			ClientKeyData         string `yaml:"client-key-data"`
			Token                 string `yaml:"token"`
		} `yaml:"user"`
	} `yaml:"users"`
}

// readPEM returns inline base64 data or the file (relative to the kubeconfig's folder).
func readPEM(data, file, dir string) ([]byte, error) {
	if data != "" {
		return base64.StdEncoding.DecodeString(data)
	}
	if file == "" {
		return nil, nil
	}
	if !filepath.IsAbs(file) {
		file = filepath.Join(dir, file)
	}
	return os.ReadFile(file)
}

func newKubeClient(path string) (*kubeClient, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var kc kubeconfig
	if err := yaml.Unmarshal(raw, &kc); err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	ctxName := kc.CurrentContext
	var clusterName, userName string
	for _, c := range kc.Contexts {
		if c.Name == ctxName || ctxName == "" {
			clusterName, userName = c.Context.Cluster, c.Context.User
			break
		}
	}
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	c := &kubeClient{}
	for _, cl := range kc.Clusters {
		if cl.Name != clusterName {
			continue
		}
		c.server = strings.TrimRight(cl.Cluster.Server, "/")
		tlsCfg.InsecureSkipVerify = cl.Cluster.InsecureSkipTLSVerify
		ca, err := readPEM(cl.Cluster.CertificateAuthorityData, cl.Cluster.CertificateAuthority, dir)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig CA: %w", err)
		}
		if ca != nil {
			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM(ca)
			tlsCfg.RootCAs = pool
		}
	}
	if c.server == "" {
		return nil, fmt.Errorf("kubeconfig %s: no cluster for context %q", path, ctxName)
	}
	for _, u := range kc.Users {
		if u.Name != userName {
			continue
		}
		c.token = u.User.Token
		cert, err := readPEM(u.User.ClientCertificateData, u.User.ClientCertificate, dir)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig client certificate: %w", err)
		}
		key, err := readPEM(u.User.ClientKeyData, u.User.ClientKey, dir)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig client key: %w", err)
		}
		if cert != nil && key != nil {
			pair, err := tls.X509KeyPair(cert, key)
			if err != nil {
				return nil, fmt.Errorf("kubeconfig client key pair: %w", err)
			}
			tlsCfg.Certificates = []tls.Certificate{pair}
		}
	}
	c.http = &http.Client{Transport: &http.Transport{
		TLSClientConfig: tlsCfg, Proxy: nil, MaxIdleConnsPerHost: 4,
		ResponseHeaderTimeout: 30 * time.Second,
	}}
	return c, nil
}

// statusError is a non-2xx answer from the apiserver.
type statusError struct {
	Code    int
	Message string
}

func (e *statusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.Code, e.Message) }

func isStatus(err error, code int) bool {
	var se *statusError
	return errors.As(err, &se) && se.Code == code
}

func (c *kubeClient) do(ctx context.Context, path string, query url.Values) (*http.Response, error) {
	u := c.server + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		_ = resp.Body.Close()
		var st struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(body, &st)
		return nil, &statusError{Code: resp.StatusCode, Message: st.Message}
	}
	return resp, nil
}

// get decodes one object.
func (c *kubeClient) get(ctx context.Context, path string, out any) error {
	resp, err := c.do(ctx, path, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(out)
}

// objectMeta is the part of metadata the double reads.
type objectMeta struct {
	Name              string            `json:"name"`
	Namespace         string            `json:"namespace"`
	UID               string            `json:"uid"`
	ResourceVersion   string            `json:"resourceVersion"`
	Labels            map[string]string `json:"labels"`
	DeletionTimestamp *string           `json:"deletionTimestamp"`
}

func (m objectMeta) key() string { return m.Namespace + "/" + m.Name }

// reflector keeps a full copy of one resource kind through list+watch and tells its
// owner about every change, like a client-go informer.
type reflector struct {
	client   *kubeClient
	path     string
	selector string
	// replace is called with every object after each (re)list; apply with each event
	// ("ADDED", "MODIFIED", "DELETED").
	replace func(items []json.RawMessage)
	apply   func(kind string, obj json.RawMessage)
	// synced is set after the first successful list; lastErr describes the last failure.
	onState func(synced bool, err error)
}

func (r *reflector) run(ctx context.Context) {
	backoff := time.Second
	for ctx.Err() == nil {
		rv, err := r.list(ctx)
		if err != nil {
			r.onState(false, err)
			sleepCtx(ctx, backoff)
			backoff = min(2*backoff, 10*time.Second)
			continue
		}
		backoff = time.Second
		r.onState(true, nil)
		for ctx.Err() == nil {
			err = r.watch(ctx, &rv)
			if err == nil {
				continue // the server closed the watch (timeoutSeconds): resume from rv
			}
			if isStatus(err, http.StatusGone) {
				break // relist
			}
			r.onState(true, err)
			sleepCtx(ctx, time.Second)
		}
	}
}

func (r *reflector) list(ctx context.Context) (string, error) {
	q := url.Values{}
	if r.selector != "" {
		q.Set("labelSelector", r.selector)
	}
	lctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	resp, err := r.client.do(lctx, r.path, q)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var list struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return "", err
	}
	r.replace(list.Items)
	return list.Metadata.ResourceVersion, nil
}

func (r *reflector) watch(ctx context.Context, rv *string) error {
	q := url.Values{}
	q.Set("watch", "1")
	q.Set("resourceVersion", *rv)
	q.Set("allowWatchBookmarks", "true")
	q.Set("timeoutSeconds", "300")
	if r.selector != "" {
		q.Set("labelSelector", r.selector)
	}
	resp, err := r.client.do(ctx, r.path, q)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var ev struct {
			Type   string          `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if err := dec.Decode(&ev); err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return nil
			}
			return err
		}
		var meta struct {
			Metadata objectMeta `json:"metadata"`
			Code     int        `json:"code"`
			Message  string     `json:"message"`
		}
		_ = json.Unmarshal(ev.Object, &meta)
		switch ev.Type {
		case "ERROR":
			return &statusError{Code: meta.Code, Message: meta.Message}
		case "BOOKMARK":
			*rv = meta.Metadata.ResourceVersion
		case "ADDED", "MODIFIED", "DELETED":
			*rv = meta.Metadata.ResourceVersion
			r.apply(ev.Type, ev.Object)
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
