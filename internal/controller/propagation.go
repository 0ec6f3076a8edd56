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
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

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

// +kubebuilder:rbac:groups=argoproj.io,resources=applications,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=argoproj.io,resources=appprojects,verbs=get;list;watch
// +kubebuilder:rbac:groups=work.open-cluster-management.io,resources=manifestworks,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=cluster.open-cluster-management.io,resources=managedclusters;managedclustersets,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.open-cluster-management.io,resources=managedclustersetbindings;placementdecisions,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers the reconciler and its watches.
func (r *PropagationReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	upstream, err := newUpstreamWorks(mgr)
	if err != nil {
		return err
	}
	r.upstream = upstream
	b := ctrl.NewControllerManagedBy(mgr)
	for _, s := range upstream.sources() {
		b = b.WatchesRawSource(s)
	}
	return b.
		Named("propagation").
		WithOptions(opts).
		For(argocd.NewApplication(), builder.WithPredicates(beyondStatus(), observeChanges(&r.changed))).
		Watches(&workv1.ManifestWork{}, handler.EnqueueRequestsFromMapFunc(requestForHubApplication), builder.WithPredicates(workChangedForPropagation(r.created.take))).
		Watches(&workv1.ManifestWork{}, handler.EnqueueRequestsFromMapFunc(r.appsWaitingOn), builder.WithPredicates(workCameWentOrApplied())).
		Watches(&clusterv1.ManagedCluster{}, handler.EnqueueRequestsFromMapFunc(r.appsOnCluster), builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool { return !equalLabels(e.ObjectOld, e.ObjectNew) },
		})).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.appsOnCluster), builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(event.UpdateEvent) bool { return false },
		})).
		Watches(&clusterv1beta2.ManagedClusterSetBinding{}, handler.EnqueueRequestsFromMapFunc(r.appsInNamespace)).
		Watches(&clusterv1beta2.ManagedClusterSet{}, handler.EnqueueRequestsFromMapFunc(r.appsOfSet)).
		Watches(argocd.NewAppProject(), handler.EnqueueRequestsFromMapFunc(r.appsOfProject)).
		Watches(argocd.NewApplicationSet(), handler.EnqueueRequestsFromMapFunc(r.appsOfApplicationSet), builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool {
				return e.ObjectOld.GetAnnotations()[api.PausedAnnotation] != e.ObjectNew.GetAnnotations()[api.PausedAnnotation]
			},
			CreateFunc: func(event.CreateEvent) bool { return false },
		})).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.allApps), builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetNamespace() == r.Options.ArgoCDNamespace && o.GetName() == api.PauseConfigMap
		}))).
		Complete(r)
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
		f.Annotations[api.WrittenAtAnnotation] = time.Now().UTC().Format(time.RFC3339)
		ctrl.LoggerFrom(ctx).Info("Freezing ManifestWork", "manifestWork", klog.KObj(w), "reason", refusal.Reason)
		if err := r.Update(ctx, f); err != nil {
			return "", fmt.Errorf("freezing ManifestWork %s/%s: %w", w.Namespace, w.Name, err)
		}
		metrics.WorkWrites.WithLabelValues(metrics.OpUpdate).Inc()
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
	ctrl.LoggerFrom(ctx).Info("Deleting ManifestWork: another Application delivers the same managed-cluster Application", "manifestWork", klog.KObj(w), "other", klog.KObj(rival))
	if err := r.Delete(ctx, w); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting ManifestWork %s/%s: %w", w.Namespace, w.Name, err)
	}
	metrics.WorkWrites.WithLabelValues(metrics.OpDelete).Inc()
	return nil
}

