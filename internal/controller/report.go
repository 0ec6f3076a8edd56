package controller

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/metrics"
	"github.com/argocd-pull/argocd-pull/internal/report"
)

// ReportReconciler keeps one MulticlusterApplicationSetReport per ApplicationSet that has
// pull-model Applications, from the hub's cache: when one of its Applications, their ManifestWorks
// or their clusters' availability changes, that member's entry is recomputed (report_tracking.go)
// and the report written at its pace.
type ReportReconciler struct {
	client.Client
	Options Options
	// Search is the optional OCM Search source, nil when not configured.
	Search *reportSearch

	pacing *reportPacer
	// sets keeps each ApplicationSet's report a member at a time.
	sets *reportSets

	// changed holds, per ApplicationSet, when a change not yet in its report was first seen.
	changed metrics.Since[types.NamespacedName]
}

// wrote records a write of the report key (op metrics.OpDelete forgets it): for pacing, and in
// the metrics with how long the oldest change it carries waited.
func (r *ReportReconciler) wrote(key types.NamespacedName, at time.Time, op string) {
	metrics.ReportWrites.WithLabelValues(op).Inc()
	if waited, ok := r.changed.Done(key, time.Now()); ok && op != metrics.OpDelete {
		metrics.ReportLatency.Observe(waited.Seconds())
	}
	if op == metrics.OpDelete {
		r.pacing.forget(key)
		return
	}
	r.pacing.wrote(key, at)
}

// +kubebuilder:rbac:groups=argoproj.io,resources=applicationsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps.open-cluster-management.io,resources=multiclusterapplicationsetreports,verbs=get;list;watch;create;update;delete

// SetupWithManager registers the reconciler and its watches. Events are coalesced per
// ApplicationSet for Options.ReportCoalesce: a burst of feedback from many clusters is one write.
func (r *ReportReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	appSet := argocd.NewApplicationSet()
	delay := r.Options.ReportCoalesce
	r.pacing = newReportPacer(r.Options.ReportEntriesPerSecond)
	r.sets = newReportSets()
	b := ctrl.NewControllerManagedBy(mgr)
	if r.Search != nil {
		b = b.WatchesRawSource(source.Channel(r.Search.events, r.searchAnswered()))
	}
	return b.
		Named("report").
		WithOptions(opts).
		For(appSet).
		Watches(argocd.NewApplication(), r.enqueueMembers(delay, membersOfApplication)).
		Watches(&workv1.ManifestWork{}, r.enqueueMembers(delay, membersOfWork)).
		Watches(&clusterv1.ManagedCluster{}, r.enqueueMembers(delay, r.membersOnCluster), builder.WithPredicates(availabilityChanged())).
		Watches(&v1alpha1.MulticlusterApplicationSetReport{}, &handler.EnqueueRequestForObject{}).
		Complete(r)
}

// Reconcile rebuilds the report of one ApplicationSet and writes it when it changed.
func (r *ReportReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// The cache's own object, not a copy: only its name, UID and deletion are read (its status lists
	// every Application of a RollingSync rollout).
	appSet := argocd.NewApplicationSet()
	if err := r.Get(ctx, req.NamespacedName, appSet, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			// Garbage collection removes it through its owner reference; this covers hubs without.
			r.sets.forget(req.NamespacedName)
			return ctrl.Result{}, r.deleteReport(ctx, req.NamespacedName)
		}
		return ctrl.Result{}, fmt.Errorf("reading ApplicationSet %s: %w", req, err)
	}
	if !appSet.GetDeletionTimestamp().IsZero() {
		return ctrl.Result{}, nil
	}

	// Read without a copy (a report of 1,000 clusters is 260 KB): only compared, never written.
	existing := &v1alpha1.MulticlusterApplicationSetReport{}
	err := r.Get(ctx, req.NamespacedName, existing, client.UnsafeDisableDeepCopy)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("reading report %s: %w", req, err)
	}
	found := err == nil
	now := time.Now()
	if found {
		// Large reports are written at a bounded rate; what changes meanwhile waits for the next.
		// Checked before the members are read: those are the cost of a rebuild.
		interval := report.WriteInterval(len(existing.Statuses.ClusterConditions), r.Options.ReportCoalesce, r.Options.ReportIntervalPerCluster)
		if wait := r.pacing.due(req.NamespacedName, interval, now); wait > 0 {
			return ctrl.Result{RequeueAfter: wait}, nil
		}
	}
	ts, err := r.track(ctx, req.NamespacedName, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !found && ts.tracker.Len() == 0 {
		r.sets.forget(req.NamespacedName)
		return ctrl.Result{}, nil // not a pull-model ApplicationSet
	}
	result := ctrl.Result{}
	if recheck := ts.tracker.NextRecheck(); !recheck.IsZero() {
		result.RequeueAfter = max(recheck.Sub(now), 0) + time.Second
	}
	generation := ts.tracker.Generation()
	if found && ts.current(generation, existing.ResourceVersion, appSet.GetUID()) {
		// Nothing changed since this controller wrote or checked the report, and nobody else wrote it.
		r.changed.Done(req.NamespacedName, now)
		return result, nil
	}
	statuses, _ := ts.tracker.Report()
	desired := &v1alpha1.MulticlusterApplicationSetReport{ObjectMeta: *existing.ObjectMeta.DeepCopy()}
	desired.Name, desired.Namespace = req.Name, req.Namespace
	if desired.Labels == nil {
		desired.Labels = map[string]string{}
	}
	desired.Labels[api.HostingApplicationSetLabel] = report.HostingLabelValue(req.Namespace, req.Name)
	desired.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: argocd.ApplicationSetGVK.GroupVersion().String(), Kind: argocd.ApplicationSetGVK.Kind,
		Name: appSet.GetName(), UID: appSet.GetUID(),
	}}
	desired.Statuses = statuses
	log := ctrl.LoggerFrom(ctx)
	if !found {
		log.Info("Creating MulticlusterApplicationSetReport", "report", klog.KObj(desired), "clusters", statuses.Summary.Clusters)
		if err := r.Create(ctx, desired); err != nil {
			metrics.ReportWriteErrors.Inc()
			return ctrl.Result{}, fmt.Errorf("creating report %s: %w", req, err)
		}
		r.wrote(req.NamespacedName, now, metrics.OpCreate)
		ts.wrote(generation, desired.ResourceVersion, appSet.GetUID())
		return result, nil
	}
	if equality.Semantic.DeepEqual(existing.Statuses, desired.Statuses) &&
		equality.Semantic.DeepEqual(existing.Labels, desired.Labels) &&
		equality.Semantic.DeepEqual(existing.OwnerReferences, desired.OwnerReferences) {
		r.changed.Done(req.NamespacedName, now) // the changes seen are already in the report
		ts.wrote(generation, existing.ResourceVersion, appSet.GetUID())
		return result, nil
	}
	// Only a write that changes the report takes its share of the apiserver budget.
	if wait := r.pacing.take(req.NamespacedName, len(desired.Statuses.ClusterConditions), now); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	if err := r.Update(ctx, desired); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: r.Options.ReportCoalesce}, nil
		}
		metrics.ReportWriteErrors.Inc()
		return ctrl.Result{}, fmt.Errorf("updating report %s: %w", req, err)
	}
	r.wrote(req.NamespacedName, now, metrics.OpUpdate)
	ts.wrote(generation, desired.ResourceVersion, appSet.GetUID())
	return result, nil
}

