package clusteraccess

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
)

// The audit of a channel in use, as `argocd-pull doctor` makes it: what the cluster secret holds,
// and what the cluster says its token may do there (a SelfSubjectRulesReview's rules, asked with
// that token through cluster-proxy).

// ParseClusterConfig reads the bearer token and CA of an Argo CD cluster secret's "config", as
// ClusterConfig writes it. A config without a token gives "" and no error.
func ParseClusterConfig(raw []byte) (token string, ca []byte, err error) {
	if len(raw) == 0 {
		return "", nil, nil
	}
	var c clusterConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return "", nil, fmt.Errorf("the cluster secret's config: %w", err)
	}
	return c.BearerToken, c.TLSClientConfig.CAData, nil
}

// TokenExpiry is when a ServiceAccount token expires, by its claims (unverified: the cluster
// verifies it). A token without an expiry gives the zero time.
func TokenExpiry(token string) (time.Time, error) {
	c, err := parseJWT(token)
	if err != nil {
		return time.Time{}, err
	}
	if c.Expiry == 0 {
		return time.Time{}, nil
	}
	return time.Unix(c.Expiry, 0), nil
}

// selfReviews are what every authenticated user may create (Kubernetes' system:basic-user): asking
// the cluster what one may do. They write nothing.
var selfReviews = map[string][]string{
	"authorization.k8s.io":  {"selfsubjectaccessreviews", "selfsubjectrulesreviews"},
	"authentication.k8s.io": {"selfsubjectreviews"},
}

// unsafeResources are read-verb resources that are not reads: a command in a pod (exec, attach,
// and, through the kubelet, nodes/proxy, which a GET reaches), a port of a pod or service, a new
// token. Any verb on them is beyond read-only.
var unsafeResources = []string{
	"pods/exec", "pods/attach", "pods/portforward", "pods/proxy", "services/proxy", "nodes/proxy", "serviceaccounts/token",
}

// BeyondReadOnly names what rules allow beyond the read-only rights of ReadOnlyRules, each once
// and sorted: any verb but get, list and watch (except asking the cluster what one may do), reading
// Secrets (which holds their contents), and any verb on the resources that run commands, open
// ports or mint tokens. Wildcards count: "*" in the core group holds Secrets and pods/exec.
func BeyondReadOnly(rules []authorizationv1.ResourceRule) []string {
	var out []string
	add := func(s string) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				name := res
				if g != "" {
					name = res + "." + g
				}
				if slices.Contains(selfReviews[g], res) && !slices.Contains(r.Verbs, "*") {
					continue
				}
				for _, v := range r.Verbs {
					if !slices.Contains(ReadVerbs, v) {
						add(v + " " + name)
					}
				}
				if why := unreadableGroups[g]; why != "" && (slices.Contains(r.Verbs, "*") || slices.ContainsFunc(ReadVerbs, func(v string) bool { return slices.Contains(r.Verbs, v) })) {
					add("read " + name + " (" + why + ")")
				}
				if g == "*" && res == "*" {
					add("read every API group (" + name + ")")
				}
				core := g == "" || g == "*"
				if core && (res == "secrets" || res == "*") {
					add("read secrets (" + name + ")")
				}
				for _, u := range unsafeResources {
					if core && (res == u || res == "*" || res == "*/"+subresource(u) || res == resource(u)+"/*") {
						add(u + " (" + name + ")")
					}
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// Allows reports whether rules allow verb on res ("pods", "pods/log") of group, whatever the
// object's name.
func Allows(rules []authorizationv1.ResourceRule, verb, group, res string) bool {
	for _, r := range rules {
		if len(r.ResourceNames) > 0 {
			continue
		}
		groupOK := slices.Contains(r.APIGroups, group) || slices.Contains(r.APIGroups, "*")
		resOK := slices.Contains(r.Resources, res) || slices.Contains(r.Resources, "*") ||
			slices.Contains(r.Resources, resource(res)+"/*") || slices.Contains(r.Resources, "*/"+subresource(res))
		verbOK := slices.Contains(r.Verbs, verb) || slices.Contains(r.Verbs, "*")
		if groupOK && resOK && verbOK {
			return true
		}
	}
	return false
}

// ViewsNeed are the reads Argo CD's views of a resource make on its cluster: the tree's Pods, a
// Pod's logs, the events.
var ViewsNeed = []struct{ Verb, Group, Resource string }{
	{"list", "", "pods"}, {"get", "", "pods/log"}, {"list", "", "events"}, {"list", "apps", "replicasets"},
}

// resource and subresource are the parts of "pods/log".
func resource(res string) string {
	r, _, _ := strings.Cut(res, "/")
	return r
}

func subresource(res string) string {
	_, sub, _ := strings.Cut(res, "/")
	return sub
}
