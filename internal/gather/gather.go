// Package gather reads what the refusal ladder (propagation.Ladder) decides on about one hub
// Application, for every caller: the propagation controller, the doctor and argocd-pull takeover
// --dry-run see the same facts. They differ only in how works are found (Works): the controller
// from its caches' indexes, a command from lists of the hub (Listed). The cluster's add-ons of the
// hub's channel are read here too, for the GitOpsCluster controller and the doctor (addons.go).
package gather

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/internal/appstatus"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/propagation"
)

// Works finds the ManifestWorks the ladder's facts are about.
type Works interface {
	// Of are argocd-pull's works that point back to the hub Application key, on every cluster.
	Of(ctx context.Context, key types.NamespacedName) ([]workv1.ManifestWork, error)
	// Carrying are argocd-pull's works on cluster whose payload is the managed-cluster Application
	// managed (manifestwork.ManagedKey).
	Carrying(ctx context.Context, cluster, managed string) ([]workv1.ManifestWork, error)
	// Upstream are the upstream pull controllers' works of the hub Application key on cluster,
	// oldest first.
	Upstream(ctx context.Context, cluster string, key types.NamespacedName) ([]workv1.ManifestWork, error)
	// Probe is the claim probe of cluster (manifestwork.ProbeName), nil when there is none.
	Probe(ctx context.Context, cluster string) (*workv1.ManifestWork, error)
}

// NoWorks is a new Application's view: it finds no works (the doctor's check of the rules asks
// for it, and makes no delivery).
var NoWorks Works = noWorks{}

type noWorks struct{}

func (noWorks) Of(context.Context, types.NamespacedName) ([]workv1.ManifestWork, error) {
	return nil, nil
}
func (noWorks) Carrying(context.Context, string, string) ([]workv1.ManifestWork, error) {
	return nil, nil
}
func (noWorks) Upstream(context.Context, string, types.NamespacedName) ([]workv1.ManifestWork, error) {
	return nil, nil
}
func (noWorks) Probe(context.Context, string) (*workv1.ManifestWork, error) { return nil, nil }

// Result is what Read found: the ladder's facts, and what acting on its verdict needs besides.
type Result struct {
	Facts propagation.Facts
	// Works are the Application's works, on every cluster.
	Works []workv1.ManifestWork
	// Rival is the older work of another hub Application that carries the managed-cluster
	// Application this one would deliver, nil when there is none.
	Rival *workv1.ManifestWork
}

// Read reads through r and works every fact the ladder decides on about app, whose markers gave
// target: propagation.ReadFacts, then the works. Nothing but its works is read for an Application
// whose markers name no cluster.
func Read(ctx context.Context, r client.Reader, works Works, p propagation.Policy, app *unstructured.Unstructured, target manifestwork.Target) (Result, error) {
	var res Result
	var err error
	if res.Facts, err = propagation.ReadFacts(ctx, r, p, app, target); err != nil {
		return res, err
	}
	f := &res.Facts
	key := client.ObjectKeyFromObject(app)
	if res.Works, err = works.Of(ctx, key); err != nil || target.Cluster == "" {
		return res, err
	}
	f.Existing = manifestwork.Oldest(res.Works, func(w *workv1.ManifestWork) bool { return w.Namespace == target.Cluster })
	if f.Existing == nil {
		if f.NameTakenBy, err = nameTakenBy(ctx, r, target.Cluster, key); err != nil {
			return res, err
		}
		if f.Probe, err = works.Probe(ctx, target.Cluster); err != nil {
			return res, err
		}
	}
	if res.Rival, err = rival(ctx, works, target, key, f.Existing); err != nil {
		return res, err
	}
	upstream, err := works.Upstream(ctx, target.Cluster, key)
	if err != nil {
		return res, err
	}
	if len(upstream) > 0 {
		f.Upstream = &upstream[0]
	}
	if res.Rival != nil {
		owner, _ := manifestwork.HubApplicationOf(res.Rival)
		f.DeliveredBy = owner.String()
	}
	if f.Existing != nil {
		obs := appstatus.Observe(f.Existing)
		f.Carried, f.Reported = obs.Carried, obs.Delivery
		f.Carried.Operation, f.Carried.RefreshValue = manifestwork.PayloadRequests(f.Existing)
	}
	return res, nil
}

// nameTakenBy is the hub Application whose work holds the name the Application's new work on
// cluster would take, "" when the name is free. The controller never writes a work that points
// back to another Application.
func nameTakenBy(ctx context.Context, r client.Reader, cluster string, key types.NamespacedName) (string, error) {
	work := &workv1.ManifestWork{}
	name := types.NamespacedName{Namespace: cluster, Name: manifestwork.WorkName(key.Namespace, key.Name)}
	if err := r.Get(ctx, name, work); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("reading ManifestWork %s: %w", name, err)
	}
	if owner, ok := manifestwork.HubApplicationOf(work); !ok || owner != key {
		return owner.String(), nil
	}
	return "", nil
}

// rival is the work of another hub Application that carries the managed-cluster Application
// this one (key) would deliver to target and is older than this one's (existing, nil when none):
// the first one keeps it. Nil when there is none.
func rival(ctx context.Context, works Works, target manifestwork.Target, key types.NamespacedName, existing *workv1.ManifestWork) (*workv1.ManifestWork, error) {
	carrying, err := works.Carrying(ctx, target.Cluster, manifestwork.ManagedKey(target, key.Name))
	if err != nil {
		return nil, err
	}
	first := manifestwork.Oldest(carrying, func(w *workv1.ManifestWork) bool {
		owner, ok := manifestwork.HubApplicationOf(w)
		return !ok || owner != key
	})
	if first == nil || existing != nil && !manifestwork.OlderThan(first, existing) {
		return nil, nil
	}
	return first, nil
}
