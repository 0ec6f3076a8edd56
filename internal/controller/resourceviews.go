// The cluster's own tree of an Application whose destination is its cluster's channel secret
// (internal/resourceviews): read through OCM's channel when the tree is built, the display tree
// otherwise and whenever the cluster cannot be read.

package controller

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/appstatus"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/clusteraccess"
	"github.com/argocd-pull/argocd-pull/internal/gitops"
	"github.com/argocd-pull/argocd-pull/internal/metrics"
	"github.com/argocd-pull/argocd-pull/internal/resourcetree"
	"github.com/argocd-pull/argocd-pull/internal/resourceviews"
	"github.com/argocd-pull/argocd-pull/internal/tenancy"
	"github.com/argocd-pull/argocd-pull/internal/viewholders"
)

// Event reason of a tree the cluster could not give.
const ReasonClusterTreeNotRead = "ClusterTreeNotRead"

// maxClusterText bounds what of a cluster's own words (its apiserver's error) goes into an event or
// a log line.
const maxClusterText = 512

// How long the reads of a cluster whose read failed wait: meanwhile its Applications keep the
// display tree and no reconcile waits on a channel that is down. The first failure waits
// clusterTreeFirstBackoff, so that a channel back after a moment (cluster-proxy's tunnel
// reconnecting, an agent restarted) gives the views back within seconds; each failure after it
// through the same channel, with no read between, doubles the wait, up to clusterTreeBackoff: a
// cluster that stays away costs one read a minute.
var (
	clusterTreeFirstBackoff = 10 * time.Second
	clusterTreeBackoff      = time.Minute
)

// backoffAfter is the wait after a cluster's failures-th failed read in a row (1 for the first).
func backoffAfter(failures int) time.Duration {
	d := clusterTreeFirstBackoff
	for i := 1; i < failures && d < clusterTreeBackoff; i++ {
		d *= 2
	}
	return min(d, clusterTreeBackoff)
}

// ClusterTrees reads the cluster's own trees (nil: every tree is the display tree).
type ClusterTrees struct {
	Channel clusteraccess.Channel
	Limits  resourceviews.Limits
	// Targets is the hub's Argo CD API server, which renders an Application's sources at the
	// revisions its cluster compared: the Git side of the managed resources' diff. nil: the
	// managed resources carry the live states alone.
	Targets *resourceviews.ArgoCDServer
	// ProbeEvery is how often each cluster whose own tree the hub holds is asked whether it still
	// answers (probeClusters): a token the cluster revoked while no new one could reach its secret
	// (its managed-serviceaccount agent down), or a channel gone down, turns its trees to the
	// display tree within this, not at their next read (a status change, or the renewal after
	// half the TTL). 0: never.
	ProbeEvery time.Duration

	down sync.Map // cluster → clusterDown
	// reading are the clusters being read now: one read per cluster at a time, so that a cluster
	// that answers slowly holds one worker at most (for its read's deadline), never all of them.
	reading sync.Map // cluster → struct{}
	// up are the clusters whose last read succeeded, with when: probed (probeClusters) while
	// their trees are the clusters' own.
	up sync.Map // cluster → time.Time
	// wentDown carries each cluster whose read failed while it was not known down: its other
	// Applications are requeued, and take the display tree at once (their uids would send Argo
	// CD's views to a cluster that does not answer, or answers 401: docs/argocd-clients.md).
	wentDown chan event.GenericEvent
}

// failed marks cluster down for reads through channel until the backoff ends (backoffAfter: the
// failures through that channel since its last read count), and tells the cluster's other
// Applications when it was not down through that channel before (a full queue drops the word: they
// find out at their own reads). It returns how long the reads wait.
func (ct *ClusterTrees) failed(cluster string, channel [sha256.Size]byte, why string, now time.Time) time.Duration {
	ct.up.Delete(cluster)
	failures := 1
	if d, ok := ct.down.Load(cluster); ok && d.(clusterDown).channel == channel {
		failures = d.(clusterDown).failures + 1
	}
	wait := backoffAfter(failures)
	prev, was := ct.down.Swap(cluster, clusterDown{until: now.Add(wait), why: why, channel: channel, failures: failures})
	if (was && prev.(clusterDown).channel == channel) || ct.wentDown == nil {
		return wait
	}
	o := &metav1.PartialObjectMetadata{}
	o.SetName(cluster)
	select {
	case ct.wentDown <- event.GenericEvent{Object: o}:
	default:
	}
	return wait
}

