package controller

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/propagation"
)

// Cache indexes.
const (
	// workHubAppIndex indexes ManifestWorks by "<namespace>/<name>" of their hub Application.
	workHubAppIndex = "argocd-pull.hubApplication"
	// workPayloadIndex indexes ManifestWorks by "<cluster>/<namespace>/<name>" of the Application
	// they carry (propagation.ManagedApplication).
	workPayloadIndex = "argocd-pull.managedApplication"
	// appClusterIndex indexes Applications by the managed cluster they target.
	appClusterIndex = "argocd-pull.cluster"
	// appProjectIndex indexes Applications by their AppProject.
	appProjectIndex = "argocd-pull.project"
	// appOwnerIndex indexes Applications by "<namespace>/<name>" of their ApplicationSet.
	appOwnerIndex = "argocd-pull.applicationSet"
)

func setupIndexes(mgr ctrl.Manager) error {
	ctx := context.Background()
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &workv1.ManifestWork{}, workHubAppIndex, indexWorkByHubApp); err != nil {
		return fmt.Errorf("indexing ManifestWorks by hub Application: %w", err)
	}
	if err := idx.IndexField(ctx, &workv1.ManifestWork{}, workPayloadIndex, func(o client.Object) []string {
		if key, ok := propagation.ManagedApplication(o.(*workv1.ManifestWork)); ok {
			return []string{key}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing ManifestWorks by managed-cluster Application: %w", err)
	}
	if err := idx.IndexField(ctx, argocd.NewApplication(), appClusterIndex, func(o client.Object) []string {
		if c := o.GetAnnotations()[api.ClusterAnnotation]; c != "" {
			return []string{c}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing Applications by cluster: %w", err)
	}
	if err := idx.IndexField(ctx, argocd.NewApplication(), appProjectIndex, func(o client.Object) []string {
		return []string{argocd.Project(o.(*unstructured.Unstructured))}
	}); err != nil {
		return fmt.Errorf("indexing Applications by project: %w", err)
	}
	if err := idx.IndexField(ctx, argocd.NewApplication(), appOwnerIndex, func(o client.Object) []string {
		if name, ok := argocd.OwningApplicationSet(o.(*unstructured.Unstructured)); ok {
			return []string{o.GetNamespace() + "/" + name}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing Applications by ApplicationSet: %w", err)
	}
	return nil
}

// indexWorkByHubApp is the workHubAppIndex of a ManifestWork.
func indexWorkByHubApp(o client.Object) []string {
	if key, ok := hubApplicationOf(o); ok {
		return []string{key.String()}
	}
	return nil
}

// hubApplicationOf reads a ManifestWork's back-link to its hub Application.
func hubApplicationOf(work client.Object) (types.NamespacedName, bool) {
	a := work.GetAnnotations()
	key := types.NamespacedName{Namespace: a[api.HubApplicationNamespaceAnnotation], Name: a[api.HubApplicationNameAnnotation]}
	return key, key.Namespace != "" && key.Name != ""
}

// workOn returns the hub Application key's ManifestWork on cluster, found by its back-link
// whatever its name (works of earlier releases have shorter names), nil when there is none. A
// work never counts as another Application's, even one named as its would be.
func workOn(ctx context.Context, c client.Reader, cluster string, key types.NamespacedName, opts ...client.ListOption) (*workv1.ManifestWork, error) {
	works := &workv1.ManifestWorkList{}
	opts = append(opts, client.InNamespace(cluster), client.MatchingFields{workHubAppIndex: key.String()})
	if err := c.List(ctx, works, opts...); err != nil {
		return nil, fmt.Errorf("listing ManifestWorks of Application %s on %s: %w", key, cluster, err)
	}
	return oldest(works.Items, func(*workv1.ManifestWork) bool { return true }), nil
}

// oldest is the oldest of the works that match (by creation, then name) and are not being
// deleted, nil when none is.
func oldest(works []workv1.ManifestWork, match func(*workv1.ManifestWork) bool) *workv1.ManifestWork {
	var out *workv1.ManifestWork
	for i := range works {
		w := &works[i]
		if !match(w) || !w.DeletionTimestamp.IsZero() {
			continue
		}
		if out == nil || olderThan(w, out) {
			out = w
		}
	}
	return out
}

// olderThan orders works by creation, then name.
func olderThan(a, b *workv1.ManifestWork) bool {
	return a.CreationTimestamp.Before(&b.CreationTimestamp) ||
		a.CreationTimestamp.Equal(&b.CreationTimestamp) && a.Name < b.Name
}

// requestForHubApplication maps a ManifestWork to its hub Application.
func requestForHubApplication(_ context.Context, work client.Object) []reconcile.Request {
	if key, ok := hubApplicationOf(work); ok {
		return []reconcile.Request{{NamespacedName: key}}
	}
	return nil
}

// applicationRequests lists the pull-labelled Applications matching opts as requests. The list
// is read without copies: only names are taken from it.
func applicationRequests(ctx context.Context, c client.Reader, opts ...client.ListOption) []reconcile.Request {
	apps := argocd.NewApplicationList()
	if err := c.List(ctx, apps, append(opts, client.UnsafeDisableDeepCopy)...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing Applications to requeue")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(apps.Items))
	for _, app := range apps.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: app.GetNamespace(), Name: app.GetName()}})
	}
	return reqs
}
