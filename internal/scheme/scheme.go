// Package scheme builds the runtime scheme of every typed object argocd-pull reads or writes.
// Argo CD objects are handled as unstructured objects and need no registration.
package scheme

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"

	appsetreportv1alpha1 "github.com/argocd-pull/argocd-pull/api/v1alpha1"
	gitopsv1beta1 "github.com/argocd-pull/argocd-pull/api/v1beta1"
)

// New returns a scheme with Kubernetes, OCM and argocd-pull types.
func New() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		addonv1alpha1.Install,
		clusterv1.Install,
		clusterv1beta1.Install,
		clusterv1beta2.Install,
		workv1.Install,
		appsetreportv1alpha1.AddToScheme,
		gitopsv1beta1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("building scheme: %w", err)
		}
	}
	return s, nil
}