// downFor says why reads of cluster through channel wait at now, and for how long ("", 0, false:
// they don't). A mark left by another channel (the secret's token or server before it changed)
// holds nothing: a new token is tried at once, even when a read with the old one fails after it
// came.
func (ct *ClusterTrees) downFor(cluster string, channel [sha256.Size]byte, now time.Time) (string, time.Duration, bool) {
	d, ok := ct.down.Load(cluster)
	if !ok || d.(clusterDown).channel != channel || !now.Before(d.(clusterDown).until) {
		return "", 0, false
	}
	return d.(clusterDown).why, d.(clusterDown).until.Sub(now), true
}

// begin claims the one read of cluster at a time: false when another is under way (the caller
// comes back later); end gives it back.
func (ct *ClusterTrees) begin(cluster string) bool {
	_, busy := ct.reading.LoadOrStore(cluster, struct{}{})
	return !busy
}

func (ct *ClusterTrees) end(cluster string) { ct.reading.Delete(cluster) }

// read records that a read of cluster through channel succeeded at now: the cluster is down
// through it no more (a mark of another channel stays its own), and is probed from now on.
func (ct *ClusterTrees) read(cluster string, channel [sha256.Size]byte, now time.Time) {
	if d, ok := ct.down.Load(cluster); ok && d.(clusterDown).channel == channel {
		ct.down.CompareAndDelete(cluster, d)
	}
	ct.up.Store(cluster, now)
}

// clusterDown is a cluster whose last read through channel failed: not read through it again
// before until.
type clusterDown struct {
	until   time.Time
	why     string
	channel [sha256.Size]byte
	// failures are the failed reads through channel since the last read that succeeded.
	failures int
}

// channelOf identifies the server and credentials cfg reads with.
func channelOf(cfg *rest.Config) [sha256.Size]byte {
	h := sha256.New()
	for _, b := range [][]byte{[]byte(cfg.Host), []byte(cfg.BearerToken), cfg.CAData} {
		h.Write(b)
		h.Write([]byte{0})
	}
	return [sha256.Size]byte(h.Sum(nil))
}

// builtTree is a tree with what building it left out, and where it came from.
type builtTree struct {
	tree    resourcetree.Tree
	message string
	source  string
	// managed are the managed resources of a tree read from the cluster (nil for the display
	// tree: none is written, and one written before is removed).
	managed *resourceviews.Managed
	// warning says what of the cluster's objects the tree and the managed resources left out.
	warning string
	// unread says why the cluster's own tree was asked for and could not be read ("" otherwise),
	// and retry when the cluster is read again (its backoff).
	unread string
	retry  time.Duration
	// busy: another read of the same cluster is under way; nothing was built, and the
	// Application is reconciled again a moment later.
	busy bool
	// forbidden: the cluster refused some reads with 403 (the account's rights delivered a moment
	// ago, not in force yet, or a kind outside them): read once more soon (forbiddenRetry).
	forbidden bool
	// awaiting: the display tree, while the hub's admission policy does not know yet the
	// destination this name would hold a tree of uids for (viewholders.Pending): built again soon.
	awaiting bool
}

// viewHoldSettle is how long after the write of a name's record (internal/viewholders) its first
// tree of uids waits: the apiserver's admission policy reads the records from a watch.
var viewHoldSettle = time.Second

// forbiddenRetry is when a tree some of whose reads the cluster refused is read once more: the
// account's rights are delivered by a ManifestWork of their own, and the first tree after the
// channel came may be read before the cluster's agent applied them.
var forbiddenRetry = 15 * time.Second

