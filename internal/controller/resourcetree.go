package controller

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/metrics"
	"github.com/argocd-pull/argocd-pull/internal/resourcetree"
	"github.com/argocd-pull/argocd-pull/internal/viewholders"
)

// Event reasons of the resource tree controller.
const (
	ReasonTreeNotWritten = "ResourceTreeNotWritten"
	ReasonTreeWritten    = "ResourceTreeWritten"
)

// TreeCache is where the resource trees go: the hub Argo CD's redis (resourcetree.Cache).
type TreeCache interface {
	Put(ctx context.Context, instance string, t resourcetree.Tree) error
	Delete(ctx context.Context, instance string) error
	PutManaged(ctx context.Context, instance string, items any) error
	DeleteManaged(ctx context.Context, instance string) error
	TreeKeys(ctx context.Context, limit int) ([]string, error)
}

// versionRecheck is how often the cache version the hub's Argo CD writes is read again.
const versionRecheck = 10 * time.Minute

// ResourceTreeReconciler keeps a display-only resource tree of each pull-model hub Application in
// the hub Argo CD's cache (see internal/resourcetree), built from the Application's
// status.resources, which the status controller writes from what the cluster reports. A tree is
// written when it changes (and after a restart), renewed before its TTL ends, and removed with the
// Application. When the redis cannot be written, delivery and status go on; one reconcile probes
// it per backoff window, and each Application says why in an event, once.
type ResourceTreeReconciler struct {
	client.Client
	Recorder        events.EventRecorder
	Cache           TreeCache
	Encoding        resourcetree.Encoding
	ArgoCDNamespace string
	// TTL is the written trees' lifetime; each is renewed after half of it.
	TTL time.Duration
	// ClusterTrees gives an Application whose destination is its cluster's channel secret the
	// cluster's own tree (resourceviews.go); nil: the display tree for all.
	ClusterTrees *ClusterTrees
	// Warnings take what a cluster's own tree left out, for the status controller (nil: logged only).
	Warnings *TreeWarnings
	// Holders records each name that holds a tree of its cluster's uids, and the destination, for
	// the hub's admission policy; no name holds one without it (nil: the display tree for all).
	Holders *viewholders.Registry

	written sync.Map // types.NamespacedName → treeRecord
	outage  outage
	version hubVersion
}

// hubVersion is the cache version the hub's Argo CD writes when it is not argocd-pull's (see
// resourcetree.OtherVersion), as last read.
type hubVersion struct {
	mu    sync.Mutex
	at    time.Time
	other string
}

// treeRecord is what was last written of one Application's tree, or that it could not be.
type treeRecord struct {
	sum     [32]byte
	at      time.Time
	failing bool
	// unread: the cluster's own tree was asked for and not read (said once, in an event).
	unread bool
	// managed: managed resources were written with the tree (removed when it goes).
	managed bool
	// forbidden: the cluster refused some of the tree's reads (builtTree.forbidden).
	forbidden bool
}

// SetupWithManager registers the reconciler: every pull-labelled Application (the cache holds
// those only), on creation, deletion, and a change of its status.resources or pull markers; on
// the creation and deletion of its ManifestWork (only a delivered Application has a tree); and,
// with OCM's channel, on a change of its cluster's secret, and each probe period, on a cluster that
// stopped answering (probeClusters).
func (r *ResourceTreeReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	channel := r.ClusterTrees != nil && r.ClusterTrees.Channel.Configured()
	b := ctrl.NewControllerManagedBy(mgr).
		Named("resourcetree").
		WithOptions(opts).
		For(argocd.NewApplication(), builder.WithPredicates(treeSourceChanged(channel))).
		Watches(&workv1.ManifestWork{}, handler.EnqueueRequestsFromMapFunc(requestForHubApplication), builder.WithPredicates(predicate.Funcs{
			// Not its status feedback (the Application's status carries it): only its freezing
			// and thawing, which end and restore the views.
			UpdateFunc: func(e event.UpdateEvent) bool {
				return e.ObjectOld.GetAnnotations()[api.FrozenAnnotation] != e.ObjectNew.GetAnnotations()[api.FrozenAnnotation]
			},
		}))
	if channel {
		// A cluster secret that gains, changes or loses the channel changes where its
		// Applications' trees come from (resourceviews.Route).
		b = b.Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.applicationsOfSecret), builder.WithPredicates(channelChanged()))
		// A cluster whose read failed: its other Applications take the display tree too.
		r.ClusterTrees.wentDown = make(chan event.GenericEvent, 1024)
		b = b.WatchesRawSource(source.Channel(r.ClusterTrees.wentDown, handler.EnqueueRequestsFromMapFunc(r.applicationsOfCluster)))
		// An AppProject's destinations decide whether its Applications' trees may be read from
		// their clusters (tenancy.DestinationPermitted).
		b = b.Watches(argocd.NewAppProject(), handler.EnqueueRequestsFromMapFunc(r.applicationsOfProject), builder.WithPredicates(predicate.Funcs{
			CreateFunc: func(event.CreateEvent) bool { return false }, // the Applications' own first reads find it
			UpdateFunc: func(e event.UpdateEvent) bool { return destinationsChanged(e.ObjectOld, e.ObjectNew) },
		}))
		// A cluster that stops answering while nothing changes on the hub (a token revoked
		// while no new one can come): its trees turn to the display tree within a probe period.
		if r.ClusterTrees.ProbeEvery > 0 {
			if err := mgr.Add(manager.RunnableFunc(r.probeClusters)); err != nil {
				return err
			}
		}
		if r.Holders != nil {
			// The names recorded before a restart are looked at again: one whose Application went
			// meanwhile has its tree removed and its record released.
			recorded := make(chan event.GenericEvent)
			r.Holders.Loaded = func(ctx context.Context, names []types.NamespacedName) {
				for _, n := range names {
					app := argocd.NewApplication()
					app.SetNamespace(n.Namespace)
					app.SetName(n.Name)
					select {
					case recorded <- event.GenericEvent{Object: app}:
					case <-ctx.Done():
						return
					}
				}
			}
			b = b.WatchesRawSource(source.Channel(recorded, &handler.EnqueueRequestForObject{}))
			if err := mgr.Add(r.Holders); err != nil {
				return err
			}
		}
	}
	return b.Complete(r)
}