// apply creates or updates the work, writing only when it differs from what the hub wants.
func (r *PropagationReconciler) apply(ctx context.Context, app *unstructured.Unstructured, desired, existing *workv1.ManifestWork) error {
	log := ctrl.LoggerFrom(ctx)
	switch {
	case existing == nil:
		desired.Annotations[api.WrittenAtAnnotation] = time.Now().UTC().Format(time.RFC3339)
		log.Info("Creating ManifestWork", "manifestWork", klog.KObj(desired))
		if err := r.Create(ctx, desired); err != nil {
			return fmt.Errorf("creating ManifestWork %s/%s: %w", desired.Namespace, desired.Name, err)
		}
		r.created.add(desired, time.Now())
		// No event: one per created work was a quarter of the requests of a fleet's rollout. The
		// work itself, the log line and argocd_pull_work_writes_total record it; events are for
		// refusals, moves, freezes and deliveries.
		r.written(app, metrics.OpCreate)
		return nil
	case propagation.UpToDate(existing, desired):
		return nil
	}
	updated := existing.DeepCopy()
	updated.Labels = merged(updated.Labels, desired.Labels)
	updated.Annotations = merged(updated.Annotations, desired.Annotations)
	updated.Annotations[api.WrittenAtAnnotation] = time.Now().UTC().Format(time.RFC3339)
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
	log.Info("Updating ManifestWork", "manifestWork", klog.KObj(updated))
	if err := r.Update(ctx, updated); err != nil {
		return fmt.Errorf("updating ManifestWork %s/%s: %w", desired.Namespace, desired.Name, err)
	}
	r.written(app, metrics.OpUpdate)
	return nil
}

// written counts a work write and how long the Application change behind it waited.
func (r *PropagationReconciler) written(app client.Object, op string) {
	metrics.WorkWrites.WithLabelValues(op).Inc()
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
			updated.Annotations[api.WrittenAtAnnotation] = time.Now().UTC().Format(time.RFC3339)
			ctrl.LoggerFrom(ctx).Info("Updating ManifestWork before deleting it: what its Application's deletion needs reaches the managed cluster first", "manifestWork", klog.KObj(w))
			if err := r.Update(ctx, updated); err != nil {
				return ctrl.Result{}, fmt.Errorf("updating ManifestWork %s/%s: %w", w.Namespace, w.Name, err)
			}
			metrics.WorkWrites.WithLabelValues(metrics.OpUpdate).Inc()
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
		ctrl.LoggerFrom(ctx).Info("Deleting ManifestWork", "manifestWork", klog.KObj(w))
		if err := r.Delete(ctx, w); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting ManifestWork %s/%s: %w", w.Namespace, w.Name, err)
		}
		metrics.WorkWrites.WithLabelValues(metrics.OpDelete).Inc()
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

// pauseOf says whether and why app is paused (see propagation.PauseOf), from the cache: its
// ApplicationSet and the pause ConfigMap.
func (r *PropagationReconciler) pauseOf(ctx context.Context, app *unstructured.Unstructured) (propagation.Pausing, bool, error) {
	var appSet *unstructured.Unstructured
	if name, ok := argocd.OwningApplicationSet(app); ok {
		appSet = argocd.NewApplicationSet()
		switch err := r.Get(ctx, types.NamespacedName{Namespace: app.GetNamespace(), Name: name}, appSet); {
		case apierrors.IsNotFound(err):
			appSet = nil
		case err != nil:
			return propagation.Pausing{}, false, fmt.Errorf("reading ApplicationSet %s/%s: %w", app.GetNamespace(), name, err)
		}
	}
	global, err := globalPause(ctx, r.Cache, r.Options.ArgoCDNamespace)
	if err != nil {
		return propagation.Pausing{}, false, err
	}
	p, paused := propagation.PauseOf(app, appSet, global)
	return p, paused, nil
}

// globalPause is the reason the pause ConfigMap gives, "" when it does not pause or is missing.
func globalPause(ctx context.Context, c client.Reader, namespace string) (string, error) {
	cm := &corev1.ConfigMap{}
	switch err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: api.PauseConfigMap}, cm); {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("reading ConfigMap %s/%s: %w", namespace, api.PauseConfigMap, err)
	}
	return propagation.PauseValue(cm.Data[api.PauseKey]), nil
}

