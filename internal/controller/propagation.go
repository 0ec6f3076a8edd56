package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/appstatus"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
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
	// upstream reads the works of the upstream pull controllers (see upstream.go).
	upstream *upstreamWorks
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

	target, pull, err := propagation.Decide(app)
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
	facts, g, err := r.gather(ctx, app, target)
	if err != nil {
		return ctrl.Result{}, err
	}
	verdict, err := propagation.Ladder(facts)
	if err != nil {
		return ctrl.Result{}, err
	}
	if verdict.Refusal != nil {
		// Nothing the managed cluster runs is deleted on a refusal; works the Application may no
		// longer change are frozen. Each refusal waits for a watched change (the Application, its
		// cluster, namespace, bindings, project, the other Application's work).
		refusal := *verdict.Refusal
		held, err := r.holdBack(ctx, app, target, refusal, g)
		if held != "" {
			refusal.Message += "; " + held
		}
		return ctrl.Result{}, errors.Join(err, conditions.refuse(ctx, app, refusal.Reason, refusal.Message))
	}
	desired := verdict.Work
	if err := r.deleteListed(ctx, req.NamespacedName, g.works, desired); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.apply(ctx, app, desired, facts.Existing); err != nil {
		if tooLarge(err) {
			return ctrl.Result{}, conditions.refuse(ctx, app, propagation.ReasonPayloadTooLarge, "the apiserver refused the ManifestWork: "+err.Error())
		}
		return ctrl.Result{}, errors.Join(conditions.refuse(ctx, app, propagation.ReasonWorkWriteFailed, err.Error()), err)
	}
	r.changed.Done(req.NamespacedName, time.Now()) // nothing more of this change to write
	if facts.Upstream != nil {
		if err := r.takeOver(ctx, app, facts.Existing, facts.Upstream); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, conditions.clear(ctx, app)
}

// gathered is what gather read besides the ladder's facts, for acting on its verdict.
type gathered struct {
	// works are the Application's ManifestWorks, on every cluster.
	works []workv1.ManifestWork
	// rival is the older work of another hub Application that carries the managed-cluster
	// Application this one would deliver, nil when there is none.
	rival *workv1.ManifestWork
}

// gather reads what the ladder decides on (see propagation.Facts) from the cache, and the
// Application's works. Nothing but its works is read for Applications with invalid markers.
func (r *PropagationReconciler) gather(ctx context.Context, app *unstructured.Unstructured, target propagation.Target) (propagation.Facts, gathered, error) {
	var g gathered
	f, err := propagation.ReadFacts(ctx, r.Client, r.Options.policy(), app, target)
	if err != nil {
		return f, g, err
	}
	key := client.ObjectKeyFromObject(app)
	if g.works, err = r.worksOf(ctx, key); err != nil || target.Cluster == "" {
		return f, g, err
	}
	f.Existing = oldest(g.works, func(w *workv1.ManifestWork) bool { return w.Namespace == target.Cluster })
	if f.Existing == nil {
		if f.NameTakenBy, err = r.nameTakenBy(ctx, target.Cluster, key); err != nil {
			return f, g, err
		}
	}
	if g.rival, err = r.rival(ctx, target, key, f.Existing); err != nil {
		return f, g, err
	}
	if r.upstream != nil {
		upstream, err := r.upstream.of(ctx, target.Cluster, key)
		if err != nil {
			return f, g, err
		}
		if len(upstream) > 0 {
			f.Upstream = &upstream[0]
		}
	}
	if g.rival != nil {
		owner, _ := hubApplicationOf(g.rival)
		f.DeliveredBy = owner.String()
	}
	if f.Existing != nil {
		obs := appstatus.Observe(f.Existing)
		f.Carried, f.Reported = obs.Carried, obs.Delivery
		f.Carried.Operation, f.Carried.RefreshValue = propagation.PayloadRequests(f.Existing)
	}
	return f, g, nil
}

// nameTakenBy is the hub Application whose work holds the name the Application's new work on
// cluster would take, "" when the name is free. The controller never writes a work that points
// back to another Application.
func (r *PropagationReconciler) nameTakenBy(ctx context.Context, cluster string, key types.NamespacedName) (string, error) {
	work := &workv1.ManifestWork{}
	name := types.NamespacedName{Namespace: cluster, Name: propagation.WorkName(key.Namespace, key.Name)}
	if err := r.Get(ctx, name, work); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("reading ManifestWork %s: %w", name, err)
	}
	if owner, ok := hubApplicationOf(work); !ok || owner != key {
		return owner.String(), nil
	}
	return "", nil
}

