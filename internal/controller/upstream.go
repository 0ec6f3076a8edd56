package controller

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

	"github.com/argocd-pull/argocd-pull/internal/metrics"
	"github.com/argocd-pull/argocd-pull/internal/propagation"
)

// Event reasons of a takeover (see propagation/takeover.go).
const (
	ReasonAdopting = "AdoptingUpstreamWork"
	ReasonAdopted  = "AdoptedUpstreamWork"
)

// upstreamWorks reads the works of the upstream pull controllers (propagation.UpstreamSelectors)
// from caches of their own: the manager's cache holds argocd-pull's works only. Once a fleet is
// taken over they hold nothing.
type upstreamWorks struct {
	caches []cache.Cache
}

// newUpstreamWorks creates the caches, indexed by hub Application, and adds them to mgr.
func newUpstreamWorks(mgr ctrl.Manager) (*upstreamWorks, error) {
	u := &upstreamWorks{}
	for _, selector := range propagation.UpstreamSelectors() {
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
		out = propagation.AppendUpstream(out, works.Items)
	}
	slices.SortFunc(out, func(a, b workv1.ManifestWork) int {
		if olderThan(&a, &b) {
			return -1
		}
		if olderThan(&b, &a) {
			return 1
		}
		return 0
	})
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
				propagation.AppliedAtGeneration(o) != propagation.AppliedAtGeneration(n)
		},
	}
}

// takeOver takes the next step of moving upstream's Application to ours (see
// propagation.NextTakeoverStep): release upstream once ours holds the Application, delete it once
// the agent applied the release. Each step is woken by the agent's report on the other work.
func (r *PropagationReconciler) takeOver(ctx context.Context, app *unstructured.Unstructured, ours, upstream *workv1.ManifestWork) error {
	writer := []any{"writer", propagation.UpstreamWriter(upstream)}
	switch propagation.NextTakeoverStep(ours, upstream) {
	case propagation.TakeoverRelease:
		released, err := propagation.Release(upstream)
		if err != nil || released == nil {
			return err
		}
		if err := r.write(ctx, workWrite{op: metrics.OpUpdate, work: released, kv: writer,
			why: "Releasing the upstream ManifestWork: its Application belongs to argocd-pull's work too"}); err != nil {
			return client.IgnoreNotFound(err)
		}
		metrics.Takeovers.WithLabelValues(metrics.TakeoverReleased).Inc()
		r.Recorder.Eventf(app, nil, corev1.EventTypeNormal, ReasonAdopting, "Adopt",
			"Released ManifestWork %s/%s of %s: the managed-cluster Application belongs to ManifestWork %s too, and stays when it goes",
			upstream.Namespace, upstream.Name, propagation.UpstreamWriter(upstream), ours.Name)
	case propagation.TakeoverDelete:
		err := r.write(ctx, workWrite{op: metrics.OpDelete, work: upstream, exact: true, kv: writer,
			why: "Deleting the released upstream ManifestWork: the agent leaves its Application to argocd-pull's work"})
		switch {
		case apierrors.IsConflict(err):
			return nil // deleted and written again meanwhile: its events bring the Application back
		case err != nil:
			return err
		}
		metrics.Takeovers.WithLabelValues(metrics.TakeoverAdopted).Inc()
		r.Recorder.Eventf(app, nil, corev1.EventTypeNormal, ReasonAdopted, "Adopt",
			"Took the managed-cluster Application over from %s: its ManifestWork %s/%s is deleted, nothing on the cluster was deleted or recreated",
			propagation.UpstreamWriter(upstream), upstream.Namespace, upstream.Name)
	}
	return nil
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
