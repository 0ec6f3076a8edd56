package controller

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/argocd-pull/argocd-pull/internal/appstatus"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/propagation"
)

// StatusReconciler writes what a managed cluster reports through a ManifestWork's status feedback
// onto the hub Application: health, sync status and revision, and the last operation.
type StatusReconciler struct {
	client.Client
}

// SetupWithManager registers the reconciler and its watches.
func (r *StatusReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("appstatus").
		WithOptions(opts).
		// The hub Application matters too: a new spec makes the last report stale.
		For(argocd.NewApplication()).
		Watches(&workv1.ManifestWork{}, handler.EnqueueRequestsFromMapFunc(requestForHubApplication)).
		Complete(r)
}

// Reconcile derives the hub Application's status from its ManifestWork and patches what changed.
func (r *StatusReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	app := argocd.NewApplication()
	if err := r.Get(ctx, req.NamespacedName, app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	target, pull, err := propagation.Decide(app)
	if err != nil || !pull || !app.GetDeletionTimestamp().IsZero() {
		return ctrl.Result{}, nil
	}
	work := &workv1.ManifestWork{}
	key := types.NamespacedName{Namespace: target.Cluster, Name: propagation.WorkName(app.GetNamespace(), app.GetName())}
	if err := r.Get(ctx, key, work); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil // not propagated yet; the work's creation requeues this
		}
		return ctrl.Result{}, fmt.Errorf("reading ManifestWork %s: %w", key, err)
	}
	status := appstatus.Derive(appstatus.Observe(work), appstatus.WantedSource(app))
	updated, changed := appstatus.Apply(app, status)
	if !changed {
		return ctrl.Result{}, nil
	}
	// No status subresource on Applications: a merge patch of the status fields we own.
	if err := r.Patch(ctx, updated, client.MergeFrom(app)); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return ctrl.Result{}, nil
}
