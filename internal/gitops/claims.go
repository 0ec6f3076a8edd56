package gitops

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/clusteraccess"
)

// A cluster secret is shared by every GitOpsCluster that registers its cluster in the same Argo CD
// namespace: its content depends only on the ManagedCluster. Each names itself in the secret's
// claims (api.ClaimsAnnotation), counts as registered only the secrets that carry its claim, and
// deletes a secret only when no other GitOpsCluster that may claim it still does.

// ClaimKey is how a GitOpsCluster is named in a secret's claims.
func ClaimKey(namespace, name string) string { return namespace + "/" + name }

// Claims returns the claimants of a cluster secret, sorted. A secret written before claims existed
// names its one owner in api.OwnerLabel as "<namespace>.<name>" (a namespace has no dots).
func Claims(s metav1.Object) []string {
	if v, ok := s.GetAnnotations()[api.ClaimsAnnotation]; ok {
		var claims []string
		for _, c := range strings.Split(v, ",") {
			if c = strings.TrimSpace(c); c != "" && !slices.Contains(claims, c) {
				claims = append(claims, c)
			}
		}
		slices.Sort(claims)
		return claims
	}
	if owner := s.GetLabels()[api.OwnerLabel]; owner != "" {
		return []string{strings.Replace(owner, ".", "/", 1)}
	}
	return nil
}

// HasClaim reports whether key is among the secret's claimants.
func HasClaim(s metav1.Object, key string) bool { return slices.Contains(Claims(s), key) }

// setClaims writes the claims annotation (sorted, no duplicates) and drops the legacy owner label.
func setClaims(s *corev1.Secret, claims []string) {
	claims = slices.Compact(slices.Sorted(slices.Values(claims)))
	metav1.SetMetaDataAnnotation(&s.ObjectMeta, api.ClaimsAnnotation, strings.Join(claims, ","))
	delete(s.Labels, api.OwnerLabel)
}

// Register returns existing brought in line with desired, with key among its claims and no
// unselected mark, and whether that changed anything: the write a GitOpsCluster that selects the
// cluster makes. instead names the GitOpsCluster whose access the returned secret carries instead
// of key's (its server, its token or why it has none), "" when it carries key's or the same.
//
// Argo CD has one cluster per name, so GitOpsClusters that register the same cluster in the same
// Argo CD namespace share its secret, and they may ask for different access (OCM's channel or
// none, another account). The access is written by one of them, its holder, and the others
// leave it as it is; otherwise each would write it its own way in turn, each write waking the
// others, without end. key writes its access when it holds it already, when the holder no longer
// claims the secret (or none is named: secrets written before holders), or when key's access
// reaches the cluster and the secret's does not (the channel is what a GitOpsCluster asks for;
// none is the absence of it). Labels come from the ManagedCluster and are the same for all.
func Register(existing, desired *corev1.Secret, key string) (updated *corev1.Secret, changed bool, instead string) {
	claims := Claims(existing)
	holder, current := AccessHolder(existing), stringData(existing)
	if holder != key && holder != "" && slices.Contains(claims, holder) && (!hasChannel(desired.StringData) || hasChannel(current)) {
		// Another's access: only the labels and the claim are this one's to write.
		if !maps.Equal(current, desired.StringData) || existing.Annotations[AccessRefusedAnnotation] != desired.Annotations[AccessRefusedAnnotation] {
			instead = holder
		}
		desired = desired.DeepCopy()
		desired.StringData = current
		delete(desired.Annotations, AccessRefusedAnnotation)
		if why, ok := existing.Annotations[AccessRefusedAnnotation]; ok {
			metav1.SetMetaDataAnnotation(&desired.ObjectMeta, AccessRefusedAnnotation, why)
		}
	} else {
		holder = key
	}
	_, unselected := existing.Annotations[api.UnselectedSinceAnnotation]
	_, legacy := existing.Labels[api.OwnerLabel]
	if slices.Contains(claims, key) && !unselected && !legacy && SecretUpToDate(existing, desired) {
		return existing, false, instead
	}
	updated = existing.DeepCopy()
	updated.Labels = desired.Labels
	delete(updated.Annotations, api.UnselectedSinceAnnotation)
	delete(updated.Annotations, AccessRefusedAnnotation)
	if why, ok := desired.Annotations[AccessRefusedAnnotation]; ok {
		metav1.SetMetaDataAnnotation(&updated.ObjectMeta, AccessRefusedAnnotation, why)
	}
	metav1.SetMetaDataAnnotation(&updated.ObjectMeta, AccessHolderAnnotation, holder)
	setClaims(updated, append(claims, key))
	updated.Data, updated.StringData = nil, desired.StringData
	return updated, true, instead
}

// AccessHolderAnnotation on a cluster secret names the GitOpsCluster ("<namespace>/<name>") whose
// access the secret carries (Register); the annotation a ManagedServiceAccount argocd-pull made
// carries for the GitOpsCluster it was made for.
const AccessHolderAnnotation = clusteraccess.AccountOwnerAnnotation

// AccessHolder is the GitOpsCluster whose access the secret carries, "" when none is named.
func AccessHolder(s metav1.Object) string { return s.GetAnnotations()[AccessHolderAnnotation] }

// hasChannel says whether a secret's data reaches its cluster: it carries a config (OCM's channel:
// WithAccess).
func hasChannel(data map[string]string) bool {
	_, ok := data["config"]
	return ok
}

// stringData is a secret's data as strings, what it would be written with.
func stringData(s *corev1.Secret) map[string]string {
	out := make(map[string]string, len(s.Data)+len(s.StringData))
	for k, v := range s.Data {
		out[k] = string(v)
	}
	for k, v := range s.StringData {
		out[k] = v
	}
	return out
}

// Release returns the secret without key's claim, for a GitOpsCluster that no longer registers
// the cluster while another still relies on the secret.
func Release(s *corev1.Secret, key string) *corev1.Secret {
	released := s.DeepCopy()
	setClaims(released, slices.DeleteFunc(Claims(s), func(c string) bool { return c == key }))
	return released
}
