package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/internal/appstatus"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/gather"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/metrics"
	"github.com/argocd-pull/argocd-pull/internal/propagation"
)

// PropagationReconciler wraps each pull-model hub Application into a ManifestWork in its managed
// cluster's namespace, and removes the work when the Application goes.
type PropagationReconciler struct {
	client.Client
	Recorder events.EventRecorder
	Options  Options

	// changed holds, per hub Application, when a change not yet written to its work was seen.
	changed metrics.Since[types.NamespacedName]
	// created are the works just created, whose creation event need not wake their Application.
	created createdWorks
	// Cache reads the pause ConfigMap, which the client reads from the apiserver (see
	// ManagerOptions).
	Cache client.Reader
	// upstream reads the works of the upstream pull controllers (see takeover.go).
	upstream *upstreamWorks
	// probes reads the clusters' claim probes, and probeWrites serialises this process's writes of
	// them (see claims.go).
	probes      *claimProbes
	probeWrites probeWrites
	// writtenFrom holds, per work this controller updated, the resourceVersion it updated it from
	// (see behindOwnWrite).
	writtenFrom sync.Map
}

// conflictRetry is how soon an Application is read again after a write based on a copy that had
// meanwhile changed (the status controller writes the same object).
const conflictRetry = 100 * time.Millisecond

// Reconcile brings the ManifestWork of one hub Application in line with it.
func (r *PropagationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	result, err := r.reconcile(ctx, req)
	if apierrors.IsConflict(err) {
		// Not an error: the Application changed under us. Status-only changes do not requeue it
		// (see beyondStatus), so ask for it again rather than wait for an event.
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	return result, err
}

func (r *PropagationReconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	app := argocd.NewApplication()
	if err := r.Get(ctx, req.NamespacedName, app); err != nil {
		if apierrors.IsNotFound(err) {
			r.changed.Done(req.NamespacedName, time.Now())
			// Gone, or no longer pull-labelled: its works are orphans.
			return ctrl.Result{}, r.deleteAll(ctx, req.NamespacedName)
		}
		return ctrl.Result{}, fmt.Errorf("reading Application %s: %w", req, err)
	}
	conditions := hubAppConditions{client: r.Client, recorder: r.Recorder}

	target, pull, err := manifestwork.ReadMarkers(app)
	if !app.GetDeletionTimestamp().IsZero() {
		return r.finalize(ctx, app, pull && err == nil)
	}
	pausing, paused, perr := r.pauseOf(ctx, app)
	if perr != nil {
		return ctrl.Result{}, perr
	}
	if paused {
		return ctrl.Result{}, r.pause(ctx, app, pausing, conditions)
	}
	if err == nil && !pull {
		return ctrl.Result{}, r.deleteAll(ctx, req.NamespacedName)
	}
	g, err := gather.Read(ctx, r.Client, r.works(), r.Options.policy(), app, target)
	if err != nil {
		return ctrl.Result{}, err
	}
	if r.behindOwnWrite(g.Facts.Existing) {
		return ctrl.Result{}, nil // the update's event brings the Application back
	}
	if g.Facts.Existing != nil {
		r.created.shown(req.NamespacedName)
	} else if r.created.behind(req.NamespacedName, time.Now()) {
		return ctrl.Result{RequeueAfter: pendingCreateRecheck}, nil // the cache does not show its new work yet
	}
	verdict, err := propagation.Ladder(g.Facts)
	if err != nil {
		return ctrl.Result{}, err
	}
	plan, err := propagation.PlanDelivery(g.Facts, verdict, g.Works, g.Rival)
	if err != nil {
		return ctrl.Result{}, err
	}
	done, err := r.execute(ctx, app, plan.Steps)
	if plan.Refusal != nil {
		// Nothing the managed cluster runs is deleted on a refusal; works the Application may no
		// longer change are frozen. Each refusal waits for a watched change (the Application, its
		// cluster, namespace, bindings, project, the other Application's work).
		refusal := *plan.Refusal
		if err == nil && len(plan.Frozen) > 0 {
			refusal.Message += fmt.Sprintf("; ManifestWork %s frozen: the managed cluster keeps what it runs, with automated sync off, until this is fixed", strings.Join(plan.Frozen, ", "))
		}
		return ctrl.Result{}, errors.Join(err, conditions.refuse(ctx, app, refusal.Reason, refusal.Message))
	}
	if err != nil {
		switch failed := plan.Steps[done]; {
		case apierrors.IsConflict(err), failed.Action == propagation.ActAsk:
			// The work or the probe changed since the cache's copy: no refusal, read it again
			// (see Reconcile; anything but a conflict is retried with the queue's backoff).
			return ctrl.Result{}, err
		case failed.Action == propagation.ActCreate || failed.Action == propagation.ActUpdate:
			if tooLarge(err) {
				return ctrl.Result{}, conditions.refuse(ctx, app, propagation.ReasonPayloadTooLarge, "the apiserver refused the ManifestWork: "+err.Error())
			}
			return ctrl.Result{}, errors.Join(conditions.refuse(ctx, app, propagation.ReasonWorkWriteFailed, err.Error()), err)
		case failed.Upstream:
			r.changed.Done(req.NamespacedName, time.Now()) // the Application's own work is written
		}
		return ctrl.Result{}, err
	}
	result := ctrl.Result{}
	if verdict.Ask != nil {
		// The work is written once the cluster answered: the probe's change brings it back. One
		// that does not answer in time is said on the Application, once.
		if verdict.Waiting != "" {
			return result, conditions.waiting(ctx, app, verdict.Waiting)
		}
		if !verdict.Recheck.IsZero() {
			result.RequeueAfter = requeueAfter(verdict.Recheck)
		}
		return result, conditions.clear(ctx, app)
	}
	if slices.ContainsFunc(plan.Steps, func(s propagation.Step) bool { return s.Action == propagation.ActCreate }) {
		if err := r.tidyProbes(ctx, req.NamespacedName, target.Cluster); err != nil {
			return ctrl.Result{}, err
		}
	}
	r.changed.Done(req.NamespacedName, time.Now()) // nothing more of this change to write
	if !verdict.Recheck.IsZero() {
		// A RollingSync step's sync request waits for the next second (manifestwork.StepDeliverAt).
		result.RequeueAfter = requeueAfter(verdict.Recheck)
	}
	if verdict.Repeated != "" {
		// The patch's own event brings the Application back: its conditions are cleared then.
		return result, conditions.dropRequest(ctx, app, verdict.Repeated)
	}
	return result, conditions.clear(ctx, app)
}

// written records how long the Application change behind a work write waited.
func (r *PropagationReconciler) written(app *unstructured.Unstructured) {
	if app == nil {
		return
	}
	if waited, ok := r.changed.Done(client.ObjectKeyFromObject(app), time.Now()); ok {
		metrics.PropagationLatency.Observe(waited.Seconds())
	}
}

// finalize deletes the Application's works (propagation.PlanFinalize). With Argo CD's resources
// finalizer, each work first carries what its deletion needs, and the finalizer is removed only once
// the works are gone, that is once the managed cluster deleted the Application and its resources.
func (r *PropagationReconciler) finalize(ctx context.Context, app *unstructured.Unstructured, pull bool) (ctrl.Result, error) {
	key := client.ObjectKeyFromObject(app)
	works, err := r.worksOf(ctx, key)
	if err != nil {
		return ctrl.Result{}, err
	}
	steps, wait, err := propagation.PlanFinalize(works, app.GetFinalizers(), pull,
		func(w *workv1.ManifestWork) manifestwork.Reported { return appstatus.Observe(w).Delivery }, time.Now())
	if err != nil {
		return ctrl.Result{}, err
	}
	if _, err := r.execute(ctx, app, steps); err != nil {
		return ctrl.Result{}, err
	}
	result := ctrl.Result{RequeueAfter: wait}
	upstreamLeft, err := r.deleteUpstream(ctx, key)
	if err != nil {
		return ctrl.Result{}, err
	}
	finalizers := app.GetFinalizers()
	kept := slices.DeleteFunc(slices.Clone(finalizers), manifestwork.IsResourcesFinalizer)
	if !pull || len(kept) == len(finalizers) {
		return result, nil
	}
	if len(works) > 0 || upstreamLeft {
		return result, nil // the work deletions requeue this Application
	}
	updated := app.DeepCopy()
	updated.SetFinalizers(kept)
	ctrl.LoggerFrom(ctx).Info("Removing the resources finalizer: the managed cluster removed the Application")
	if err := r.Patch(ctx, updated, client.MergeFromWithOptions(app, client.MergeFromWithOptimisticLock{})); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("removing the finalizer of Application %s: %w", key, err)
	}
	return ctrl.Result{}, nil
}

