package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ResourceViewHolders records hub Applications whose resource trees in the hub Argo CD's cache
// carry their cluster's uids, each with the destination it holds its tree for. argocd-pull alone
// writes these, in the Argo CD namespace, before such a tree is written and after it is gone
// (internal/viewholders), and the admission policy argocd-pull-resource-view-holders reads them as
// its parameters: an Application created under a recorded name with another destination is
// refused (docs/security.md, "Resource views"). Users neither write nor need to read them.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories=argocd-pull
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ResourceViewHolders struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Holders maps each recorded Application, "<namespace>_<name>", to the destination its tree is
	// held for: spec.destination.name, a space, and spec.destination.server.
	// +optional
	Holders map[string]string `json:"holders,omitempty"`
}

// +kubebuilder:object:root=true

// ResourceViewHoldersList is a list of ResourceViewHolders.
type ResourceViewHoldersList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ResourceViewHolders `json:"items"`
}