// pause switches the Application's held works to read only, once (propagation.Pause), writes
// nothing else for it, and says so on it.
func (r *PropagationReconciler) pause(ctx context.Context, app *unstructured.Unstructured, p propagation.Pausing, conditions hubAppConditions) error {
	works, err := r.worksOf(ctx, client.ObjectKeyFromObject(app))
	if err != nil {
		return err
	}
	for i := range works {
		w := &works[i]
		if !w.DeletionTimestamp.IsZero() {
			continue
		}
		done, err := r.pauseWork(ctx, w, p.Reason)
		if err != nil {
			return err
		}
		if !done {
			continue
		}
		r.Recorder.Eventf(app, nil, corev1.EventTypeNormal, ReasonPaused, "Pause",
			"Paused ManifestWork %s/%s: the managed cluster keeps what it runs, its work agent only reports (%s)", w.Namespace, w.Name, p)
	}
	return conditions.paused(ctx, app, p.String()+": nothing is delivered to the managed cluster, which keeps what it runs; status keeps flowing; what changes meanwhile is delivered on resume")
}

// pauseWork pauses w for reason (propagation.Pause) and reports whether it wrote it.
func (r *PropagationReconciler) pauseWork(ctx context.Context, w *workv1.ManifestWork, reason string) (bool, error) {
	paused, err := propagation.Pause(w, reason)
	if err != nil || paused == nil {
		return false, err
	}
	paused.Annotations[api.WrittenAtAnnotation] = time.Now().UTC().Format(time.RFC3339)
	ctrl.LoggerFrom(ctx).Info("Pausing ManifestWork", "manifestWork", klog.KObj(w), "reason", reason)
	if err := r.Update(ctx, paused); err != nil {
		return false, fmt.Errorf("pausing ManifestWork %s/%s: %w", w.Namespace, w.Name, err)
	}
	metrics.WorkWrites.WithLabelValues(metrics.OpUpdate).Inc()
	return true, nil
}

// release turns a paused work into its released form (propagation.Release) before it is deleted,
// so that the managed cluster keeps its Application; a released work waits for the agent.
func (r *PropagationReconciler) release(ctx context.Context, w *workv1.ManifestWork) error {
	if propagation.Released(w) {
		return nil // its next status requeues the Application (workChangedForPropagation)
	}
	released, err := propagation.Release(w)
	if err != nil || released == nil {
		return err
	}
	released.Annotations[api.WrittenAtAnnotation] = time.Now().UTC().Format(time.RFC3339)
	ctrl.LoggerFrom(ctx).Info("Releasing paused ManifestWork before deleting it: the managed cluster keeps its Application", "manifestWork", klog.KObj(w))
	if err := r.Update(ctx, released); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("releasing ManifestWork %s/%s: %w", w.Namespace, w.Name, err))
	}
	metrics.WorkWrites.WithLabelValues(metrics.OpUpdate).Inc()
	return nil
}

func (r *PropagationReconciler) appsOfApplicationSet(ctx context.Context, o client.Object) []reconcile.Request {
	return applicationRequests(ctx, r.Client, client.MatchingFields{appOwnerIndex: o.GetNamespace() + "/" + o.GetName()})
}

func (r *PropagationReconciler) allApps(ctx context.Context, _ client.Object) []reconcile.Request {
	return applicationRequests(ctx, r.Client)
}

func (r *PropagationReconciler) worksOf(ctx context.Context, key types.NamespacedName) ([]workv1.ManifestWork, error) {
	works := &workv1.ManifestWorkList{}
	if err := r.List(ctx, works, client.MatchingFields{workHubAppIndex: key.String()}); err != nil {
		return nil, fmt.Errorf("listing ManifestWorks of Application %s: %w", key, err)
	}
	return works.Items, nil
}

