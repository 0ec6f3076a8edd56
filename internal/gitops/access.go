package gitops

import (
	"fmt"
	"slices"
	"strings"

	gitopsv1beta1 "github.com/argocd-pull/argocd-pull/api/v1beta1"
	"github.com/argocd-pull/argocd-pull/internal/tenancy"
)

// Refusal says why a GitOpsCluster may not write into its Argo CD namespace; the zero value allows.
type Refusal struct {
	Reason, Message string
}

// Refused reports whether the GitOpsCluster is refused.
func (r Refusal) Refused() bool { return r.Reason != "" }

// DecideArgoNamespace applies the rule: a GitOpsCluster in namespace tenant writes into Argo CD
// namespace argoNS only when argoNS is one of the Argo CD namespaces the install names (argocd-pull
// holds RBAC for secrets, ConfigMaps and Roles there and nowhere else), and argoNS is tenant itself
// or a namespace the operator granted to tenant. A namespace label opens nothing: whoever may label
// namespaces is not trusted with another tenant's Argo CD.
func DecideArgoNamespace(tenant, argoNS string, argoCDNamespaces []string, grants tenancy.Grants) Refusal {
	if !slices.Contains(argoCDNamespaces, argoNS) {
		return Refusal{Reason: gitopsv1beta1.ReasonArgoNamespaceForbidden, Message: fmt.Sprintf(
			"Argo CD namespace %s is not allowed: argocd-pull writes only into the Argo CD namespaces it was installed for (%s); the operator must add it to --gitops-namespaces (Helm value gitopsNamespaces), which also gives argocd-pull its RBAC there",
			argoNS, strings.Join(argoCDNamespaces, ", "))}
	}
	if !grants.Allows(tenant, argoNS) {
		return Refusal{Reason: gitopsv1beta1.ReasonArgoNamespaceNotGranted, Message: fmt.Sprintf(
			"Argo CD namespace %s is not granted to namespace %s: a GitOpsCluster writes only into its own namespace or one the operator granted to it (--grant-argocd-namespaces %s=%s); %s may use %s",
			argoNS, tenant, tenant, argoNS, tenant, strings.Join(grants.Of(tenant), ", "))}
	}
	return Refusal{}
}

// MayClaim reports whether a GitOpsCluster may claim cluster secrets in namespace ns: it is not
// being deleted, it writes into ns, and the namespace rule allows it to.
func MayClaim(gc *gitopsv1beta1.GitOpsCluster, ns string, argoCDNamespaces []string, grants tenancy.Grants) bool {
	return gc.DeletionTimestamp.IsZero() && gc.Spec.ArgoServer.ArgoNamespace == ns &&
		!DecideArgoNamespace(gc.Namespace, ns, argoCDNamespaces, grants).Refused()
}
