package gitops

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/argocd-pull/argocd-pull/api"
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

// Register returns existing brought in line with desired (labels and data), with key among its
// claims and no unselected mark, and whether that changed anything: the write a GitOpsCluster that
// selects the cluster makes.
func Register(existing, desired *corev1.Secret, key string) (*corev1.Secret, bool) {
	claims := Claims(existing)
	_, unselected := existing.Annotations[api.UnselectedSinceAnnotation]
	_, legacy := existing.Labels[api.OwnerLabel]
	if slices.Contains(claims, key) && !unselected && !legacy && SecretUpToDate(existing, desired) {
		return existing, false
	}
	updated := existing.DeepCopy()
	updated.Labels = desired.Labels
	delete(updated.Annotations, api.UnselectedSinceAnnotation)
	delete(updated.Annotations, AccessRefusedAnnotation)
	if why, ok := desired.Annotations[AccessRefusedAnnotation]; ok {
		metav1.SetMetaDataAnnotation(&updated.ObjectMeta, AccessRefusedAnnotation, why)
	}
	setClaims(updated, append(claims, key))
	updated.Data, updated.StringData = nil, desired.StringData
	return updated, true
}

// Release returns the secret without key's claim, for a GitOpsCluster that no longer registers
// the cluster while another still relies on the secret.
func Release(s *corev1.Secret, key string) *corev1.Secret {
	released := s.DeepCopy()
	setClaims(released, slices.DeleteFunc(Claims(s), func(c string) bool { return c == key }))
	return released
}
