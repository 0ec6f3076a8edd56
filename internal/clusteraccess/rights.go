// Package clusteraccess decides, without side effects, the hub's read-only way to a managed
// cluster through OCM's own channel: the rights a GitOpsCluster's ManagedServiceAccount gets on the
// cluster, and whether the token managed-serviceaccount synced to the hub may go into the cluster's
// Argo CD secret. The cluster and its agent write that token Secret, and a tenant may too: it is
// untrusted input, bounded and checked before anything of it is copied.
package clusteraccess

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	workv1 "open-cluster-management.io/api/work/v1"
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

// CoreReadable says whether the hub's account may read a core resource (by its plural name) on a
// cluster: a read of any other, a Secret above all, is refused there, so it is never asked.
func CoreReadable(resource string) bool { return slices.Contains(coreReadable, resource) }

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

// unreadableGroups are API groups where `*` read is more than reading: a GET that opens a console
// or a port, or objects that hold credentials. They are never given, whoever lists them, and
// BeyondReadOnly names any read of them.
var unreadableGroups = map[string]string{
	"subresources.kubevirt.io":                  "a GET opens a virtual machine's console, VNC or port",
	"route.openshift.io":                        "Routes hold TLS private keys",
	"oauth.openshift.io":                        "OAuth access tokens",
	"user.openshift.io":                         "users' identities",
	"image.openshift.io":                        "image streams' pull secrets (imagestreams/secrets)",
	"build.openshift.io":                        "build webhooks' secrets",
	"velero.io":                                 "download requests are signed URLs to backups",
	"external-secrets.io":                       "secret stores' provider credentials",
	"secrets-store.csi.x-k8s.io":                "secret provider classes",
	"authentication.open-cluster-management.io": "managed service accounts' tokens",
}

// UnreadableGroup says why the hub's account is never given read of group, "" when it may be.
func UnreadableGroup(group string) string { return unreadableGroups[group] }

// MaxGroups bounds the API groups the account is given besides StandardGroups.
const MaxGroups = 64

// ReadOnlyRules are the rules of the hub's account on a cluster: the core resources above, and
// every resource of the standard groups and of groups (the API groups of the resources argocd-pull
// delivered there, as the cluster reports them), each only with get, list and watch. A group that
// is not a DNS subdomain, as API groups are, or whose read is more than reading
// (UnreadableGroup), is dropped; the first MaxGroups others, in order, are given.
func ReadOnlyRules(groups []string) []rbacv1.PolicyRule {
	all := slices.Clone(StandardGroups)
	sorted := slices.Clone(groups)
	slices.Sort(sorted)
	extra := 0
	for _, g := range slices.Compact(sorted) {
		if extra < MaxGroups && !refusedGroups[g] && unreadableGroups[g] == "" && !slices.Contains(StandardGroups, g) &&
			len(validation.IsDNS1123Subdomain(g)) == 0 {
			all = append(all, g)
			extra++
		}
	}
	slices.Sort(all)
	all = slices.Compact(all)
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: slices.Clone(coreReadable), Verbs: slices.Clone(ReadVerbs)},
		{APIGroups: all, Resources: []string{"*"}, Verbs: slices.Clone(ReadVerbs)},
	}
}

// AccessWorkLabel marks the ManifestWork that carries an account's rights to its cluster; its
// value is the account's name. The work is not labelled as argocd-pull's Application works are
// (api.ManagedByLabel), which every controller of theirs reads as one Application's.
const AccessWorkLabel = "apps.open-cluster-management.io/cluster-access"

// OwnerLabel marks what argocd-pull made for one GitOpsCluster's channel, its ManagedServiceAccounts
// and the works of their rights, with OwnerLabelValue of that GitOpsCluster: each GitOpsCluster
// finds its own, server-side, and removes those it no longer asks for, never another's. The
// GitOpsCluster's name itself is in AccountOwnerAnnotation (a label value cannot hold it).
const OwnerLabel = "apps.open-cluster-management.io/cluster-access-owner"

// OwnerLabelValue is the OwnerLabel of what was made for the GitOpsCluster owner
// ("<namespace>/<name>"): a hash of the name, which may be longer than a label value.
func OwnerLabelValue(owner string) string {
	sum := sha256.Sum256([]byte(owner))
	return hex.EncodeToString(sum[:16])
}

// AccessWorkHashAnnotation on that work is the hash of the manifests argocd-pull wrote (the
// apiserver re-encodes them), to tell whether the rights changed.
const AccessWorkHashAnnotation = "apps.open-cluster-management.io/cluster-access-hash"

// AccessWorkName is the name of the ManifestWork, in the cluster's namespace, that carries
// account's rights.
func AccessWorkName(account string) string { return "argocd-pull-access-" + account }

// RoleName is the name of the ClusterRole, and of its binding, that give account its rights on
// the cluster.
func RoleName(account string) string { return "argocd-pull:read-only:" + account }

// RightsWork is the ManifestWork that gives account, on its cluster, ReadOnlyRules(groups): a
// ClusterRole and a ClusterRoleBinding to the account's ServiceAccount, deleted with the work. It
// is labelled and annotated with the account's owner, as the account is.
func RightsWork(account Account, groups []string) (*workv1.ManifestWork, error) {
	role := &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: RoleName(account.Name), Labels: map[string]string{AccessWorkLabel: account.Name}},
		Rules:      ReadOnlyRules(groups),
	}
	binding := &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: RoleName(account.Name), Labels: map[string]string{AccessWorkLabel: account.Name}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: account.Name, Namespace: account.ServiceAccountNamespace}},
	}
	work := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{
		Name: AccessWorkName(account.Name), Namespace: account.Cluster,
		Labels:      map[string]string{AccessWorkLabel: account.Name, OwnerLabel: OwnerLabelValue(account.Owner)},
		Annotations: map[string]string{AccountOwnerAnnotation: account.Owner},
	}}
	hash := sha256.New()
	for _, o := range []any{role, binding} {
		raw, err := json.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("encoding the rights of %s/%s: %w", account.Cluster, account.Name, err)
		}
		hash.Write(raw)
		work.Spec.Workload.Manifests = append(work.Spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
	}
	work.Annotations[AccessWorkHashAnnotation] = hex.EncodeToString(hash.Sum(nil))[:16]
	return work, nil
}
