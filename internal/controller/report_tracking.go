package controller

import (
	"context"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/metrics"
	"github.com/argocd-pull/argocd-pull/internal/report"
)

// reportSets holds, per ApplicationSet, the report.Tracker its report is written from and the
// members changed since its last rebuild. The watches mark a member when its Application, its
// work or its cluster's availability changes; a rebuild recomputes those members alone. A set's
// Tracker is built once from the cache, at its first rebuild (after a restart too).
type reportSets struct {
	mu   sync.Mutex
	sets map[types.NamespacedName]*trackedSet
}

// trackedSet is one ApplicationSet's tracking. Its Tracker is only touched by the set's
// reconcile (never two at once for one key); the marks are guarded by reportSets.mu.
type trackedSet struct {
	tracker *report.Tracker // nil until built from the cache
	dirty   map[types.NamespacedName]struct{}
	all     bool // every member is recomputed at the next rebuild (Search answers changed)
	// written is the Tracker's generation in the report written (or found current) last,
	// writtenVersion that report's resourceVersion and writtenFor its ApplicationSet's UID: while
	// all three hold, the report is current without being rebuilt.
	written        uint64
	writtenVersion string
	writtenFor     types.UID
}

// wrote records the report written, or found current, at the Tracker's generation.
func (ts *trackedSet) wrote(generation uint64, resourceVersion string, appSet types.UID) {
	ts.written, ts.writtenVersion, ts.writtenFor = generation, resourceVersion, appSet
}

// current says whether the report, at resourceVersion, is the one written at the Tracker's
// generation for this ApplicationSet.
func (ts *trackedSet) current(generation uint64, resourceVersion string, appSet types.UID) bool {
	return ts.writtenVersion != "" && ts.written == generation && ts.writtenVersion == resourceVersion && ts.writtenFor == appSet
}

func newReportSets() *reportSets {
	return &reportSets{sets: map[types.NamespacedName]*trackedSet{}}
}

// mark records that a member of set changed. Sets not tracked yet are left alone: their first
// rebuild reads every member from the cache.
func (s *reportSets) mark(set, app types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ts, ok := s.sets[set]; ok {
		ts.dirty[app] = struct{}{}
	}
}

// markAll records that every member of set must be recomputed.
func (s *reportSets) markAll(set types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ts, ok := s.sets[set]; ok {
		ts.all = true
	}
}

// take returns the set's tracking, created when missing (so that changes from now on are
// marked), with the members marked since the last take.
func (s *reportSets) take(set types.NamespacedName) (ts *trackedSet, dirty []types.NamespacedName, all bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts, ok := s.sets[set]
	if !ok {
		ts = &trackedSet{dirty: map[types.NamespacedName]struct{}{}}
		s.sets[set] = ts
	}
	for app := range ts.dirty {
		dirty = append(dirty, app)
	}
	clear(ts.dirty)
	all, ts.all = ts.all, false
	return ts, dirty, all
}

// giveBack marks again members a failed rebuild did not recompute.
func (s *reportSets) giveBack(set types.NamespacedName, apps []types.NamespacedName) {
	for _, app := range apps {
		s.mark(set, app)
	}
}

// forget drops the tracking of a set that has no report any more.
func (s *reportSets) forget(set types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sets, set)
}

// track brings the set's Tracker up to date at now: built from every member in the cache the
// first time (or when every member is marked), else the marked members and those turning stale
// recomputed.
func (r *ReportReconciler) track(ctx context.Context, set types.NamespacedName, now time.Time) (*trackedSet, error) {
	ts, dirty, all := r.sets.take(set)
	if ts.tracker == nil || all {
		members, err := r.members(ctx, set)
		if err != nil {
			ts.all = ts.all || all
			return nil, err
		}
		t := report.NewTracker(report.Options{StaleAfter: r.Options.StaleAfter})
		for _, m := range members {
			t.Put(m, now)
		}
		metrics.ReportEntriesComputed.WithLabelValues(metrics.RebuildFull).Add(float64(len(members)))
		ts.tracker, ts.writtenVersion = t, ""
		return ts, nil
	}
	for _, key := range ts.tracker.Due(now) {
		ns, name, _ := strings.Cut(key, "/")
		dirty = append(dirty, types.NamespacedName{Namespace: ns, Name: name})
	}
	for i, app := range dirty {
		m, ok, err := r.member(ctx, set, app)
		if err != nil {
			r.sets.giveBack(set, dirty[i:])
			return nil, err
		}
		if ok {
			ts.tracker.Put(m, now)
			metrics.ReportEntriesComputed.WithLabelValues(metrics.RebuildMember).Inc()
		} else {
			ts.tracker.Delete(app.String())
		}
	}
	return ts, nil
}