// deleteAll deletes the works of the hub Application key, an upstream controller's it adopts too.
func (r *PropagationReconciler) deleteAll(ctx context.Context, key types.NamespacedName) error {
	_, err := r.deleteUpstream(ctx, key)
	return errors.Join(r.deleteWorks(ctx, key, nil), err, r.tidyProbes(ctx, key, ""))
}

// deleteWorks deletes the works that point back to the hub Application key, except keep.
func (r *PropagationReconciler) deleteWorks(ctx context.Context, key types.NamespacedName, keep *workv1.ManifestWork) error {
	works, err := r.worksOf(ctx, key)
	if err != nil {
		return err
	}
	return r.remove(ctx, nil, works, keep)
}

func (r *PropagationReconciler) worksOf(ctx context.Context, key types.NamespacedName) ([]workv1.ManifestWork, error) {
	return r.works().Of(ctx, key)
}

// works finds works in the controller's caches, by their indexes.
func (r *PropagationReconciler) works() cachedWorks {
	return cachedWorks{c: r.Client, upstream: r.upstream, probes: r.probes}
}

// tooLarge recognises the apiserver's and etcd's refusals of an oversized object.
func tooLarge(err error) bool {
	return apierrors.IsRequestEntityTooLargeError(err) || strings.Contains(err.Error(), "request is too large") ||
		strings.Contains(err.Error(), "exceeds the") && strings.Contains(err.Error(), "limit")
}
