package doctor

import (
	"errors"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/argocd-pull/argocd-pull/internal/clusteraccess"
)

func readOnlyAnswer() []authorizationv1.ResourceRule {
	var out []authorizationv1.ResourceRule
	for _, r := range append(clusteraccess.ReadOnlyRules(nil), rbacv1.PolicyRule{
		Verbs: []string{"create"}, APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"selfsubjectrulesreviews"}}) {
		out = append(out, authorizationv1.ResourceRule{Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources})
	}
	return out
}

func TestDecideClusterAccess(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	good := channelFacts{Cluster: "cluster1", Server: "https://proxy:9092/cluster1", Reached: "https://proxy:9092/cluster1", Namespace: "argocd",
		Expiry: now.Add(100 * time.Hour), AddOns: map[string]bool{clusteraccess.ClusterProxyAddOn: true, clusteraccess.ManagedServiceAccountAddOn: true},
		Rules: readOnlyAnswer()}
	with := func(change func(*channelFacts)) channelFacts {
		f := good
		f.AddOns = map[string]bool{clusteraccess.ClusterProxyAddOn: true, clusteraccess.ManagedServiceAccountAddOn: true}
		f.Rules = readOnlyAnswer()
		change(&f)
		return f
	}
	for _, c := range []struct {
		name   string
		facts  channelFacts
		status Status
		says   []string
	}{
		{"read-only, reached", good, StatusPass, []string{"reached through cluster-proxy at https://proxy:9092/cluster1", "read-only", "token expires in 100h0m0s"}},
		{"left credential-free", with(func(f *channelFacts) {
			f.Refused = "AddOnMissing: cluster1 has no available ManagedClusterAddOn cluster-proxy"
		}),
			StatusWarn, []string{"credential-free (AddOnMissing): cluster1 has no available ManagedClusterAddOn cluster-proxy"}},
		{"an add-on down", with(func(f *channelFacts) { f.AddOns[clusteraccess.ClusterProxyAddOn] = false }), StatusFail, []string{"ManagedClusterAddOn cluster-proxy is not Available"}},
		{"the token expired", with(func(f *channelFacts) { f.Expiry = now.Add(-time.Minute) }), StatusFail, []string{"the token expired 1m0s ago"}},
		{"the token unreadable", with(func(f *channelFacts) { f.TokenErr = errors.New("3 parts") }), StatusFail, []string{"the secret's token: 3 parts"}},
		{"the tunnel down", with(func(f *channelFacts) { f.ProbeErr = errors.New("connection refused") }), StatusFail, []string{"asking cluster1 what the token may do through cluster-proxy", "connection refused"}},
		{"a write verb", with(func(f *channelFacts) {
			f.Rules = append(f.Rules, authorizationv1.ResourceRule{Verbs: []string{"delete"}, APIGroups: []string{"apps"}, Resources: []string{"deployments"}})
		}), StatusFail, []string{"in namespace argocd the token may delete deployments.apps: more than read-only"}},
		{"Secrets' contents", with(func(f *channelFacts) {
			f.Rules = append(f.Rules, authorizationv1.ResourceRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}})
		}), StatusFail, []string{"read secrets (secrets)"}},
		{"exec", with(func(f *channelFacts) {
			f.Rules = append(f.Rules, authorizationv1.ResourceRule{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"pods/exec"}})
		}), StatusFail, []string{"create pods/exec", "pods/exec (pods/exec)"}},
		{"a view's read refused", with(func(f *channelFacts) { f.Rules = f.Rules[1:] }), StatusWarn, []string{"may not list pods, get pods/log, list events"}},
		{"an incomplete answer", with(func(f *channelFacts) { f.Incomplete = true }), StatusWarn, []string{"incomplete"}},
		{"read-only in every namespace asked", with(func(f *channelFacts) {
			f.Others = map[string][]authorizationv1.ResourceRule{"default": readOnlyAnswer(), "kube-system": readOnlyAnswer()}
			f.Unreviewed = 5
		}), StatusPass, []string{"read-only in 3 namespaces (5 more not asked: at most 100 besides argocd)"}},
		{"a RoleBinding in another namespace", with(func(f *channelFacts) {
			f.Others = map[string][]authorizationv1.ResourceRule{"default": readOnlyAnswer(), "kube-system": append(readOnlyAnswer(),
				authorizationv1.ResourceRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}})}
		}), StatusFail, []string{"in namespace kube-system the token may read secrets (secrets): more than read-only"}},
		{"a ClusterRoleBinding, alike in every namespace", with(func(f *channelFacts) {
			more := authorizationv1.ResourceRule{Verbs: []string{"delete"}, APIGroups: []string{"apps"}, Resources: []string{"deployments"}}
			f.Rules = append(f.Rules, more)
			f.Others = map[string][]authorizationv1.ResourceRule{"default": append(readOnlyAnswer(), more), "kube-system": append(readOnlyAnswer(), more)}
		}), StatusFail, []string{"in namespaces argocd, default, kube-system the token may delete deployments.apps: more than read-only"}},
		{"the other namespaces not asked", with(func(f *channelFacts) {
			f.NamespacesErr = errors.New("namespaces is forbidden")
		}), StatusWarn, []string{"asking what the token may do in the cluster's other namespaces: namespaces is forbidden"}},
	} {
		r := decideClusterAccess(c.facts, now)
		if r.Status != c.status || r.ID != idClusterAccess || r.Subject != "cluster1" {
			t.Errorf("%s: %s (%s, %s): %s", c.name, r.Status, r.ID, r.Subject, r.Message)
		}
		for _, s := range c.says {
			if !strings.Contains(r.Message, s) {
				t.Errorf("%s: %q does not say %q", c.name, r.Message, s)
			}
		}
		if r.Status != StatusPass && r.Fix == "" && c.name != "an incomplete answer" {
			t.Errorf("%s: no fix", c.name)
		}
	}
}

func TestProbeConfigUsesOnlyTheSecret(t *testing.T) {
	cfg, err := probeConfig("https://cluster-proxy-addon-user.multicluster-engine.svc:9092/cluster1", "", "cluster1", "a.b.c", []byte("CA"))
	if err != nil || cfg.Host != "https://cluster-proxy-addon-user.multicluster-engine.svc:9092/cluster1" || cfg.BearerToken != "a.b.c" ||
		string(cfg.CAData) != "CA" || cfg.Username != "" || cfg.CertData != nil || cfg.Insecure {
		t.Errorf("probeConfig: %+v, %v", cfg, err)
	}
	cfg, err = probeConfig("https://cluster-proxy-addon-user.multicluster-engine.svc:9092/cluster1", "https://localhost:9092", "cluster1", "a.b.c", []byte("CA"))
	if err != nil || cfg.Host != "https://localhost:9092/cluster1" || cfg.ServerName != "cluster-proxy-addon-user.multicluster-engine.svc" {
		t.Errorf("probeConfig with --cluster-proxy-url: %+v, %v", cfg, err)
	}
}
