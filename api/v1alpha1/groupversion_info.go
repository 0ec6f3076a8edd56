// Package v1alpha1 holds the MulticlusterApplicationSetReport API: one report per ApplicationSet
// that aggregates the status of its pull-model Applications across managed clusters; and
// ResourceViewHolders, argocd-pull's own records that the hub's admission policy reads.
//
// +kubebuilder:object:generate=true
// +groupName=apps.open-cluster-management.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of the objects in this package.
	GroupVersion = schema.GroupVersion{Group: "apps.open-cluster-management.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &MulticlusterApplicationSetReport{}, &MulticlusterApplicationSetReportList{},
		&ResourceViewHolders{}, &ResourceViewHoldersList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
