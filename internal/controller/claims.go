// The clusters' claim probes (manifestwork.DesiredProbe): where the propagation controller reads
// them, what their answers wake, and how an Application is added to one.

package controller

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

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

func newClaimProbes(mgr ctrl.Manager) (*claimProbes, error) {
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{&workv1.ManifestWork{}: {Label: labels.SelectorFromSet(labels.Set{manifestwork.ProbeLabel: "true"})}},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the cache of the claim probes: %w", err)
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

// source wakes the Applications whose answers a probe's change changed
// (manifestwork.ProbeAnswersChanged): the first answers, a foreign Application gone.
func (p *claimProbes) source() source.Source {
	wake := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], old, probe *workv1.ManifestWork) {
		for _, key := range manifestwork.ProbeAnswersChanged(old, probe) {
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

// ask adds entry to its cluster's probe with every other Application of the cluster that waits for
// an answer (waiting), creating the probe if there is none. An entry already asked about is left
// as it is; entries of Applications delivered meanwhile go.
func (r *PropagationReconciler) ask(ctx context.Context, cluster string, entry manifestwork.ProbeEntry) error {
	probe, err := r.probes.of(ctx, cluster)
	if err != nil {
		return err
	}
	waiting, err := r.waiting(ctx, cluster, entry)
	if err != nil {
		return err
	}
	desired, err := manifestwork.DesiredProbe(cluster, waiting)
	if err != nil {
		return err
	}
	if probe == nil {
		return r.write(ctx, workWrite{op: metrics.OpCreate, work: desired, why: "Creating the claim probe",
			kv: []any{"entries", len(desired.Spec.Workload.Manifests)}})
	}
	if slices.Equal(manifestwork.ProbeEntries(probe), manifestwork.ProbeEntries(desired)) {
		return nil
	}
	updated := probe.DeepCopy()
	updated.Spec = desired.Spec
	return r.write(ctx, workWrite{op: metrics.OpUpdate, work: updated, why: "Updating the claim probe",
		kv: []any{"entries", len(desired.Spec.Workload.Manifests)}})
}

// waiting are the probe entries of cluster's Applications that have no work there yet: entry
// first, then the others by namespace and name. What the ladder refuses them for is not looked at:
// an entry only reads.
func (r *PropagationReconciler) waiting(ctx context.Context, cluster string, entry manifestwork.ProbeEntry) ([]manifestwork.ProbeEntry, error) {
	apps := argocd.NewApplicationList()
	if err := r.List(ctx, apps, client.MatchingFields{appClusterIndex: cluster}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing the Applications of %s: %w", cluster, err)
	}
	out := []manifestwork.ProbeEntry{entry}
	policy := r.Options.policy()
	for i := range apps.Items {
		app := &apps.Items[i]
		key := client.ObjectKeyFromObject(app)
		target, pull, err := manifestwork.ReadMarkers(app)
		if key == entry.Hub || err != nil || !pull || target.Cluster != cluster || !app.GetDeletionTimestamp().IsZero() || !policy.Allows(app.GetNamespace()) {
			continue
		}
		works := &workv1.ManifestWorkList{}
		if err := r.List(ctx, works, client.InNamespace(cluster), client.MatchingFields{workHubAppIndex: key.String()}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("listing the ManifestWorks of Application %s: %w", key, err)
		}
		if len(works.Items) > 0 {
			continue
		}
		out = append(out, manifestwork.ProbeEntry{Namespace: target.AppNamespace, Name: app.GetName(), Hub: key})
	}
	slices.SortFunc(out[1:], func(a, b manifestwork.ProbeEntry) int {
		return cmp.Or(strings.Compare(a.Hub.Namespace, b.Hub.Namespace), strings.Compare(a.Hub.Name, b.Hub.Name))
	})
	return out, nil
}
