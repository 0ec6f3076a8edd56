package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
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
// onto the hub Application: health, sync status and revision, and the last operation. In the same
// write it clears the sync and refresh requests the managed cluster has finished (see
// propagation.Clears).
type StatusReconciler struct {
	client.Client
	Recorder events.EventRecorder
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
	obs := appstatus.Observe(work)
	updated, changed := appstatus.Apply(app, appstatus.Derive(obs, appstatus.WantedSource(app)))
	clearSync, clearRefresh := propagation.Clears(propagation.HubOf(app), obs.Carried, obs.Delivery)
	if clearSync {
		delete(updated.Object, "operation")
	}
	if clearRefresh {
		annotations := updated.GetAnnotations()
		delete(annotations, argocd.RefreshAnnotation)
		annotations[propagation.RefreshDeliveredAnnotation] = obs.Carried.Refresh.ID
		updated.SetAnnotations(annotations)
	}
	if !changed && !clearSync && !clearRefresh {
		return ctrl.Result{}, nil
	}
	// No status subresource on Applications: a merge patch of the status fields we own. A request
	// is cleared under an optimistic lock, so that a newer one made meanwhile is never cleared.
	patch := client.MergeFrom(app)
	if clearSync || clearRefresh {
		ctrl.LoggerFrom(ctx).Info("Clearing the requests the managed cluster finished", "manifestWork", klog.KObj(work), "sync", clearSync, "refresh", clearRefresh)
		patch = client.MergeFromWithOptions(app, client.MergeFromWithOptimisticLock{})
	}
	if err := r.Patch(ctx, updated, patch); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: conflictRetry}, nil
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if clearSync || clearRefresh {
		r.Recorder.Eventf(app, nil, corev1.EventTypeNormal, ReasonDelivered, "Deliver",
			"The managed cluster %s finished the requested %s", work.Namespace, requestNames(clearSync, clearRefresh))
	}
	return ctrl.Result{}, nil
}

func requestNames(sync, refresh bool) string {
	switch {
	case sync && refresh:
		return "sync and refresh"
	case sync:
		return "sync"
	}
	return "refresh"
}