// treeSourceChanged passes what may change an Application's tree: its status.resources, its
// deletion, and whether it is a pull-model Application; with OCM's channel (managed resources,
// whose Git side is rendered at the revisions the cluster compared), its status.sync too, and
// what decides whether the tree may carry the cluster's uids (resourceviews.Route): its
// destination, project and cluster. Argo CD's API server sends each view of a uid to the
// destination it reads at that request, so a tree must not keep uids a moment longer than its
// route holds (the ValidatingAdmissionPolicy of config/admission refuses the move itself). Not
// the requests and deliveries its annotations carry, the bulk of its updates.
func treeSourceChanged(channel bool) predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld.(*unstructured.Unstructured), e.ObjectNew.(*unstructured.Unstructured)
			oldTarget, oldPull, _ := manifestwork.ReadMarkers(o)
			newTarget, newPull, _ := manifestwork.ReadMarkers(n)
			return fieldChanged(o, n, "status", "resources") || !n.GetDeletionTimestamp().IsZero() || oldPull != newPull ||
				(channel && (fieldChanged(o, n, "status", "sync", "revision") || fieldChanged(o, n, "status", "sync", "revisions") ||
					routeChanged(o, n, oldTarget.Cluster != newTarget.Cluster)))
		},
	}
}

// routeChanged says whether what resourceviews.Route decides from changed between o and n: the
// destination, the project, or the cluster (clusterChanged).
func routeChanged(o, n *unstructured.Unstructured, clusterChanged bool) bool {
	return clusterChanged || fieldChanged(o, n, "spec", "destination") || fieldChanged(o, n, "spec", "project")
}

// fieldChanged says whether the field at path differs between o and n (read in place).
func fieldChanged(o, n *unstructured.Unstructured, path ...string) bool {
	before, _, _ := unstructured.NestedFieldNoCopy(o.Object, path...)
	after, _, _ := unstructured.NestedFieldNoCopy(n.Object, path...)
	return !equality.Semantic.DeepEqual(before, after)
}

