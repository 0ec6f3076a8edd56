package tenancy

import (
	"fmt"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ResourceRefused says why the AppProject project (nil: none) does not permit a resource of
// group and kind named name in namespace ("" for a cluster-scoped one) on the destination cluster
// (its cluster secret's name and server), "" when it does. It follows Argo CD v3.5.1's
// AppProject.IsResourcePermitted, which its application controller applies to every live resource
// before it puts it in a tree: a namespaced kind must be in spec.namespaceResourceWhitelist (absent:
// every kind; empty: none) and not in spec.namespaceResourceBlacklist, and its namespace a
// permitted destination (DestinationPermitted); a cluster-scoped kind must be in
// spec.clusterResourceWhitelist (absent or empty: none) and not in spec.clusterResourceBlacklist.
// Entries match group, kind and (cluster-scoped) name as path globs (filepath.Match).
//
// The views use it so that a tenant whose Git, or whose cluster's Argo CD, lists another tenant's
// object or one in a namespace its project forbids cannot read it through the hub's Argo CD.
func ResourceRefused(project *unstructured.Unstructured, cluster, server, group, kind, namespace, name string) string {
	if project == nil {
		return "its AppProject does not exist"
	}
	spec, _ := project.Object["spec"].(map[string]any)
	inList := func(field string) (present, in bool) {
		list, present := spec[field].([]any)
		for _, e := range list {
			item, _ := e.(map[string]any)
			itemGroup, _ := item["group"].(string)
			itemKind, _ := item["kind"].(string)
			itemName, _ := item["name"].(string)
			if pathMatch(itemKind, kind) && pathMatch(itemGroup, group) && (namespace != "" || itemName == "" || pathMatch(itemName, name)) {
				return present, true
			}
		}
		return present, false
	}
	gk := kind
	if group != "" {
		gk = kind + "." + group
	}
	p := project.GetName()
	if namespace != "" {
		if present, in := inList("namespaceResourceWhitelist"); present && !in {
			return fmt.Sprintf("AppProject %s's namespaceResourceWhitelist does not admit %s", p, gk)
		}
		if _, in := inList("namespaceResourceBlacklist"); in {
			return fmt.Sprintf("AppProject %s's namespaceResourceBlacklist refuses %s", p, gk)
		}
		if !DestinationPermitted(project, cluster, server, namespace) {
			return fmt.Sprintf("AppProject %s does not permit namespace %s on cluster %s", p, namespace, cluster)
		}
		return ""
	}
	if _, in := inList("clusterResourceWhitelist"); !in {
		return fmt.Sprintf("AppProject %s's clusterResourceWhitelist does not admit the cluster-scoped %s", p, gk)
	}
	if _, in := inList("clusterResourceBlacklist"); in {
		return fmt.Sprintf("AppProject %s's clusterResourceBlacklist refuses %s", p, gk)
	}
	return ""
}

// pathMatch is filepath.Match, as Argo CD matches resource lists; a bad pattern matches nothing.
func pathMatch(pattern, s string) bool {
	ok, err := filepath.Match(pattern, s)
	return ok && err == nil
}