// build is the tree of app, delivered to cluster, whose status lists resources: the cluster's own
// when resourceviews.Route sends it there and the read succeeds, the display tree otherwise, and
// always when its work is frozen (a right revoked).
func (r *ResourceTreeReconciler) build(ctx context.Context, app *unstructured.Unstructured, cluster string, resources []any, frozen bool) builtTree {
	display := func(unread string) builtTree {
		b := resourcetree.Build(resources)
		return builtTree{tree: b.Tree, message: b.Message(), source: metrics.TreeSourceDisplay, unread: unread}
	}
	ct := r.ClusterTrees
	if ct == nil || !ct.Channel.Configured() || frozen {
		return display("")
	}
	var dest resourceviews.Destination
	dest.Name, _, _ = unstructured.NestedString(app.Object, "spec", "destination", "name")
	dest.Server, _, _ = unstructured.NestedString(app.Object, "spec", "destination", "server")
	dest.Namespace, _, _ = unstructured.NestedString(app.Object, "spec", "destination", "namespace")
	secret := &corev1.Secret{}
	// The cache holds argocd-pull's own cluster secrets only: any other reads as not found.
	if err := r.Get(ctx, types.NamespacedName{Namespace: r.ArgoCDNamespace, Name: gitops.SecretName(cluster)}, secret); err != nil {
		secret = nil
	}
	project := argocd.NewAppProject()
	// The cache's own object, only read; a change of it requeues its Applications.
	if err := r.Get(ctx, types.NamespacedName{Namespace: r.ArgoCDNamespace, Name: argocd.Project(app)}, project, client.UnsafeDisableDeepCopy); err != nil {
		project = nil
	}
	cfg, why := resourceviews.Route(dest, cluster, secret, ct.Channel, project)
	if cfg == nil {
		ctrl.LoggerFrom(ctx).V(1).Info("The display tree", "reason", why)
		return display("")
	}
	now, channel := time.Now(), channelOf(cfg)
	// Argo CD finds a tree by the Application's name: the name's destination is recorded for the
	// hub's admission policy first, so that no Application made again under this name with another
	// destination can use the tree (internal/viewholders).
	hold := viewholders.Pending
	if r.Holders != nil {
		hold = r.Holders.Hold(viewholders.Key(app.GetNamespace(), app.GetName()), viewholders.Value(dest.Name, dest.Server), now)
	}
	if hold != viewholders.Held {
		b := display("")
		b.awaiting = r.Holders != nil && hold == viewholders.Pending
		return b
	}
	if why, wait, down := ct.downFor(cluster, channel, now); down {
		b := display(why)
		b.retry = wait
		return b
	}
	if !ct.begin(cluster) {
		return builtTree{busy: true}
	}
	server := ct.Channel.Server(cluster)
	refused := func(id resourcetree.Ref) string {
		return tenancy.ResourceRefused(project, cluster, server, id.Group, id.Kind, id.Namespace, id.Name)
	}
	facts, reads, err := resourceviews.Read(ctx, cfg, resources, ct.Limits, refused)
	// The cluster is read: the hub's Argo CD API server's manifests below are not the cluster's.
	ct.end(cluster)
	metrics.ClusterTreeReads.Add(float64(reads.Requests))
	if err != nil {
		// The cluster's answer is in the error: bounded before it reaches an event or a log.
		why := appstatus.Truncate(err.Error(), maxClusterText)
		b := display(why)
		b.retry = ct.failed(cluster, channel, why, now)
		return b
	}
	ct.read(cluster, channel, now)
	facts.HubUIDs = map[string]bool{string(app.GetUID()): true}
	b := resourceviews.Tree(facts)
	sources := resourceviews.Sources{Listed: resources, Live: facts.Objects, Unread: facts.Unread}
	sources.Namespace, _, _ = unstructured.NestedString(app.Object, "spec", "destination", "namespace")
	if ct.Targets != nil {
		targets, err := ct.Targets.Manifests(ctx, app)
		if err != nil {
			// The live states still show; no comparison is claimed (argocd app diff then errs).
			ctrl.LoggerFrom(ctx).Info("The managed resources carry no Git side", "reason", err.Error())
		} else {
			sources.Targets = targets
		}
	}
	managed := resourceviews.ManagedResources(sources)
	if msg := managed.Message(); msg != "" {
		ctrl.LoggerFrom(ctx).Info("Cutting the managed resources", "reason", msg)
	}
	warning := strings.Join(slices.DeleteFunc([]string{b.ClusterMessage(), managed.Message()}, func(s string) bool { return s == "" }), "; ")
	return builtTree{tree: b.Tree, message: b.Message(), source: metrics.TreeSourceCluster, managed: &managed, warning: warning, forbidden: reads.Forbidden > 0}
}

// TreeWarnings are what building each Application's tree from its cluster left out: objects that
// break the tree's rules, children over its caps, managed resources without states. The status
// controller says them in the Application's PullFeedbackWarning, as it says what of the cluster's
// feedback it cut: the cluster wrote both.
type TreeWarnings struct {
	m sync.Map // types.NamespacedName → string
	// changed queues the status controller's reconcile of an Application whose warning changed.
	changed func(ctx context.Context, key types.NamespacedName)
}