// Reconcile writes, renews or removes one Application's tree.
func (r *ResourceTreeReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	key := req.NamespacedName
	instance := resourcetree.Instance(key.Namespace, key.Name, r.ArgoCDNamespace)
	app := argocd.NewApplication()
	err := r.Get(ctx, key, app, client.UnsafeDisableDeepCopy)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	now := time.Now()
	if until, down := r.outage.down(now); down {
		r.notWritten(ctx, app, err == nil, key, r.outage.reason())
		return ctrl.Result{RequeueAfter: until.Sub(now) + jitter()}, nil
	}
	target, pull, _ := manifestwork.ReadMarkers(app)
	delivered, frozen, current := false, false, err == nil && pull && app.GetDeletionTimestamp().IsZero()
	if current {
		// Only an Application argocd-pull delivers: its status.resources are then what its
		// cluster reported. Applications have no status subresource, so whoever may update one
		// writes them, and one that argocd-pull does not take or refuses has no work.
		work, werr := workOn(ctx, r.Client, target.Cluster, key, client.UnsafeDisableDeepCopy)
		if werr != nil {
			return ctrl.Result{}, werr
		}
		delivered = work != nil
		// A frozen work is a right revoked (a binding, an allowed namespace, the project): the
		// cluster keeps what runs, the hub shows the display tree, and its views stop at once.
		frozen = delivered && work.Annotations[api.FrozenAnnotation] != ""
	}
	if !delivered {
		if _, wrote := r.record(key); current && !wrote {
			// Not delivered yet (its work's creation requeues it), and no tree of it written:
			// nothing to remove (one written before a restart lives out its TTL). A new fleet's
			// Applications cost the redis nothing before delivery.
			return ctrl.Result{}, nil
		}
		// Gone, no longer pull-model, going, or not delivered: no tree (deleting a missing key is fine).
		if err := r.Cache.Delete(ctx, instance); err != nil {
			metrics.TreeWrites.WithLabelValues("delete", "error", "").Inc()
			until := r.outage.failed(ctx, err, now)
			return ctrl.Result{RequeueAfter: until.Sub(now) + jitter()}, nil
		}
		metrics.TreeWrites.WithLabelValues("delete", "ok", "").Inc()
		if r.Holders != nil {
			// The tree is gone: the name may be created again with any destination.
			r.Holders.Release(viewholders.Key(key.Namespace, key.Name))
		}
		r.Warnings.set(ctx, key, "")
		if last, _ := r.record(key); last.managed {
			if err := r.deleteManaged(ctx, instance); err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "The managed resources stay in the hub Argo CD's cache until their TTL ends")
			}
		}
		r.written.Delete(key)
		return ctrl.Result{}, nil
	}

	if other := r.otherVersion(ctx, now); other != "" {
		r.notWritten(ctx, app, true, key, fmt.Sprintf("the hub's Argo CD writes its cache at version %s, and argocd-pull writes %s, which it does not read", other, resourcetree.CacheVersion))
		return ctrl.Result{RequeueAfter: versionRecheck + jitter()}, nil
	}
	resources, _, _ := unstructured.NestedSlice(app.Object, "status", "resources")
	built := r.build(ctx, app, target.Cluster, resources, frozen)
	if built.busy {
		return ctrl.Result{RequeueAfter: time.Second + jitter()}, nil
	}
	r.Warnings.set(ctx, key, built.warning)
	sum := built.sum()
	op := "put"
	last, ok := r.record(key)
	if built.unread != "" && !last.unread {
		r.Recorder.Eventf(app, nil, corev1.EventTypeWarning, ReasonClusterTreeNotRead, "ResourceTree",
			"The cluster's own tree could not be read through OCM's channel, so the tree shows only what the cluster reports, without live manifests, events or logs: %s", built.unread)
	}
	if ok && !last.failing && last.sum == sum {
		if renew := last.at.Add(r.TTL / 2); now.Before(renew) {
			next := built.next(renew.Sub(now), last)
			last.unread, last.forbidden = built.unread != "", built.forbidden
			r.written.Store(key, last)
			return ctrl.Result{RequeueAfter: next}, nil
		}
		op = "renew"
	}
	managedErr, err := r.put(ctx, instance, built, op, ok && last.managed)
	if err != nil {
		until := r.outage.failed(ctx, err, now)
		r.notWritten(ctx, app, true, key, r.outage.reason())
		return ctrl.Result{RequeueAfter: until.Sub(now) + jitter()}, nil
	}
	r.outage.ok()
	if last, ok := r.record(key); ok && last.failing {
		r.Recorder.Eventf(app, nil, corev1.EventTypeNormal, ReasonTreeWritten, "ResourceTree",
			"The resource tree is in the hub Argo CD's cache again")
	}
	if msg := built.message; msg != "" && op == "put" {
		ctrl.LoggerFrom(ctx).Info("Cutting the resource tree", "reason", msg)
	}
	if managedErr != nil {
		// The tree stands; the managed resources are written again at the next reconcile (no
		// sum is kept), at the latest after clusterTreeBackoff.
		ctrl.LoggerFrom(ctx).Error(managedErr, "The managed resources are not in the hub Argo CD's cache: the resource panel, DIFF and argocd app diff fail for this Application")
		r.written.Store(key, treeRecord{at: now, unread: built.unread != "", managed: true})
		return ctrl.Result{RequeueAfter: clusterTreeBackoff + jitter()}, nil
	}
	next := built.next(r.TTL/2, last)
	r.written.Store(key, treeRecord{sum: sum, at: now, unread: built.unread != "", managed: built.managed != nil, forbidden: built.forbidden})
	return ctrl.Result{RequeueAfter: next}, nil
}

