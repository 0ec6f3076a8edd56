// Package v1beta1 holds the GitOpsCluster API: it registers the managed clusters a Placement
// selects with an Argo CD instance on the hub, as Argo CD cluster secrets.
//
// +kubebuilder:object:generate=true
// +groupName=apps.open-cluster-management.io
package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of the objects in this package.
	GroupVersion = schema.GroupVersion{Group: "apps.open-cluster-management.io", Version: "v1beta1"}

	// SchemeBuilder registers the types of this package with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &GitOpsCluster{}, &GitOpsClusterList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
