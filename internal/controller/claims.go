// The clusters' claim probes (manifestwork.DesiredProbe): where the propagation controller reads
// them, what their answers wake, and how an Application is added to one.

package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/metrics"
)

// claimProbes reads the probes from a cache of their own: the manager's cache holds the
// Applications' works only (api.ManagedByLabel), which every other reader takes for one
// Application's.
type claimProbes struct {
	cache cache.Cache
}

// probeEntryIndex indexes the probes by "<namespace>/<name>" of each hub Application they ask about.
const probeEntryIndex = "argocd-pull.probeEntry"

func newClaimProbes(mgr ctrl.Manager) (*claimProbes, error) {
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{&workv1.ManifestWork{}: {Label: labels.SelectorFromSet(labels.Set{manifestwork.ProbeLabel: "true"})}},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the cache of the claim probes: %w", err)
	}
	if err := c.IndexField(context.Background(), &workv1.ManifestWork{}, probeEntryIndex, func(o client.Object) []string {
		var keys []string
		for _, e := range manifestwork.ProbeEntries(o.(*workv1.ManifestWork)) {
			keys = append(keys, e.Hub.String())
		}
		return keys
	}); err != nil {
		return nil, fmt.Errorf("indexing the claim probes: %w", err)
	}
	if err := mgr.Add(c); err != nil {
		return nil, fmt.Errorf("adding the cache of the claim probes: %w", err)
	}
	return &claimProbes{cache: c}, nil
}

// of is the probe of cluster, nil when there is none.
func (p *claimProbes) of(ctx context.Context, cluster string) (*workv1.ManifestWork, error) {
	if p == nil {
		return nil, nil
	}
	probe := &workv1.ManifestWork{}
	switch err := p.cache.Get(ctx, types.NamespacedName{Namespace: cluster, Name: manifestwork.ProbeName}, probe); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading the claim probe of %s: %w", cluster, err)
	}
	if !manifestwork.IsProbe(probe) {
		return nil, nil
	}
	return probe, nil
}

// asking are the clusters whose probes ask about the hub Application key.
func (p *claimProbes) asking(ctx context.Context, key types.NamespacedName) ([]string, error) {
	if p == nil {
		return nil, nil
	}
	probes := &workv1.ManifestWorkList{}
	if err := p.cache.List(ctx, probes, client.MatchingFields{probeEntryIndex: key.String()}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing the claim probes asking about %s: %w", key, err)
	}
	var out []string
	for _, probe := range probes.Items {
		out = append(out, probe.Namespace)
	}
	return out, nil
}

// source wakes the Applications whose answers a probe's change changed
// (manifestwork.ProbeAnswersChanged: the first answers, a foreign Application gone), and those it
// no longer asks about (manifestwork.ProbeDropped).
func (p *claimProbes) source() source.Source {
	wake := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], old, probe *workv1.ManifestWork) {
		for _, key := range append(manifestwork.ProbeAnswersChanged(old, probe), manifestwork.ProbeDropped(old, probe)...) {
			q.Add(reconcile.Request{NamespacedName: key})
		}
	}
	return source.Kind[client.Object](p.cache, &workv1.ManifestWork{}, handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if probe, ok := e.Object.(*workv1.ManifestWork); ok {
				wake(q, nil, probe)
			}
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			old, okOld := e.ObjectOld.(*workv1.ManifestWork)
			probe, okNew := e.ObjectNew.(*workv1.ManifestWork)
			if okOld && okNew {
				wake(q, old, probe)
			}
		},
	})
}

// probeWrites serialises this process's writes of each cluster's probe and remembers the last:
// the Applications of a new cluster are reconciled at the same moment by several workers, and each
// would create the probe, or update it from a copy the cache has not brought up to date yet.
type probeWrites struct {
	locks sync.Map // cluster -> *sync.Mutex
	last  sync.Map // cluster -> probeWrite
	// delivered are, per cluster, the hub Applications whose works this process created since
	// the probe asked about them (see tidy): the cache may not show those works yet.
	delivered sync.Map // cluster -> map[types.NamespacedName]bool, read and written under the lock
}

