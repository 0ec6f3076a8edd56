// Package clusteraccess decides, without side effects, the hub's read-only way to a managed
// cluster through OCM's own channel: the rights a GitOpsCluster's ManagedServiceAccount gets on the
// cluster, and whether the token managed-serviceaccount synced to the hub may go into the cluster's
// Argo CD secret. The cluster and its agent write that token Secret, and a tenant may too: it is
// untrusted input, bounded and checked before anything of it is copied.
package clusteraccess

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ReadVerbs are the only verbs the hub's account holds on a cluster.
var ReadVerbs = []string{"get", "list", "watch"}

// coreReadable are the core resources the hub's Argo CD shows, and what its views read: live
// objects, the pods' logs, events. Left out on purpose: secrets (their contents), the proxy
// subresources of pods, services and nodes (nodes/proxy reaches the kubelet, which runs commands in
// pods), pods/exec, pods/attach and pods/portforward (and no create verb anywhere, which they need),
// serviceaccounts/token.
var coreReadable = []string{
	"configmaps", "endpoints", "events", "limitranges", "namespaces",
	"nodes", "persistentvolumeclaims", "persistentvolumes", "pods", "pods/log", "pods/status",
	"podtemplates", "replicationcontrollers", "replicationcontrollers/scale", "resourcequotas",
	"serviceaccounts", "services", "services/status",
}

// StandardGroups are the API groups of the objects Argo CD draws under an Application besides
// its own resources (ReplicaSets, Pods, EndpointSlices, ...), always readable.
var StandardGroups = []string{
	"admissionregistration.k8s.io", "apiextensions.k8s.io", "apiregistration.k8s.io", "apps", "autoscaling",
	"batch", "discovery.k8s.io", "events.k8s.io", "networking.k8s.io", "node.k8s.io", "policy",
	"rbac.authorization.k8s.io", "scheduling.k8s.io", "storage.k8s.io",
}

// refusedGroups are never given: "" is the core group (its resources are listed one by one, to
// leave Secrets out), "*" would include it.
var refusedGroups = map[string]bool{"": true, "*": true}

// ReadOnlyRules are the rules of the hub's account on a cluster: the core resources above, and
// every resource of the standard groups and of groups (the API groups of the resources the
// cluster's Applications list), each only with get, list and watch. A group that is not a DNS
// subdomain, as API groups are, is dropped.
func ReadOnlyRules(groups []string) []rbacv1.PolicyRule {
	all := slices.Clone(StandardGroups)
	for _, g := range groups {
		if !refusedGroups[g] && len(validation.IsDNS1123Subdomain(g)) == 0 {
			all = append(all, g)
		}
	}
	slices.Sort(all)
	all = slices.Compact(all)
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: slices.Clone(coreReadable), Verbs: slices.Clone(ReadVerbs)},
		{APIGroups: all, Resources: []string{"*"}, Verbs: slices.Clone(ReadVerbs)},
	}
}
