package main

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// reqInfo is what the proxy knows about a request from its method, path and
// query (the same decomposition as the apiserver's RequestInfo).
type reqInfo struct {
	Verb        string
	Method      string
	Path        string
	Query       string
	IsResource  bool
	Group       string
	Version     string
	Resource    string
	Subresource string
	Namespace   string
	Name        string
	DryRun      bool
}

// namespaceSubresources are subresources of the Namespace object itself.
var namespaceSubresources = map[string]bool{"status": true, "finalize": true}

// housekeepingResources are matched only by a rule that names them in
// match.resource (leader election, events, auth reviews).
var housekeepingResources = map[string]bool{
	"leases":                   true,
	"events":                   true,
	"tokenreviews":             true,
	"subjectaccessreviews":     true,
	"selfsubjectaccessreviews": true,
	"selfsubjectrulesreviews":  true,
	"selfsubjectreviews":       true,
}

// streamingSubresources carry no API objects: the Accept header is left alone.
var streamingSubresources = map[string]bool{
	"log": true, "exec": true, "attach": true, "portforward": true, "proxy": true,
}

func isWriteVerb(v string) bool {
	switch v {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

var knownVerbs = map[string]bool{
	"get": true, "list": true, "watch": true, "create": true, "update": true,
	"patch": true, "delete": true, "deletecollection": true,
}

func parseRequestInfo(r *http.Request) reqInfo {
	ri := reqInfo{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Verb: strings.ToLower(r.Method)}
	var q url.Values
	if r.URL.RawQuery != "" {
		q, _ = url.ParseQuery(r.URL.RawQuery)
		if v := q.Get("dryRun"); v != "" {
			ri.DryRun = true
		}
	}
	parts := splitURLPath(r.URL.Path)
	if len(parts) == 0 {
		return ri
	}
	switch parts[0] {
	case "api":
		if len(parts) < 3 {
			return ri
		}
		ri.Version = parts[1]
		parts = parts[2:]
	case "apis":
		if len(parts) < 4 {
			return ri
		}
		ri.Group = parts[1]
		ri.Version = parts[2]
		parts = parts[3:]
	default:
		return ri
	}
	watchPath := false
	if parts[0] == "watch" {
		watchPath = true
		parts = parts[1:]
		if len(parts) == 0 {
			return ri
		}
	}
	ri.IsResource = true
	if parts[0] == "namespaces" && len(parts) > 1 {
		ri.Namespace = parts[1]
		if len(parts) > 2 && !namespaceSubresources[parts[2]] {
			parts = parts[2:]
		}
	}
	ri.Resource = parts[0]
	if len(parts) > 1 {
		ri.Name = parts[1]
	}
	if len(parts) > 2 {
		ri.Subresource = parts[2]
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		isWatch := watchPath
		if !isWatch && q != nil {
			if w := q.Get("watch"); w != "" {
				isWatch, _ = strconv.ParseBool(w)
			}
		}
		switch {
		case isWatch:
			ri.Verb = "watch"
		case ri.Name == "":
			ri.Verb = "list"
		default:
			ri.Verb = "get"
		}
	case http.MethodPost:
		ri.Verb = "create"
	case http.MethodPut:
		ri.Verb = "update"
	case http.MethodPatch:
		ri.Verb = "patch"
	case http.MethodDelete:
		if ri.Name == "" {
			ri.Verb = "deletecollection"
		} else {
			ri.Verb = "delete"
		}
	}
	return ri
}

func splitURLPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// shouldRewriteAccept: only requests for API objects get JSON forced;
// discovery, /version, /openapi, logs, exec and the like keep their Accept.
func shouldRewriteAccept(ri *reqInfo) bool {
	return ri.IsResource && !streamingSubresources[ri.Subresource]
}

// rewriteAccept turns any Accept header into one that only admits JSON.
// Media ranges carrying an `as=` parameter (Table, PartialObjectMetadata,
// PartialObjectMetadataList) are kept, with their type changed to
// application/json, followed by plain application/json.
func rewriteAccept(orig string) string {
	if !strings.Contains(orig, "as=") {
		return "application/json"
	}
	var keep []string
	seen := map[string]bool{}
	for _, item := range strings.Split(orig, ",") {
		item = strings.TrimSpace(item)
		_, params, ok := strings.Cut(item, ";")
		if !ok {
			continue
		}
		hasAs := false
		for _, p := range strings.Split(params, ";") {
			k, _, _ := strings.Cut(strings.TrimSpace(p), "=")
			if k == "as" {
				hasAs = true
			}
		}
		if !hasAs {
			continue
		}
		v := "application/json;" + params
		if !seen[v] {
			seen[v] = true
			keep = append(keep, v)
		}
	}
	keep = append(keep, "application/json")
	return strings.Join(keep, ",")
}
