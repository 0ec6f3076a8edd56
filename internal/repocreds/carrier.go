package repocreds

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

// Carry is the carrier of cluster for d, the decision about its delivered Applications
// (manifestwork.DesiredCredentials): a copy of each credential d delivers there, in the managed
// cluster's Argo CD namespace, held (with its hub Secret's type, Argo CD's label and data) where
// claims, the carrier's answers (manifestwork.CredentialClaims), say the cluster's Secret of its
// name is free or already ours; only read where the cluster has not answered yet, or holds a Secret
// of that name that argocd-pull did not write (foreign). A credential whose Secret is not in
// secrets is not carried. nil when the cluster needs none.
//
// lacking is d's, with each Application that uses a copy that cannot reach the cluster: a foreign
// name, or no room left in the carrier.
func Carry(cluster, namespace string, d Decision, secrets map[types.NamespacedName]*corev1.Secret, claims map[string]manifestwork.Claim) (
	work *workv1.ManifestWork, lacking map[types.NamespacedName][]Lack, err error) {
	lacking = map[types.NamespacedName][]Lack{}
	for app, lacks := range d.Lacking {
		lacking[app] = append(lacking[app], lacks...)
	}
	lack := func(cred types.NamespacedName, why string) {
		for _, u := range d.Users[cred] {
			lacking[u.App] = append(lacking[u.App], Lack{URL: u.URL, Credential: cred, Why: why})
		}
	}
	var copies []manifestwork.CredentialCopy
	for _, key := range d.Deliver[cluster] {
		s := secrets[key]
		if s == nil {
			continue
		}
		c := manifestwork.CredentialCopy{Hub: key, Namespace: namespace}
		switch claims[c.Key()] {
		case manifestwork.ClaimFree, manifestwork.ClaimOurs:
			c.Held, c.Type, c.Data = true, string(s.Type), s.Data
			c.Labels = map[string]string{SecretTypeLabel: s.Labels[SecretTypeLabel]}
		case manifestwork.ClaimForeign:
			lack(key, fmt.Sprintf("cluster %s holds a Secret %s that argocd-pull did not write, and leaves it alone", cluster, c.Key()))
		}
		copies = append(copies, c)
	}
	if len(copies) == 0 {
		return nil, lacking, nil
	}
	work, left, err := manifestwork.DesiredCredentials(cluster, copies)
	if err != nil {
		return nil, nil, err
	}
	for _, c := range left {
		lack(c.Hub, fmt.Sprintf("the credentials cluster %s receives are over the %d bytes one ManifestWork carries", cluster, manifestwork.MaxCredentialsBytes))
	}
	return work, lacking, nil
}

// Message says what an Application lacks, for its condition: never a credential's value.
func Message(lacks []Lack) string {
	parts := make([]string, 0, len(lacks))
	for _, l := range lacks {
		parts = append(parts, fmt.Sprintf("repository %s would use the credential %s, which does not reach the cluster for it: %s", l.URL, l.Credential, l.Why))
	}
	return strings.Join(parts, "; ")
}