// members collects, for each pull-model Application of the ApplicationSet, what the hub holds:
// a set's first rebuild reads N Applications, N ManifestWorks and N ManagedClusters from the
// cache, without copies (client.UnsafeDisableDeepCopy) because the report is only built from
// them, never written to them. Later rebuilds read the changed members alone (track).
func (r *ReportReconciler) members(ctx context.Context, appSet types.NamespacedName) ([]report.Member, error) {
	apps := argocd.NewApplicationList()
	if err := r.List(ctx, apps, client.InNamespace(appSet.Namespace), client.MatchingFields{appOwnerIndex: appSet.String()}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing Applications of ApplicationSet %s: %w", appSet, err)
	}
	members := make([]report.Member, 0, len(apps.Items))
	for i := range apps.Items {
		m, pull, err := r.memberOf(ctx, &apps.Items[i])
		if err != nil {
			return nil, err
		}
		if pull {
			members = append(members, m)
		}
	}
	return members, nil
}

// memberOf is what the hub holds about one Application as a report member: its work, its
// cluster and what Search answered; pull is false for an Application that is not pull-model.
func (r *ReportReconciler) memberOf(ctx context.Context, app *unstructured.Unstructured) (m report.Member, pull bool, err error) {
	m, pull, markerErr := report.NewMember(app)
	if !pull || markerErr != nil {
		return m, pull, nil // an entry that carries the markers' error, without a work
	}
	if err := r.fill(ctx, &m); err != nil {
		return m, true, err
	}
	if r.Search != nil && m.Work != nil {
		// Only about what this Application's own work delivers (see reportSearch.tracked).
		if key, ok := searchKeyOf(m.Work); ok {
			if res, ok := r.Search.poller.Get(key); ok {
				m.Searched, m.SearchResources, m.SearchConditions = true, res.Resources, res.Conditions
			}
		}
	}
	return m, true, nil
}

// fill reads the member's ManifestWork and ManagedCluster from the cache.
func (r *ReportReconciler) fill(ctx context.Context, m *report.Member) error {
	work, err := workOn(ctx, r.Client, m.Cluster, types.NamespacedName{Namespace: m.AppNamespace, Name: m.AppName}, client.UnsafeDisableDeepCopy)
	if err != nil {
		return err
	}
	cluster := &clusterv1.ManagedCluster{}
	switch err := r.Get(ctx, types.NamespacedName{Name: m.Cluster}, cluster, client.UnsafeDisableDeepCopy); {
	case err == nil:
	case apierrors.IsNotFound(err):
		cluster = nil
	default:
		return fmt.Errorf("reading ManagedCluster %s: %w", m.Cluster, err)
	}
	m.Attach(work, cluster)
	return nil
}

func (r *ReportReconciler) deleteReport(ctx context.Context, key types.NamespacedName) error {
	existing := &v1alpha1.MulticlusterApplicationSetReport{}
	if err := r.Get(ctx, key, existing); err != nil {
		return client.IgnoreNotFound(err)
	}
	if _, ours := existing.Labels[api.HostingApplicationSetLabel]; !ours {
		return nil
	}
	ctrl.LoggerFrom(ctx).Info("Deleting the report of a deleted ApplicationSet", "report", klog.KObj(existing))
	if err := r.Delete(ctx, existing); err != nil {
		return client.IgnoreNotFound(err)
	}
	r.wrote(key, time.Now(), metrics.OpDelete)
	return nil
}

// availabilityChanged passes a ManagedCluster's creation, deletion, and the updates that change
// its availability: what makes what its clusters reported stale, or current again.
func availabilityChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool { return availability(e.ObjectOld) != availability(e.ObjectNew) },
	}
}

// availability is the status of a ManagedCluster's Available condition.
func availability(o client.Object) metav1.ConditionStatus {
	mc, ok := o.(*clusterv1.ManagedCluster)
	if !ok {
		return ""
	}
	if c := meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable); c != nil {
		return c.Status
	}
	return ""
}
