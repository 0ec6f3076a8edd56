package e2e

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

// A paused work with the real work agent: the agent stops applying it (a manifest changed in the
// paused work does not reach the managed cluster, where a held work's would) and keeps reporting;
// deleting the paused hub Application leaves the managed one running, no longer owned by the
// agent.
func TestAPausedWorkIsNotAppliedAndKeepsReporting(t *testing.T) {
	requireLab(t)
	ctx := context.Background()
	hub, spoke := lab.hub.Client, lab.spoke.Client
	key, argo := pullApp(t, "paused")
	workKey := types.NamespacedName{Namespace: clusterName, Name: manifestwork.WorkName(key.Namespace, key.Name)}
	work := func() *workv1.ManifestWork {
		w := &workv1.ManifestWork{}
		if err := hub.Get(ctx, workKey, w); err != nil {
			t.Fatalf("reading the work: %v", err)
		}
		return w
	}
	eventually(t, "the work held", step, func(ctx context.Context) (bool, error) { return manifestwork.Held(work()), nil })

	eventually(t, "pausing the hub Application", step, func(ctx context.Context) (bool, error) {
		app := application(key.Name)
		if err := hub.Get(ctx, key, app); err != nil {
			return false, err
		}
		a := app.GetAnnotations()
		a[api.PausedAnnotation] = "incident-42"
		app.SetAnnotations(a)
		err := hub.Update(ctx, app)
		return err == nil, client.IgnoreNotFound(err)
	})
	eventually(t, "the agent took the paused work", step, func(ctx context.Context) (bool, error) {
		w := work()
		return manifestwork.Paused(w) && appliedAt(w), nil
	})
	// The agent applies a held work whenever its manifest changes; a paused one, never. Change the
	// paused work's manifest as nothing else would (the controller writes nothing while paused).
	const probe = "e2e.argocd-pull.io/probe"
	eventually(t, "changing the paused work's manifest", step, func(ctx context.Context) (bool, error) {
		w := work()
		app := &unstructured.Unstructured{}
		if err := app.UnmarshalJSON(w.Spec.Workload.Manifests[0].Raw); err != nil {
			return false, err
		}
		a := app.GetAnnotations()
		a[probe] = "applied"
		app.SetAnnotations(a)
		raw, err := app.MarshalJSON()
		if err != nil {
			return false, err
		}
		w.Spec.Workload.Manifests[0].Raw = raw
		err = hub.Update(ctx, w)
		return err == nil, client.IgnoreNotFound(err)
	})
	eventually(t, "the agent took the changed work", step, func(ctx context.Context) (bool, error) { return appliedAt(work()), nil })
	throughout(t, 5*time.Second, func() string {
		if v := managedApp(t, key).GetAnnotations()[probe]; v != "" {
			return "the paused work was applied on the managed cluster"
		}
		return ""
	})

	// Reporting continues.
	argo.update("Degraded on the managed cluster", func(app *unstructured.Unstructured) bool {
		app.Object["status"] = map[string]any{"health": map[string]any{"status": "Degraded"}, "sync": map[string]any{"status": "Synced"}}
		return true
	})
	eventually(t, "Degraded on the hub Application", step, func(ctx context.Context) (bool, error) {
		app := application(key.Name)
		if err := hub.Get(ctx, key, app); err != nil {
			return false, err
		}
		health, _, _ := unstructured.NestedString(app.Object, "status", "health", "status")
		return health == "Degraded", nil
	})

	// Deleting the paused hub Application leaves the managed one, no longer the agent's.
	if err := hub.Delete(ctx, application(key.Name)); err != nil {
		t.Fatalf("deleting the hub Application: %v", err)
	}
	eventually(t, "the work gone", step, func(ctx context.Context) (bool, error) {
		err := hub.Get(ctx, workKey, &workv1.ManifestWork{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	throughout(t, 5*time.Second, func() string {
		got := application(key.Name)
		if err := spoke.Get(ctx, key, got); err != nil {
			return "the managed Application: " + err.Error()
		}
		if len(got.GetOwnerReferences()) > 0 {
			return "the managed Application is still owned: a later cleanup of the agent would delete it"
		}
		return ""
	})
	if err := spoke.Delete(ctx, application(key.Name)); err != nil { // pullApp's cleanup waits for it gone
		t.Fatal(err)
	}
}

// appliedAt is true when the agent applied the work's current generation.
func appliedAt(w *workv1.ManifestWork) bool {
	for _, c := range w.Status.Conditions {
		if c.Type == workv1.WorkApplied {
			return c.Status == "True" && c.ObservedGeneration == w.Generation
		}
	}
	return false
}