// appsWaitingOn requeues the Applications a work's creation, deletion or application may concern:
// those refused because of a work on the same cluster (ManagedApplicationTaken,
// ManifestWorkNameTaken), which may now be delivered or act (a refused Application's own work
// yields once the other is applied), and, when other works carry the same managed-cluster
// Application, the owners of all of them, this work's included (two created at once: the one that
// is not the oldest must learn of the other, whichever event comes first). Called for every work
// created: what it reads comes from the cache without copies.
func (r *PropagationReconciler) appsWaitingOn(ctx context.Context, o client.Object) []reconcile.Request {
	reqs := r.appsRefusedFor(ctx, o)
	others := r.worksCarryingTheSame(ctx, o)
	if len(others) == 0 {
		return reqs
	}
	reqs = append(reqs, requestForHubApplication(ctx, o)...)
	for _, w := range others {
		if key, ok := hubApplicationOf(&w); ok {
			reqs = append(reqs, reconcile.Request{NamespacedName: key})
		}
	}
	return reqs
}

// worksCarryingTheSame lists, from the cache, the other works that carry the managed-cluster
// Application o carries.
func (r *PropagationReconciler) worksCarryingTheSame(ctx context.Context, o client.Object) []workv1.ManifestWork {
	work, ok := o.(*workv1.ManifestWork)
	if !ok {
		return nil
	}
	managed, ok := propagation.ManagedApplication(work)
	if !ok {
		return nil
	}
	works := &workv1.ManifestWorkList{}
	if err := r.List(ctx, works, client.InNamespace(work.Namespace), client.MatchingFields{workPayloadIndex: managed}, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing ManifestWorks carrying the same Application", "managedApplication", managed)
		return nil
	}
	others := works.Items[:0]
	for _, w := range works.Items {
		if w.UID != work.UID {
			others = append(others, w)
		}
	}
	return others
}

// appsRefusedFor lists the Applications refused because of a work on o's cluster.
func (r *PropagationReconciler) appsRefusedFor(ctx context.Context, o client.Object) []reconcile.Request {
	apps := argocd.NewApplicationList()
	if err := r.List(ctx, apps, client.MatchingFields{appClusterIndex: o.GetNamespace()}, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing Applications to requeue")
		return nil
	}
	var reqs []reconcile.Request
	for i := range apps.Items {
		msg := propagationError(&apps.Items[i])
		if strings.HasPrefix(msg, propagation.ReasonAlreadyDelivered+":") || strings.HasPrefix(msg, propagation.ReasonWorkNameTaken+":") {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&apps.Items[i])})
		}
	}
	return reqs
}

func (r *PropagationReconciler) appsOnCluster(ctx context.Context, o client.Object) []reconcile.Request {
	return applicationRequests(ctx, r.Client, client.MatchingFields{appClusterIndex: o.GetName()})
}

func (r *PropagationReconciler) appsInNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	return applicationRequests(ctx, r.Client, client.InNamespace(o.GetNamespace()))
}

func (r *PropagationReconciler) appsOfProject(ctx context.Context, o client.Object) []reconcile.Request {
	return applicationRequests(ctx, r.Client, client.MatchingFields{appProjectIndex: o.GetName()})
}

// appsOfSet requeues the Applications of the namespaces bound to a ManagedClusterSet.
func (r *PropagationReconciler) appsOfSet(ctx context.Context, o client.Object) []reconcile.Request {
	bindings := &clusterv1beta2.ManagedClusterSetBindingList{}
	if err := r.List(ctx, bindings); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing ManagedClusterSetBindings to requeue")
		return nil
	}
	var reqs []reconcile.Request
	for _, b := range bindings.Items {
		if b.Spec.ClusterSet == o.GetName() {
			reqs = append(reqs, applicationRequests(ctx, r.Client, client.InNamespace(b.Namespace))...)
		}
	}
	return reqs
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
