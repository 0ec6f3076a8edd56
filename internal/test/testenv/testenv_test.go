package testenv

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestMain(m *testing.M) { Main(m) }

// Every controller test relies on these kinds being served by the test apiserver.
func TestServesEveryKindTheControllersUse(t *testing.T) {
	env := Get(t)
	ns := env.Namespace(t)
	kinds := map[string]struct {
		gvk        schema.GroupVersionKind
		namespaced bool
	}{
		"report":                   {schema.GroupVersionKind{Group: "apps.open-cluster-management.io", Version: "v1alpha1", Kind: "MulticlusterApplicationSetReportList"}, true},
		"gitopscluster":            {schema.GroupVersionKind{Group: "apps.open-cluster-management.io", Version: "v1beta1", Kind: "GitOpsClusterList"}, true},
		"managedcluster":           {schema.GroupVersionKind{Group: "cluster.open-cluster-management.io", Version: "v1", Kind: "ManagedClusterList"}, false},
		"managedclusterset":        {schema.GroupVersionKind{Group: "cluster.open-cluster-management.io", Version: "v1beta2", Kind: "ManagedClusterSetList"}, false},
		"managedclustersetbinding": {schema.GroupVersionKind{Group: "cluster.open-cluster-management.io", Version: "v1beta2", Kind: "ManagedClusterSetBindingList"}, true},
		"placement":                {schema.GroupVersionKind{Group: "cluster.open-cluster-management.io", Version: "v1beta1", Kind: "PlacementList"}, true},
		"placementdecision":        {schema.GroupVersionKind{Group: "cluster.open-cluster-management.io", Version: "v1beta1", Kind: "PlacementDecisionList"}, true},
		"manifestwork":             {schema.GroupVersionKind{Group: "work.open-cluster-management.io", Version: "v1", Kind: "ManifestWorkList"}, true},
		"application":              {schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "ApplicationList"}, true},
		"applicationset":           {schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "ApplicationSetList"}, true},
		"appproject":               {schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "AppProjectList"}, true},
	}
	for name, k := range kinds {
		t.Run(name, func(t *testing.T) {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(k.gvk)
			var opts []client.ListOption
			if k.namespaced {
				opts = append(opts, client.InNamespace(ns))
			}
			if err := env.Client.List(context.Background(), list, opts...); err != nil {
				t.Fatalf("listing %s: %v", k.gvk.Kind, err)
			}
		})
	}
}
