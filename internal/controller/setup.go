// Package controller holds the argocd-pull reconcilers, one file each. Setup wires them into a
// manager; main and the tests call the same Setup, so what is tested is what runs.
package controller

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	appsetreportv1alpha1 "github.com/argocd-pull/argocd-pull/api/v1alpha1"
	gitopsv1beta1 "github.com/argocd-pull/argocd-pull/api/v1beta1"
)

// DefaultArgoCDNamespace is where the hub's Argo CD runs unless told otherwise.
const DefaultArgoCDNamespace = "argocd"

// Options configure the controllers. The zero value is not valid: start from DefaultOptions.
type Options struct {
	// ArgoCDNamespace is the namespace of the hub's Argo CD.
	ArgoCDNamespace string
	// PullNamespaces are the namespaces pull-model Applications are taken from. Empty means
	// ArgoCDNamespace only.
	PullNamespaces []string
	// MaxConcurrentReconciles bounds the workers of each controller.
	MaxConcurrentReconciles int
}

// DefaultOptions returns the options used when no flag is given.
func DefaultOptions() Options {
	return Options{
		ArgoCDNamespace:         DefaultArgoCDNamespace,
		MaxConcurrentReconciles: 4,
	}
}

// NewScheme returns a scheme with every type the controllers read or write. Argo CD types are
// handled as unstructured objects and need no registration.
func NewScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		clusterv1.Install,
		clusterv1beta1.Install,
		clusterv1beta2.Install,
		workv1.Install,
		appsetreportv1alpha1.AddToScheme,
		gitopsv1beta1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("building scheme: %w", err)
		}
	}
	return scheme, nil
}

// Setup registers the controllers with the manager.
func Setup(mgr ctrl.Manager, opts Options) error {
	if opts.ArgoCDNamespace == "" {
		return fmt.Errorf("the Argo CD namespace must not be empty")
	}
	if opts.MaxConcurrentReconciles < 1 {
		return fmt.Errorf("max concurrent reconciles must be at least 1, got %d", opts.MaxConcurrentReconciles)
	}
	return nil
}