// rival is the work of another hub Application that carries the managed-cluster Application
// this one (key) would deliver to target and is older than this one's (existing, nil when none):
// the first one keeps it. Nil when there is none.
func (r *PropagationReconciler) rival(ctx context.Context, target propagation.Target, key types.NamespacedName, existing *workv1.ManifestWork) (*workv1.ManifestWork, error) {
	works := &workv1.ManifestWorkList{}
	managed := propagation.ManagedKey(target, key.Name)
	if err := r.List(ctx, works, client.InNamespace(target.Cluster), client.MatchingFields{workPayloadIndex: managed}); err != nil {
		return nil, fmt.Errorf("listing ManifestWorks carrying %s: %w", managed, err)
	}
	first := oldest(works.Items, func(w *workv1.ManifestWork) bool {
		owner, ok := hubApplicationOf(w)
		return !ok || owner != key
	})
	if first == nil || existing != nil && !olderThan(first, existing) {
		return nil, nil
	}
	return first, nil
}

// holdBack acts on a refusal and says what it did, for the condition. A work of the Application
// that the refusal withdraws the right to (propagation.Revokes), or that is on another cluster
// than the one the Application now names, is frozen (propagation.Freeze): the managed cluster
// keeps what it runs and syncs nothing new. A work that carries the same managed-cluster
// Application as an older one of another hub Application is deleted once that one is applied: the
// work agent then only drops this work's ownership, and the Application stays.
func (r *PropagationReconciler) holdBack(ctx context.Context, app *unstructured.Unstructured, target propagation.Target, refusal propagation.Refusal, g gathered) (string, error) {
	var frozen []string
	for i := range g.works {
		w := &g.works[i]
		onTarget := w.Namespace == target.Cluster
		switch {
		case !w.DeletionTimestamp.IsZero():
			continue
		case onTarget && refusal.Reason == propagation.ReasonUpstreamRunning:
			if _, err := r.pauseWork(ctx, w, "the upstream pull controller still writes its ManifestWork"); err != nil {
				return "", err
			}
			continue
		case onTarget && refusal.Reason == propagation.ReasonAlreadyDelivered:
			if err := r.yieldTo(ctx, w, g.rival, propagation.ManagedKey(target, app.GetName())); err != nil {
				return "", err
			}
			continue
		case onTarget && !propagation.Revokes(refusal.Reason):
			continue
		}
		f, err := propagation.Freeze(w, refusal.Reason)
		if err != nil {
			return "", err
		}
		frozen = append(frozen, w.Namespace+"/"+w.Name)
		if f == nil {
			continue
		}
		if err := r.write(ctx, workWrite{op: metrics.OpUpdate, work: f, why: "Freezing ManifestWork", kv: []any{"reason", refusal.Reason}}); err != nil {
			return "", err
		}
		r.Recorder.Eventf(app, nil, corev1.EventTypeWarning, ReasonFrozen, "Freeze",
			"Froze ManifestWork %s/%s: the managed cluster keeps what it runs, with automated sync off (%s)", w.Namespace, w.Name, refusal.Reason)
	}
	if len(frozen) == 0 {
		return "", nil
	}
	return fmt.Sprintf("ManifestWork %s frozen: the managed cluster keeps what it runs, with automated sync off, until this is fixed", strings.Join(frozen, ", ")), nil
}

// yieldTo deletes w, a work of an Application refused because rival (an older work of another
// Application) carries the same managed-cluster Application, once rival is applied on the
// cluster: the work agent then only drops w's ownership, and the Application stays.
func (r *PropagationReconciler) yieldTo(ctx context.Context, w, rival *workv1.ManifestWork, managed string) error {
	if carried, _ := propagation.ManagedApplication(w); carried != managed {
		return nil // w carries another managed-cluster Application: deleting it would delete that one
	}
	if rival == nil || !propagation.AppliedAtGeneration(rival) {
		return nil // its status update requeues this Application (see appsRefusedFor)
	}
	return r.write(ctx, workWrite{op: metrics.OpDelete, work: w, why: "Deleting ManifestWork: another Application delivers the same managed-cluster Application",
		kv: []any{"other", klog.KObj(rival)}})
}

// apply creates or updates the work, writing only when it differs from what the hub wants.
func (r *PropagationReconciler) apply(ctx context.Context, app *unstructured.Unstructured, desired, existing *workv1.ManifestWork) error {
	switch {
	case existing == nil:
		if err := r.write(ctx, workWrite{op: metrics.OpCreate, work: desired, why: "Creating ManifestWork"}); err != nil {
			return err
		}
		r.created.add(desired, time.Now())
		// No event: one per created work was a quarter of the requests of a fleet's rollout. The
		// work itself, the log line and argocd_pull_work_writes_total record it; events are for
		// refusals, moves, freezes and deliveries.
		r.written(app)
		return nil
	case propagation.UpToDate(existing, desired):
		return nil
	}
	updated := existing.DeepCopy()
	updated.Labels = merged(updated.Labels, desired.Labels)
	updated.Annotations = merged(updated.Annotations, desired.Annotations)
	for _, k := range []string{api.DeliveriesAnnotation, api.FrozenAnnotation, api.PausedAnnotation, api.AdoptingAnnotation} {
		if _, ok := desired.Annotations[k]; !ok {
			delete(updated.Annotations, k)
		}
	}
	if since := propagation.RequestsOnlySince(existing, desired); since != "" {
		updated.Annotations[api.RequestsOnlyAnnotation] = since
	} else {
		delete(updated.Annotations, api.RequestsOnlyAnnotation)
	}
	updated.Spec = desired.Spec
	if err := r.write(ctx, workWrite{op: metrics.OpUpdate, work: updated, why: "Updating ManifestWork"}); err != nil {
		return err
	}
	r.written(app)
	return nil
}