// member reads one Application of the set from the cache as a report member; ok is false when
// it is not one (gone, not pull-model, another set's).
func (r *ReportReconciler) member(ctx context.Context, set, key types.NamespacedName) (m report.Member, ok bool, err error) {
	app := argocd.NewApplication()
	if err := r.Get(ctx, key, app, client.UnsafeDisableDeepCopy); err != nil {
		return report.Member{}, false, client.IgnoreNotFound(err)
	}
	if owner, owned := argocd.OwningApplicationSet(app); !owned || owner != set.Name || app.GetNamespace() != set.Namespace {
		return report.Member{}, false, nil
	}
	return r.memberOf(ctx, app)
}

// memberRef names a member that changed: an Application of an ApplicationSet.
type memberRef struct{ set, app types.NamespacedName }

// membersOfApplication: the Application, in its ApplicationSet.
func membersOfApplication(_ context.Context, o client.Object) []memberRef {
	if name, ok := argocd.OwningApplicationSet(o); ok {
		return []memberRef{{set: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}, app: client.ObjectKeyFromObject(o)}}
	}
	return nil
}

// membersOfWork: the work's hub Application, in the ApplicationSet the work names (propagation
// writes the Application's owner there; an Application moving to another set marks both through
// its own update).
func membersOfWork(_ context.Context, o client.Object) []memberRef {
	app, ok := manifestwork.HubApplicationOf(o)
	if !ok {
		return nil
	}
	if ns, name, ok := strings.Cut(o.GetAnnotations()[api.HostingApplicationSetAnnotation], "/"); ok && ns != "" && name != "" {
		return []memberRef{{set: types.NamespacedName{Namespace: ns, Name: name}, app: app}}
	}
	return nil
}

// membersOnCluster: the Applications on the ManagedCluster, in their ApplicationSets.
func (r *ReportReconciler) membersOnCluster(ctx context.Context, o client.Object) []memberRef {
	apps := argocd.NewApplicationList()
	if err := r.List(ctx, apps, client.MatchingFields{appClusterIndex: o.GetName()}, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing Applications to requeue their reports")
		return nil
	}
	var out []memberRef
	for i := range apps.Items {
		out = append(out, membersOfApplication(ctx, &apps.Items[i])...)
	}
	return out
}

// enqueueMembers marks the members an event changes in their sets' tracking, and requeues the
// sets after delay, so that the queue merges a burst of events for one set into one rebuild.
func (r *ReportReconciler) enqueueMembers(delay time.Duration, members func(context.Context, client.Object) []memberRef) handler.EventHandler {
	add := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], objs ...client.Object) {
		now := time.Now()
		for _, o := range objs {
			if o == nil {
				continue
			}
			for _, ref := range members(ctx, o) {
				r.sets.mark(ref.set, ref.app)
				r.changed.Observe(ref.set, now)
				q.AddAfter(reconcile.Request{NamespacedName: ref.set}, delay)
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, q, e.Object)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, q, e.ObjectOld, e.ObjectNew)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, q, e.Object)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, q, e.Object)
		},
	}
}

// searchAnswered marks every member of a set whose Search answers changed.
func (r *ReportReconciler) searchAnswered() handler.EventHandler {
	return handler.Funcs{
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			set := client.ObjectKeyFromObject(e.Object)
			r.sets.markAll(set)
			q.Add(reconcile.Request{NamespacedName: set})
		},
	}
}
