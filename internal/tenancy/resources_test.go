package tenancy

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ResourceRefused follows Argo CD v3.5.1's AppProject.IsResourcePermitted (app_project_types.go):
// the cases of its own tests on the resource lists, and the destination of the namespace.
func TestResourceRefusedFollowsArgoCD(t *testing.T) {
	project := func(spec map[string]any) *unstructured.Unstructured {
		p := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "team"}, "spec": spec}}
		if _, ok := spec["destinations"]; !ok {
			spec["destinations"] = []any{map[string]any{"name": "cluster1", "namespace": "team-*"}}
		}
		return p
	}
	gk := func(group, kind string) map[string]any { return map[string]any{"group": group, "kind": kind} }
	for _, c := range []struct {
		name                 string
		spec                 map[string]any
		group, kind, ns, obj string
		refused              bool
		why                  string
	}{
		{"a namespaced kind in a permitted namespace", map[string]any{}, "", "ConfigMap", "team-web", "x", false, ""},
		{"another namespace on the cluster", map[string]any{}, "", "ConfigMap", "kube-system", "x", true, "does not permit namespace kube-system on cluster cluster1"},
		{"another tenant's namespace", map[string]any{}, "apps", "Deployment", "other-team", "x", true, "does not permit namespace other-team"},
		{"a cluster-scoped kind, no whitelist", map[string]any{}, "rbac.authorization.k8s.io", "ClusterRole", "", "admin", true, "clusterResourceWhitelist does not admit the cluster-scoped ClusterRole.rbac.authorization.k8s.io"},
		{"a cluster-scoped kind, an empty whitelist", map[string]any{"clusterResourceWhitelist": []any{}}, "", "Namespace", "", "team-web", true, "clusterResourceWhitelist"},
		{"a cluster-scoped kind whitelisted", map[string]any{"clusterResourceWhitelist": []any{gk("", "Namespace")}}, "", "Namespace", "", "team-web", false, ""},
		{"a cluster-scoped kind whitelisted by glob", map[string]any{"clusterResourceWhitelist": []any{gk("*", "*")}}, "rbac.authorization.k8s.io", "ClusterRole", "", "x", false, ""},
		{"whitelisted by name only for another name", map[string]any{"clusterResourceWhitelist": []any{map[string]any{"group": "", "kind": "Namespace", "name": "team-*"}}}, "", "Namespace", "", "kube-system", true, "clusterResourceWhitelist"},
		{"whitelisted by name", map[string]any{"clusterResourceWhitelist": []any{map[string]any{"group": "", "kind": "Namespace", "name": "team-*"}}}, "", "Namespace", "", "team-web", false, ""},
		{"blacklisted cluster-scoped", map[string]any{"clusterResourceWhitelist": []any{gk("*", "*")}, "clusterResourceBlacklist": []any{gk("", "Namespace")}}, "", "Namespace", "", "x", true, "clusterResourceBlacklist refuses Namespace"},
		{"a namespaced whitelist that admits it", map[string]any{"namespaceResourceWhitelist": []any{gk("", "ConfigMap")}}, "", "ConfigMap", "team-web", "x", false, ""},
		{"a namespaced whitelist that does not", map[string]any{"namespaceResourceWhitelist": []any{gk("", "ConfigMap")}}, "", "Secret", "team-web", "x", true, "namespaceResourceWhitelist does not admit Secret"},
		{"an empty namespaced whitelist admits none", map[string]any{"namespaceResourceWhitelist": []any{}}, "", "ConfigMap", "team-web", "x", true, "namespaceResourceWhitelist"},
		{"a namespaced blacklist", map[string]any{"namespaceResourceBlacklist": []any{gk("apps", "*")}}, "apps", "Deployment", "team-web", "x", true, "namespaceResourceBlacklist refuses Deployment.apps"},
		{"a group glob that does not match the core group", map[string]any{"namespaceResourceBlacklist": []any{gk("?*", "*")}}, "", "ConfigMap", "team-web", "x", false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			why := ResourceRefused(project(c.spec), "cluster1", "https://proxy/cluster1", c.group, c.kind, c.ns, c.obj)
			if (why != "") != c.refused || !strings.Contains(why, c.why) {
				t.Errorf("ResourceRefused = %q, want refused %t saying %q", why, c.refused, c.why)
			}
		})
	}
	if why := ResourceRefused(nil, "cluster1", "", "", "ConfigMap", "team-web", "x"); why == "" {
		t.Error("no AppProject permits nothing")
	}
}
