// Package gitops decides, without side effects, what a GitOpsCluster puts into the Argo CD
// namespace on the hub: one cluster secret per selected managed cluster, the placement generator
// ConfigMap, and when a secret of a cluster that left the placement may go.
package gitops

import (
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/clusteraccess"
)

// Labels and annotations on the objects a GitOpsCluster manages.
const (
	// SecretTypeLabel makes Argo CD read a Secret as a cluster.
	SecretTypeLabel = "argocd.argoproj.io/secret-type"
)

// PlacementGeneratorName is the ConfigMap the pull-model ApplicationSet's clusterDecisionResource
// generator names.
const PlacementGeneratorName = "ocm-placement-generator"

// SecretName is the name of a managed cluster's Argo CD cluster secret.
func SecretName(cluster string) string { return cluster + "-cluster-secret" }

// ClusterSecret returns the cluster secret of a managed cluster, claimed by the GitOpsCluster
// named claim (see ClaimKey): its labels copied (so that ApplicationSet cluster generators can
// select by them), name and server, and no credentials: in the pull model the hub never connects
// to the cluster.
func ClusterSecret(cluster *clusterv1.ManagedCluster, argoNamespace, claim string) *corev1.Secret {
	labels := maps.Clone(cluster.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[SecretTypeLabel] = "cluster"
	labels[api.ManagedByLabel] = api.ManagedByValue
	labels[api.ClusterLabel] = cluster.Name
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: SecretName(cluster.Name), Namespace: argoNamespace, Labels: labels,
			Annotations: map[string]string{api.ClaimsAnnotation: claim, AccessHolderAnnotation: claim}},
		Type:       corev1.SecretTypeOpaque,
		StringData: map[string]string{"name": cluster.Name, "server": Server(cluster.Name)},
	}
}

// Server is the server of a cluster's secret: a placeholder of the hub's own making, under the
// .invalid domain (RFC 6761: it never resolves), one per cluster. Argo CD needs a server in a
// cluster secret, and in the pull model nothing connects to it. It is never the URL in the
// ManagedCluster's client configs: the cluster's registration agent may write that URL, and a
// credential-free secret naming https://kubernetes.default.svc (or any other address of the hub)
// would make the cluster's name resolve to the hub, with the in-cluster credentials of the hub's
// Argo CD.
func Server(cluster string) string {
	return "https://" + cluster + ".pull-model.invalid"
}

// AccessRefusedAnnotation on a cluster secret that stays credential-free although its GitOpsCluster
// asks for OCM's channel (spec.managedServiceAccountRef) says why: "<Reason>: <message>".
const AccessRefusedAnnotation = "apps.open-cluster-management.io/cluster-access-refused"

// WithAccess puts a cluster's access into its secret: cluster-proxy's address for the cluster
// and the account's token, or, refused, why it stays credential-free. The server is the hub's
// (clusteraccess.Channel.Server), never one the cluster wrote.
func WithAccess(s *corev1.Secret, ch clusteraccess.Channel, a clusteraccess.Access) *corev1.Secret {
	switch {
	case a.UsesChannel():
		s.StringData["server"] = a.Server
		s.StringData["config"] = clusteraccess.ClusterConfig(ch, a.Token)
	case a.Refusal.Refused():
		metav1.SetMetaDataAnnotation(&s.ObjectMeta, AccessRefusedAnnotation, a.Refusal.Reason+": "+a.Refusal.Message)
	}
	return s
}

// SecretUpToDate reports whether an existing secret already holds what desired holds.
func SecretUpToDate(existing, desired *corev1.Secret) bool {
	if existing.Annotations[AccessRefusedAnnotation] != desired.Annotations[AccessRefusedAnnotation] {
		return false
	}
	for k, v := range desired.Labels {
		if existing.Labels[k] != v {
			return false
		}
	}
	for k, v := range desired.StringData {
		if string(existing.Data[k]) != v {
			return false
		}
	}
	return len(existing.Data) == len(desired.StringData)
}

// Removal is the verdict on the secret of a cluster that is no longer selected.
type Removal struct {
	// Delete is true when the secret goes now.
	Delete bool
	// Release is true when the GitOpsCluster drops its claim and the secret stays: another
	// GitOpsCluster relies on it.
	Release bool
	// After is when to look again (zero: on the next change).
	After time.Time
	// Why explains a kept secret.
	Why string
}

// DecideRemoval applies the rule to a secret whose cluster left a GitOpsCluster's placement: when
// another GitOpsCluster that may claim the secret still claims or selects it, the leaving one only
// drops its claim; otherwise the secret is deleted when the grace period since the cluster left is
// over, or at once when its ManagedCluster is gone; but never while a pull-model Application still
// targets the cluster (deleting it would make cluster generators drop their Applications
// mid-flight).
func DecideRemoval(unselectedSince time.Time, clusterExists bool, targetedBy int, reliedOnByOthers bool, grace time.Duration, now time.Time) Removal {
	if reliedOnByOthers {
		return Removal{Release: true, Why: "another GitOpsCluster registers the cluster in this namespace"}
	}
	if targetedBy > 0 {
		return Removal{Why: "an Application still targets the cluster"}
	}
	if !clusterExists {
		return Removal{Delete: true}
	}
	if deadline := unselectedSince.Add(grace); now.Before(deadline) {
		return Removal{After: deadline, Why: "within the grace period after leaving the placement"}
	}
	return Removal{Delete: true}
}

// PlacementGenerator returns the ConfigMap the documents' clusterDecisionResource generator reads.
func PlacementGenerator(argoNamespace string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: PlacementGeneratorName, Namespace: argoNamespace,
			Labels: map[string]string{api.ManagedByLabel: api.ManagedByValue}},
		Data: map[string]string{
			"apiVersion":    "cluster.open-cluster-management.io/v1beta1",
			"kind":          "placementdecisions",
			"statusListKey": "decisions",
			"matchKey":      "clusterName",
		},
	}
}

// Cluster secrets RHACM's GitOpsCluster controller wrote (docs/migration.md): named
// "<cluster>-application-manager-cluster-secret" (or after another managed service account), with
// these labels. Argo CD must not see a cluster twice under one name (an ApplicationSet's cluster
// generator would make two Applications of one name), so while RHACM's secret registers a cluster
// argocd-pull writes none for it, and removes its own if it had one.
const (
	UpstreamSecretLabel      = "apps.open-cluster-management.io/acm-cluster"
	UpstreamSecretCluster    = api.ClusterLabel
	upstreamSecretLabelValue = "true"
)

// UpstreamSecretSelector selects RHACM's cluster secrets (by labels only: their data, which may
// hold credentials, is never read).
func UpstreamSecretSelector() map[string]string {
	return map[string]string{SecretTypeLabel: "cluster", UpstreamSecretLabel: upstreamSecretLabelValue}
}

// UpstreamSecrets maps each cluster to the name of the RHACM cluster secret that registers it,
// among the metadata of secrets; argocd-pull's own never count.
func UpstreamSecrets(secrets []metav1.PartialObjectMetadata) map[string]string {
	out := map[string]string{}
	for _, s := range secrets {
		l := s.Labels
		if l[SecretTypeLabel] != "cluster" || l[UpstreamSecretLabel] != upstreamSecretLabelValue || l[api.ManagedByLabel] == api.ManagedByValue || l[UpstreamSecretCluster] == "" {
			continue
		}
		if name, ok := out[l[UpstreamSecretCluster]]; !ok || s.Name < name {
			out[l[UpstreamSecretCluster]] = s.Name
		}
	}
	return out
}
