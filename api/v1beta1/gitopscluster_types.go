package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types of a GitOpsCluster.
const (
	// ReadyCondition is True when every selected cluster has its Argo CD cluster secret.
	ReadyCondition = "Ready"
	// PlacementResolvedCondition is True when the referenced Placement exists and was read.
	PlacementResolvedCondition = "PlacementResolved"
	// ClustersRegisteredCondition is True when a cluster secret exists for every selected cluster.
	ClustersRegisteredCondition = "ClustersRegistered"
	// ClusterAccessCondition, set only with spec.managedServiceAccountRef, is True when every
	// registered cluster's secret reaches it through OCM's channel (cluster-proxy, with the
	// ManagedServiceAccount's token); False names the clusters whose secrets stay credential-free
	// and why. It does not make the GitOpsCluster un-Ready: delivery and status do not need it.
	ClusterAccessCondition = "ClusterAccess"
)

// Condition reasons of a GitOpsCluster.
const (
	ReasonSucceeded              = "Succeeded"
	ReasonPlacementNotFound      = "PlacementNotFound"
	ReasonPlacementNotAllowed    = "PlacementNotAllowed"
	ReasonNoClustersSelected     = "NoClustersSelected"
	ReasonArgoNamespaceForbidden = "ArgoNamespaceNotAllowed"
	// ReasonArgoNamespaceNotGranted: the Argo CD namespace is neither the GitOpsCluster's own nor
	// one the operator granted to its namespace (--grant-argocd-namespaces).
	ReasonArgoNamespaceNotGranted = "ArgoNamespaceNotGranted"
	ReasonSecretConflict          = "SecretConflict"
	ReasonReconcileError          = "ReconcileError"
)

// Phase values, as in the documents.
const (
	PhaseSuccessful = "successful"
	PhaseFailed     = "failed"
)

// GitOpsClusterSpec says which Argo CD instance on the hub receives the clusters of which
// Placement.
type GitOpsClusterSpec struct {
	// ArgoServer is the Argo CD instance on the hub.
	ArgoServer ArgoServerSpec `json:"argoServer"`

	// PlacementRef names the Placement, in the GitOpsCluster's own namespace, whose decisions
	// select the clusters. Kind must be Placement.
	PlacementRef *corev1.ObjectReference `json:"placementRef"`

	// ManagedServiceAccountRef names a ManagedServiceAccount, in each selected cluster's
	// namespace, whose token goes into the cluster's secret, with cluster-proxy's address for the
	// cluster: the hub's read-only way to it (docs/cluster-access.md). argocd-pull creates the
	// account and delivers its read-only rights; the install must set up the channel and allow the
	// name (--cluster-proxy-url, --managed-serviceaccounts). Unset, the secrets are credential-free.
	// +optional
	ManagedServiceAccountRef string `json:"managedServiceAccountRef,omitempty"`

	// CreateBlankClusterSecrets makes cluster secrets without credentials: the pull model, in
	// which the hub never connects to the managed clusters.
	// +optional
	CreateBlankClusterSecrets *bool `json:"createBlankClusterSecrets,omitempty"`

	// CreatePolicyTemplate is accepted for compatibility with upstream manifests and ignored.
	// +optional
	CreatePolicyTemplate *bool `json:"createPolicyTemplate,omitempty"`
}

// ArgoServerSpec locates the hub's Argo CD.
type ArgoServerSpec struct {
	// Cluster is kept for compatibility with upstream manifests ("local-cluster", "notused").
	// +optional
	Cluster string `json:"cluster,omitempty"`

	// ArgoNamespace is the namespace of the Argo CD instance. The operator must have allowed it.
	// +kubebuilder:validation:MinLength=1
	ArgoNamespace string `json:"argoNamespace"`
}

// GitOpsClusterStatus is the observed state of a GitOpsCluster.
type GitOpsClusterStatus struct {
	// Phase is "successful" or "failed".
	// +optional
	Phase string `json:"phase,omitempty"`

	// Message says what happened, or what to fix.
	// +optional
	Message string `json:"message,omitempty"`

	// LastUpdateTime is when the status last changed.
	// +optional
	LastUpdateTime metav1.Time `json:"lastUpdateTime,omitempty"`

	// ObservedGeneration is the generation last reconciled successfully.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, PlacementResolved, ClustersRegistered.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// GitOpsCluster registers the clusters a Placement selects with an Argo CD instance on the hub.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type GitOpsCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec GitOpsClusterSpec `json:"spec"`
	// +optional
	Status GitOpsClusterStatus `json:"status,omitempty"`
}

// GitOpsClusterList is a list of GitOpsClusters.
//
// +kubebuilder:object:root=true
type GitOpsClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GitOpsCluster `json:"items"`
}