// Get is key's warning, "" when none (or w is nil).
func (w *TreeWarnings) Get(key types.NamespacedName) string {
	if w == nil {
		return ""
	}
	v, _ := w.m.Load(key)
	s, _ := v.(string)
	return s
}

// set records key's warning ("": none), and queues its status when it changed.
func (w *TreeWarnings) set(ctx context.Context, key types.NamespacedName, warning string) {
	if w == nil || w.Get(key) == warning {
		return
	}
	if warning == "" {
		w.m.Delete(key)
	} else {
		w.m.Store(key, warning)
	}
	if w.changed != nil {
		w.changed(ctx, key)
	}
}

// next is when b's Application is reconciled again, at the latest after renew: a cluster whose
// own tree could not be read is tried again once its backoff ends, so that its tree comes back
// with the channel, with no change of the Application.
func (b builtTree) next(renew time.Duration, last treeRecord) time.Duration {
	switch {
	case b.awaiting:
		return min(renew, viewHoldSettle+jitter())
	case b.unread != "":
		return min(renew, b.retry+jitter())
	case b.forbidden && !last.forbidden:
		// Once: a kind the account may never read would read again every time otherwise.
		return min(renew, forbiddenRetry+jitter())
	}
	return renew
}

// sum identifies what b writes: its tree, and its managed resources when it has them.
func (b builtTree) sum() [sha256.Size]byte {
	if b.managed == nil {
		return b.tree.Sum()
	}
	tree := b.tree.Sum()
	items, _ := json.Marshal(b.managed.Items)
	return sha256.Sum256(append(tree[:], items...))
}

// applicationsOfSecret are the Applications of the cluster whose secret (in the Argo CD namespace)
// o is. The secret's server or credentials changed (channelChanged): a read that failed before
// says nothing of the new ones (ClusterTrees.downFor), so the cluster is read again at once (a new
// token after the cluster refused the old one).
func (r *ResourceTreeReconciler) applicationsOfSecret(ctx context.Context, o client.Object) []reconcile.Request {
	cluster := o.GetLabels()[api.ClusterLabel]
	if o.GetNamespace() != r.ArgoCDNamespace || cluster == "" {
		return nil
	}
	return r.applicationsOf(ctx, cluster)
}

// applicationsOfCluster are the Applications of the cluster o names (ClusterTrees.wentDown).
func (r *ResourceTreeReconciler) applicationsOfCluster(ctx context.Context, o client.Object) []reconcile.Request {
	return r.applicationsOf(ctx, o.GetName())
}

// applicationsOf are the Applications delivered to cluster.
func (r *ResourceTreeReconciler) applicationsOf(ctx context.Context, cluster string) []reconcile.Request {
	return applicationRequests(ctx, r.Client, client.MatchingFields{appClusterIndex: cluster})
}

// applicationsOfProject requeues the Applications of an AppProject of the Argo CD namespace.
func (r *ResourceTreeReconciler) applicationsOfProject(ctx context.Context, o client.Object) []reconcile.Request {
	if o.GetNamespace() != r.ArgoCDNamespace {
		return nil
	}
	return applicationRequests(ctx, r.Client, client.MatchingFields{appProjectIndex: o.GetName()})
}

// destinationsChanged says whether an AppProject's update changed what it permits its Applications' trees: its
// destinations (resourceviews.Route) and its resource lists (tenancy.ResourceRefused).
func destinationsChanged(old, updated client.Object) bool {
	o, okOld := old.(*unstructured.Unstructured)
	n, okNew := updated.(*unstructured.Unstructured)
	if !okOld || !okNew {
		return true
	}
	for _, field := range []string{"destinations", "permitOnlyProjectScopedClusters", "namespaceResourceWhitelist", "namespaceResourceBlacklist",
		"clusterResourceWhitelist", "clusterResourceBlacklist"} {
		if fieldChanged(o, n, "spec", field) {
			return true
		}
	}
	return false
}

// channelChanged passes the cluster secrets whose server or credentials changed, and their
// creation and deletion.
func channelChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, okOld := e.ObjectOld.(*corev1.Secret)
		n, okNew := e.ObjectNew.(*corev1.Secret)
		return !okOld || !okNew || !bytes.Equal(o.Data["server"], n.Data["server"]) || !bytes.Equal(o.Data["config"], n.Data["config"])
	}}
}
