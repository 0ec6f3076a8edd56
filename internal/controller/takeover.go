package controller

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/argocd-pull/argocd-pull/internal/gather"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/metrics"
)

// Event reasons of a takeover (see manifestwork/takeover.go).
const (
	ReasonAdopting = "AdoptingUpstreamWork"
	ReasonAdopted  = "AdoptedUpstreamWork"
)

// upstreamWorks reads the works of the upstream pull controllers (manifestwork.UpstreamSelectors)
// from caches of their own: the manager's cache holds argocd-pull's works only. Once a fleet is
// taken over they hold nothing.
type upstreamWorks struct {
	caches []cache.Cache
}

// newUpstreamWorks creates the caches, indexed by hub Application, and adds them to mgr.
func newUpstreamWorks(mgr ctrl.Manager) (*upstreamWorks, error) {
	u := &upstreamWorks{}
	for _, selector := range manifestwork.UpstreamSelectors() {
		c, err := cache.New(mgr.GetConfig(), cache.Options{
			Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
			ByObject: map[client.Object]cache.ByObject{&workv1.ManifestWork{}: {Label: selector}},
		})
		if err != nil {
			return nil, fmt.Errorf("creating the cache of upstream ManifestWorks: %w", err)
		}
		if err := c.IndexField(context.Background(), &workv1.ManifestWork{}, workHubAppIndex, indexWorkByHubApp); err != nil {
			return nil, err
		}
		if err := mgr.Add(c); err != nil {
			return nil, fmt.Errorf("adding the cache of upstream ManifestWorks: %w", err)
		}
		u.caches = append(u.caches, c)
	}
	return u, nil
}

// of returns the upstream works of the hub Application key on cluster, oldest first, each once.
func (u *upstreamWorks) of(ctx context.Context, cluster string, key types.NamespacedName) ([]workv1.ManifestWork, error) {
	var out []workv1.ManifestWork
	opts := []client.ListOption{client.MatchingFields{workHubAppIndex: key.String()}}
	if cluster != "" {
		opts = append(opts, client.InNamespace(cluster))
	}
	for _, c := range u.caches {
		works := &workv1.ManifestWorkList{}
		if err := c.List(ctx, works, opts...); err != nil {
			return nil, fmt.Errorf("listing upstream ManifestWorks of Application %s: %w", key, err)
		}
		out = manifestwork.AppendUpstream(out, works.Items)
	}
	gather.SortOldestFirst(out)
	return out, nil
}

// sources are the upstream works' events, each mapped to the hub Application it names: its
// creation, deletion, spec and metadata changes, and the agent applying it. Feedback is not passed.
func (u *upstreamWorks) sources() []source.Source {
	var out []source.Source
	for _, c := range u.caches {
		out = append(out, source.Kind[client.Object](c, &workv1.ManifestWork{}, handler.EnqueueRequestsFromMapFunc(requestForHubApplication), upstreamWorkChanged()))
	}
	return out
}

func upstreamWorkChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, okOld := e.ObjectOld.(*workv1.ManifestWork)
			n, okNew := e.ObjectNew.(*workv1.ManifestWork)
			return !okOld || !okNew || o.Generation != n.Generation || !n.DeletionTimestamp.IsZero() ||
				manifestwork.AppliedAtGeneration(o) != manifestwork.AppliedAtGeneration(n)
		},
	}
}

// deleteUpstream deletes the upstream works of the hub Application key, when argocd-pull adopts
// them: a deleted (or no longer pull-model) Application goes from the managed clusters as it
// would have with the upstream controller. It reports whether some remain.
func (r *PropagationReconciler) deleteUpstream(ctx context.Context, key types.NamespacedName) (bool, error) {
	if !r.Options.AdoptUpstreamWorks || r.upstream == nil {
		return false, nil
	}
	works, err := r.upstream.of(ctx, "", key)
	if err != nil {
		return false, err
	}
	for i := range works {
		w := &works[i]
		if !w.DeletionTimestamp.IsZero() {
			continue
		}
		if err := r.write(ctx, workWrite{op: metrics.OpDelete, work: w, exact: true, why: "Deleting the upstream ManifestWork of a deleted Application"}); err != nil {
			return true, err
		}
	}
	return len(works) > 0, nil
}

var _ reconcile.Reconciler = &PropagationReconciler{}
