package tenancy

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// DestinationPermitted says whether the AppProject project (nil: none) permits an Application's
// destination as the hub's Argo CD resolves it: the cluster secret's name and server, and the
// destination namespace. It follows Argo CD v3.5.1's AppProject.IsDestinationPermitted: a
// destination entry matches when its name or its server matches (globs, "!" negates) and its
// namespace does; an unmatched deny entry refuses at once; spec.permitOnlyProjectScopedClusters
// admits only a cluster secret scoped to the project, and argocd-pull's are global.
//
// In the push model the hub's application controller builds no tree for an Application its project
// does not permit, and Argo CD's API server then sends no view to that cluster. The API server
// checks only that a resource is in the tree, with a uid, before it asks the cluster: so the hub
// reads a cluster's tree only for an Application whose project permits it, or a tenant could read,
// through the views, a cluster or namespace its project keeps it from.
func DestinationPermitted(project *unstructured.Unstructured, name, server, namespace string) bool {
	if project == nil {
		return false
	}
	if only, _, _ := unstructured.NestedBool(project.Object, "spec", "permitOnlyProjectScopedClusters"); only {
		return false
	}
	destinations, _, _ := unstructured.NestedSlice(project.Object, "spec", "destinations")
	matched := false
	for _, d := range destinations {
		item, _ := d.(map[string]any)
		itemName, _ := item["name"].(string)
		itemServer, _ := item["server"].(string)
		itemNamespace, _ := item["namespace"].(string)
		nameMatched := name != "" && globMatch(itemName, name)
		serverMatched := server != "" && globMatch(itemServer, server)
		namespaceMatched := globMatch(itemNamespace, namespace)
		switch {
		case (nameMatched || serverMatched) && namespaceMatched:
			matched = true
		case (!nameMatched && denies(itemName)) || (!serverMatched && denies(itemServer)) && namespaceMatched:
			return false
		case !namespaceMatched && denies(itemNamespace) && serverMatched:
			return false
		}
	}
	return matched
}

func denies(pattern string) bool { return strings.HasPrefix(pattern, "!") }

// globMatch is Argo CD's for destinations: "*" matches anything, "!" negates, a pattern that
// does not compile matches nothing.
func globMatch(pattern, value string) bool {
	if denies(pattern) {
		return !matchGlob(pattern[1:], value)
	}
	return pattern == "*" || matchGlob(pattern, value)
}
