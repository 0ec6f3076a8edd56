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
	"github.com/argocd-pull/argocd-pull/internal/gather"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

// Cache indexes.
const (
	// workHubAppIndex indexes ManifestWorks by "<namespace>/<name>" of their hub Application.
	workHubAppIndex = "argocd-pull.hubApplication"
	// workPayloadIndex indexes ManifestWorks by "<cluster>/<namespace>/<name>" of the Application
	// they carry (manifestwork.ManagedApplication).
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
		if key, ok := manifestwork.ManagedApplication(o.(*workv1.ManifestWork)); ok {
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
	if key, ok := manifestwork.HubApplicationOf(o); ok {
		return []string{key.String()}
	}
	return nil
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
	return manifestwork.Oldest(works.Items, func(*workv1.ManifestWork) bool { return true }), nil
}

// requestForHubApplication maps a ManifestWork to its hub Application.
func requestForHubApplication(_ context.Context, work client.Object) []reconcile.Request {
	if key, ok := manifestwork.HubApplicationOf(work); ok {
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

// cachedWorks finds works in the controller's caches, by their indexes (gather.Works).
type cachedWorks struct {
	c        client.Reader
	upstream *upstreamWorks // nil: none are read
	probes   *claimProbes   // nil: none are read
}

var _ gather.Works = cachedWorks{}

func (w cachedWorks) Of(ctx context.Context, key types.NamespacedName) ([]workv1.ManifestWork, error) {
	works := &workv1.ManifestWorkList{}
	if err := w.c.List(ctx, works, client.MatchingFields{workHubAppIndex: key.String()}); err != nil {
		return nil, fmt.Errorf("listing ManifestWorks of Application %s: %w", key, err)
	}
	return works.Items, nil
}

func (w cachedWorks) Carrying(ctx context.Context, cluster, managed string) ([]workv1.ManifestWork, error) {
	works := &workv1.ManifestWorkList{}
	if err := w.c.List(ctx, works, client.InNamespace(cluster), client.MatchingFields{workPayloadIndex: managed}); err != nil {
		return nil, fmt.Errorf("listing ManifestWorks carrying %s: %w", managed, err)
	}
	return works.Items, nil
}

func (w cachedWorks) Probe(ctx context.Context, cluster string) (*workv1.ManifestWork, error) {
	return w.probes.of(ctx, cluster)
}

func (w cachedWorks) Upstream(ctx context.Context, cluster string, key types.NamespacedName) ([]workv1.ManifestWork, error) {
	if w.upstream == nil {
		return nil, nil
	}
	return w.upstream.of(ctx, cluster, key)
}