// written records how long the Application change behind a work write waited.
func (r *PropagationReconciler) written(app client.Object) {
	if waited, ok := r.changed.Done(client.ObjectKeyFromObject(app), time.Now()); ok {
		metrics.PropagationLatency.Observe(waited.Seconds())
	}
}

// finalize deletes the Application's works. With Argo CD's resources finalizer, each work first
// carries what its deletion needs (propagation.FinalWork), and the finalizer is removed only once
// the works are gone, that is once the managed cluster deleted the Application and its resources.
func (r *PropagationReconciler) finalize(ctx context.Context, app *unstructured.Unstructured, pull bool) (ctrl.Result, error) {
	key := client.ObjectKeyFromObject(app)
	works, err := r.worksOf(ctx, key)
	if err != nil {
		return ctrl.Result{}, err
	}
	var result ctrl.Result
	deletable := works[:0:0]
	for i := range works {
		w := &works[i]
		if !pull || !w.DeletionTimestamp.IsZero() {
			deletable = append(deletable, *w)
			continue
		}
		updated, wait, err := propagation.FinalWork(w, app.GetFinalizers(), appstatus.Observe(w).Delivery, time.Now())
		switch {
		case err != nil:
			return ctrl.Result{}, err
		case updated != nil:
			if err := r.write(ctx, workWrite{op: metrics.OpUpdate, work: updated,
				why: "Updating ManifestWork before deleting it: what its Application's deletion needs reaches the managed cluster first"}); err != nil {
				return ctrl.Result{}, err
			}
		case wait > 0:
			if result.RequeueAfter == 0 || wait < result.RequeueAfter {
				result.RequeueAfter = wait
			}
		default:
			deletable = append(deletable, *w)
		}
	}
	if err := r.deleteListed(ctx, key, deletable, nil); err != nil {
		return ctrl.Result{}, err
	}
	upstreamLeft, err := r.deleteUpstream(ctx, key)
	if err != nil {
		return ctrl.Result{}, err
	}
	finalizers := app.GetFinalizers()
	kept := slices.DeleteFunc(slices.Clone(finalizers), propagation.IsResourcesFinalizer)
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
	return errors.Join(r.deleteWorks(ctx, key, nil), err)
}

// deleteWorks deletes the works that point back to the hub Application key, except keep.
func (r *PropagationReconciler) deleteWorks(ctx context.Context, key types.NamespacedName, keep *workv1.ManifestWork) error {
	works, err := r.worksOf(ctx, key)
	if err != nil {
		return err
	}
	return r.deleteListed(ctx, key, works, keep)
}

// deleteListed deletes works, the works of the hub Application key, except keep.
func (r *PropagationReconciler) deleteListed(ctx context.Context, key types.NamespacedName, works []workv1.ManifestWork, keep *workv1.ManifestWork) error {
	for i := range works {
		w := &works[i]
		if keep != nil && w.Namespace == keep.Namespace && w.Name == keep.Name {
			continue
		}
		if !w.DeletionTimestamp.IsZero() {
			continue
		}
		if !propagation.DeleteNow(w) {
			if err := r.release(ctx, w); err != nil {
				return err
			}
			continue
		}
		if err := r.write(ctx, workWrite{op: metrics.OpDelete, work: w, why: "Deleting ManifestWork"}); err != nil {
			return err
		}
		if keep != nil {
			app := argocd.NewApplication()
			app.SetNamespace(key.Namespace)
			app.SetName(key.Name)
			if r.Get(ctx, key, app) == nil {
				r.Recorder.Eventf(app, nil, corev1.EventTypeNormal, ReasonRetargeted, "Propagate", "Moved from cluster %s to cluster %s", w.Namespace, keep.Namespace)
			}
		}
	}
	return nil
}

func (r *PropagationReconciler) worksOf(ctx context.Context, key types.NamespacedName) ([]workv1.ManifestWork, error) {
	works := &workv1.ManifestWorkList{}
	if err := r.List(ctx, works, client.MatchingFields{workHubAppIndex: key.String()}); err != nil {
		return nil, fmt.Errorf("listing ManifestWorks of Application %s: %w", key, err)
	}
	return works.Items, nil
}

// tooLarge recognises the apiserver's and etcd's refusals of an oversized object.
func tooLarge(err error) bool {
	return apierrors.IsRequestEntityTooLargeError(err) || strings.Contains(err.Error(), "request is too large") ||
		strings.Contains(err.Error(), "exceeds the") && strings.Contains(err.Error(), "limit")
}

func merged(base, over map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}