func (p *probeWrites) deliveredOn(cluster string) map[types.NamespacedName]bool {
	v, _ := p.delivered.LoadOrStore(cluster, map[types.NamespacedName]bool{})
	return v.(map[types.NamespacedName]bool)
}

// probeWrite is a probe this process wrote, and the resource version it wrote it over ("" for a
// create).
type probeWrite struct {
	from    string
	written *workv1.ManifestWork
}

func (p *probeWrites) lock(cluster string) func() {
	mu, _ := p.locks.LoadOrStore(cluster, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	return mu.(*sync.Mutex).Unlock
}

// current is the probe of cluster as this process knows it: cached, or the one it wrote while the
// cache still shows what it wrote over.
func (p *probeWrites) current(cluster string, cached *workv1.ManifestWork) *workv1.ManifestWork {
	v, ok := p.last.Load(cluster)
	if !ok {
		return cached
	}
	w := v.(probeWrite)
	if cached == nil && w.from == "" || cached != nil && cached.ResourceVersion == w.from {
		return w.written
	}
	return cached
}

// lockedProbe takes the lock on cluster's probe writes and reads the probe as this process knows
// it (probeWrites.current; nil when there is none). The caller unlocks, also on an error.
func (r *PropagationReconciler) lockedProbe(ctx context.Context, cluster string) (*workv1.ManifestWork, func(), error) {
	unlock := r.probeWrites.lock(cluster)
	cached, err := r.probes.of(ctx, cluster)
	if err != nil {
		return nil, unlock, err
	}
	return r.probeWrites.current(cluster, cached), unlock, nil
}

// ask adds entry to its cluster's probe with every other Application of the cluster that waits for
// an answer (waiting), creating the probe if there is none. An entry already asked about is left
// as it is; entries of Applications delivered meanwhile go.
func (r *PropagationReconciler) ask(ctx context.Context, cluster string, entry manifestwork.ProbeEntry) error {
	probe, unlock, err := r.lockedProbe(ctx, cluster)
	defer unlock()
	if err != nil {
		return err
	}
	delete(r.probeWrites.deliveredOn(cluster), entry.Hub) // it waits again
	if manifestwork.ProbeAsks(probe, entry.Key()) {
		return nil // another reconcile asked a moment ago
	}
	waiting, err := r.waiting(ctx, cluster, probe, entry)
	if err != nil {
		return err
	}
	desired, err := manifestwork.DesiredProbe(cluster, waiting)
	if err != nil {
		return err
	}
	write, from := workWrite{op: metrics.OpCreate, work: desired, why: "Creating the claim probe"}, ""
	if probe != nil {
		updated := probe.DeepCopy()
		updated.Spec = desired.Spec
		write, from = workWrite{op: metrics.OpUpdate, work: updated, why: "Updating the claim probe"}, probe.ResourceVersion
	}
	write.kv = []any{"entries", len(desired.Spec.Workload.Manifests)}
	if err := r.write(ctx, write); err != nil {
		r.probeWrites.last.Delete(cluster) // read it again
		return err
	}
	r.probeWrites.last.Store(cluster, probeWrite{from: from, written: write.work.DeepCopy()})
	return nil
}

// tidyProbes deletes the probes that ask about the hub Application key once it no longer waits
// (its work on cluster was just created; it is gone, or names another cluster) and no other of
// their entries waits: a probe read by the cluster's agent on every status sync, and an
// AppliedManifestWork on the cluster, serve nothing then. A probe with an entry still waiting (a
// foreign Application, an answer to come) stays.
func (r *PropagationReconciler) tidyProbes(ctx context.Context, key types.NamespacedName, cluster string) error {
	clusters, err := r.probes.asking(ctx, key)
	if err != nil {
		return err
	}
	if cluster != "" && !slices.Contains(clusters, cluster) {
		clusters = append(clusters, cluster) // the cache may not show the write that asked yet
	}
	for _, c := range clusters {
		if err := r.tidyProbe(ctx, c, key); err != nil {
			return err
		}
	}
	return nil
}

func (r *PropagationReconciler) tidyProbe(ctx context.Context, cluster string, done types.NamespacedName) error {
	probe, unlock, err := r.lockedProbe(ctx, cluster)
	defer unlock()
	if err != nil {
		return err
	}
	if probe == nil {
		return nil
	}
	delivered := r.probeWrites.deliveredOn(cluster)
	delivered[done] = true
	for _, e := range manifestwork.ProbeEntries(probe) {
		if delivered[e.Hub] {
			continue
		}
		if waits, err := r.waits(ctx, cluster, e); err != nil || waits {
			return err
		}
	}
	err = r.write(ctx, workWrite{op: metrics.OpDelete, work: probe, exact: true, why: "Deleting the claim probe: every Application it asked about is answered and delivered"})
	if err != nil && !apierrors.IsConflict(err) {
		return err
	}
	r.probeWrites.last.Delete(cluster)
	r.probeWrites.delivered.Delete(cluster)
	return nil
}

// waiting are the entries of the probe to write for entry: entry first, then the entries of
// probe whose Applications still wait (an entry asked about keeps its place, so that a write never
// drops one for a newcomer while there is room), then the other Applications of entry's namespace
// that target cluster and have no work there yet, by name. Only entry's namespace: another
// namespace's Applications may be refused for reasons of their own, and a tenant's many
// Applications must not crowd out the others'. What the ladder decides for a sibling is not looked
// at otherwise: an entry only reads.
func (r *PropagationReconciler) waiting(ctx context.Context, cluster string, probe *workv1.ManifestWork, entry manifestwork.ProbeEntry) ([]manifestwork.ProbeEntry, error) {
	out := []manifestwork.ProbeEntry{entry}
	for _, e := range manifestwork.ProbeEntries(probe) {
		if e.Key() == entry.Key() {
			continue
		}
		if waits, err := r.waits(ctx, cluster, e); err != nil {
			return nil, err
		} else if waits {
			out = append(out, e)
		}
	}
	apps := argocd.NewApplicationList()
	if err := r.List(ctx, apps, client.InNamespace(entry.Hub.Namespace), client.MatchingFields{appClusterIndex: cluster}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing the Applications of %s: %w", cluster, err)
	}
	var siblings []manifestwork.ProbeEntry
	for i := range apps.Items {
		app := &apps.Items[i]
		target, pull, err := manifestwork.ReadMarkers(app)
		if err != nil || !pull || target.Cluster != cluster || !app.GetDeletionTimestamp().IsZero() {
			continue
		}
		e := manifestwork.ProbeEntry{Namespace: target.AppNamespace, Name: app.GetName(), Hub: client.ObjectKeyFromObject(app)}
		if slices.ContainsFunc(out, func(o manifestwork.ProbeEntry) bool { return o.Key() == e.Key() }) {
			continue
		}
		if waits, err := r.waits(ctx, cluster, e); err != nil {
			return nil, err
		} else if waits {
			siblings = append(siblings, e)
		}
	}
	slices.SortFunc(siblings, func(a, b manifestwork.ProbeEntry) int { return strings.Compare(a.Hub.Name, b.Hub.Name) })
	return append(out, siblings...), nil
}

// waits reports whether the probe entry's hub Application still exists, still names it, and has no
// work on cluster yet.
func (r *PropagationReconciler) waits(ctx context.Context, cluster string, e manifestwork.ProbeEntry) (bool, error) {
	app := argocd.NewApplication()
	switch err := r.Get(ctx, e.Hub, app, client.UnsafeDisableDeepCopy); {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading Application %s: %w", e.Hub, err)
	}
	target, pull, err := manifestwork.ReadMarkers(app)
	if err != nil || !pull || target.Cluster != cluster || target.AppNamespace != e.Namespace || !app.GetDeletionTimestamp().IsZero() {
		return false, nil
	}
	works := &workv1.ManifestWorkList{}
	if err := r.List(ctx, works, client.InNamespace(cluster), client.MatchingFields{workHubAppIndex: e.Hub.String()}, client.UnsafeDisableDeepCopy); err != nil {
		return false, fmt.Errorf("listing the ManifestWorks of Application %s: %w", e.Hub, err)
	}
	return len(works.Items) == 0, nil
}