// put writes built: its managed resources first, then the tree, whose write tells the API
// server's watchers; for a display tree, the managed resources written before it (hadManaged) go
// first, so that no reader sees that tree beside live states the hub no longer reads. The error is
// the tree's; managed resources that could not be written or removed (a redis user without the
// managed-resources keys, docs/install.md) stop nothing else: managedErr says why, and they are
// tried again.
func (r *ResourceTreeReconciler) put(ctx context.Context, instance string, built builtTree, op string, hadManaged bool) (managedErr, err error) {
	switch {
	case built.managed != nil:
		managedErr = r.Cache.PutManaged(ctx, instance, built.managed.Items)
		metrics.ManagedResourcesWrites.WithLabelValues(op, result(managedErr)).Inc()
	case hadManaged:
		managedErr = r.deleteManaged(ctx, instance)
	}
	err = r.Cache.Put(ctx, instance, built.tree)
	metrics.TreeWrites.WithLabelValues(op, result(err), built.source).Inc()
	return managedErr, err
}

// deleteManaged removes an Application's managed resources (a missing key is fine).
func (r *ResourceTreeReconciler) deleteManaged(ctx context.Context, instance string) error {
	err := r.Cache.DeleteManaged(ctx, instance)
	metrics.ManagedResourcesWrites.WithLabelValues("delete", result(err)).Inc()
	return err
}

// result is a write's result label.
func result(err error) string {
	if err != nil {
		return "error"
	}
	return "ok"
}

func (r *ResourceTreeReconciler) record(key types.NamespacedName) (treeRecord, bool) {
	v, ok := r.written.Load(key)
	if !ok {
		return treeRecord{}, false
	}
	return v.(treeRecord), true
}

// otherVersion is the cache version the hub's Argo CD writes when it is not argocd-pull's, read
// from the trees in its redis at most every versionRecheck ("" when it is, when the hub's Argo CD
// wrote none, or when the redis cannot be read: a write then says why).
func (r *ResourceTreeReconciler) otherVersion(ctx context.Context, now time.Time) string {
	r.version.mu.Lock()
	defer r.version.mu.Unlock()
	if !r.version.at.IsZero() && now.Sub(r.version.at) < versionRecheck {
		return r.version.other
	}
	keys, err := r.Cache.TreeKeys(ctx, 100000)
	if err != nil {
		return ""
	}
	apps := argocd.NewApplicationList()
	if err := r.List(ctx, apps, client.UnsafeDisableDeepCopy); err != nil {
		return ""
	}
	pull := make(map[string]bool, len(apps.Items))
	for i := range apps.Items {
		pull[resourcetree.Instance(apps.Items[i].GetNamespace(), apps.Items[i].GetName(), r.ArgoCDNamespace)] = true
	}
	hub := r.Encoding.HubVersions(keys, func(instance string) bool { return pull[instance] })
	r.version.at, r.version.other = now, resourcetree.OtherVersion(hub)
	if r.version.other != "" {
		ctrl.LoggerFrom(ctx).Info("The hub's Argo CD writes another cache version: no resource tree is written", "hub", r.version.other, "argocdPull", resourcetree.CacheVersion)
	}
	return r.version.other
}

// notWritten says once, on the Application, that its tree is not in the cache and why.
func (r *ResourceTreeReconciler) notWritten(ctx context.Context, app *unstructured.Unstructured, exists bool, key types.NamespacedName, why string) {
	last, _ := r.record(key)
	if last.failing {
		return
	}
	last.failing = true
	r.written.Store(key, last)
	if !exists {
		return
	}
	r.Recorder.Eventf(app, nil, corev1.EventTypeWarning, ReasonTreeNotWritten, "ResourceTree",
		"The resource tree is not in the hub Argo CD's cache (the UI and argocd app resources show no tree, and a page view asks the cluster for a refresh): %v. "+
			"Delivery and status go on; argocd-pull retries with backoff. argocd-pull doctor checks the connection", why)
}

// outage is the hub redis being unwritable, shared by all reconciles: while it lasts, they wait,
// and the first one after it probes again; the wait doubles from 1 s to 1 min.
type outage struct {
	mu      sync.Mutex
	until   time.Time
	backoff time.Duration
	err     error
}

func (o *outage) down(now time.Time) (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.until, now.Before(o.until)
}

func (o *outage) failed(ctx context.Context, err error, now time.Time) time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.backoff == 0 {
		ctrl.LoggerFrom(ctx).Error(err, "The hub Argo CD's redis cannot be written: resource trees wait")
	}
	o.backoff = min(max(2*o.backoff, time.Second), time.Minute)
	o.until, o.err = now.Add(o.backoff), err
	return o.until
}

func (o *outage) ok() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.backoff, o.until, o.err = 0, time.Time{}, nil
}

func (o *outage) reason() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err == nil {
		return "unknown"
	}
	return o.err.Error()
}

// jitter spreads the reconciles waiting for the same moment over a second.
func jitter() time.Duration { return time.Duration(rand.Int64N(int64(time.Second))) }
