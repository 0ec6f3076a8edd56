package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/internal/argocd"
)

const step = 30 * time.Second

func application(name string) *unstructured.Unstructured {
	app := argocd.NewApplication()
	app.SetName(name)
	app.SetNamespace(argoNamespace)
	return app
}

// The documents' flow for one Application: hub -> ManifestWork -> managed cluster, status back,
// deletion cascading to the managed cluster.
func TestPullModelRoundTrip(t *testing.T) {
	requireLab(t)
	ctx := context.Background()
	hub, spoke := lab.hub.Client, lab.spoke.Client
	key := types.NamespacedName{Namespace: argoNamespace, Name: "guestbook-" + clusterName}

	app := application(key.Name)
	app.SetLabels(map[string]string{argocd.PullLabel: "true"})
	app.SetAnnotations(map[string]string{argocd.ClusterAnnotation: clusterName, argocd.SkipReconcileAnnotation: "true"})
	app.SetFinalizers([]string{argocd.ResourcesFinalizer})
	app.Object["spec"] = map[string]any{
		"project":     "default",
		"source":      map[string]any{"repoURL": "https://github.com/argoproj/argocd-example-apps", "path": "guestbook", "targetRevision": "HEAD"},
		"destination": map[string]any{"server": "https://cluster1-control-plane:6443", "namespace": "guestbook"},
		"syncPolicy":  map[string]any{"automated": map[string]any{"prune": true}},
	}
	if err := hub.Create(ctx, app); err != nil {
		t.Fatalf("creating the hub Application: %v", err)
	}

	// 1. The work agent creates the Application on the managed cluster, pointed at itself.
	onSpoke := application(key.Name)
	eventually(t, "the Application on the managed cluster", step, func(ctx context.Context) (bool, error) {
		return spoke.Get(ctx, key, onSpoke) == nil, nil
	})
	server, _, _ := unstructured.NestedString(onSpoke.Object, "spec", "destination", "server")
	if server != argocd.LocalServer {
		t.Errorf("destination server on the managed cluster = %q, want %q", server, argocd.LocalServer)
	}
	if _, ok := onSpoke.GetLabels()[argocd.PullLabel]; ok {
		t.Errorf("the pull label reached the managed cluster: %v", onSpoke.GetLabels())
	}
	if _, ok := onSpoke.GetAnnotations()[argocd.SkipReconcileAnnotation]; ok {
		t.Errorf("skip-reconcile reached the managed cluster, its Argo CD would ignore the Application")
	}

	// 2. Its Argo CD (this test) reports status; it arrives on the hub Application.
	eventually(t, "writing status on the managed Application", step, func(ctx context.Context) (bool, error) {
		if err := spoke.Get(ctx, key, onSpoke); err != nil {
			return false, err
		}
		onSpoke.Object["status"] = map[string]any{
			"health": map[string]any{"status": "Healthy"},
			"sync": map[string]any{"status": "Synced", "revision": "53e28ff20cc530b9ada2173fbbd64d48338583ba",
				"comparedTo": map[string]any{
					"source":      map[string]any{"repoURL": "https://github.com/argoproj/argocd-example-apps", "path": "guestbook", "targetRevision": "HEAD"},
					"destination": map[string]any{"server": argocd.LocalServer, "namespace": "guestbook"},
				}},
			"operationState": map[string]any{"operation": map[string]any{"sync": map[string]any{"revision": "53e28ff20cc530b9ada2173fbbd64d48338583ba"}},
				"phase": "Succeeded", "startedAt": "2026-11-21T10:00:00Z", "finishedAt": "2026-11-21T10:00:04Z", "message": "successfully synced (all tasks run)"},
			"resources": []any{map[string]any{"version": "v1", "kind": "Service", "namespace": "guestbook", "name": "guestbook-ui", "status": "Synced", "health": map[string]any{"status": "Healthy"}}},
		}
		err := spoke.Update(ctx, onSpoke)
		return err == nil, err
	})
	hubApp := application(key.Name)
	eventually(t, "Healthy and Synced on the hub Application", step, func(ctx context.Context) (bool, error) {
		if err := hub.Get(ctx, key, hubApp); err != nil {
			return false, err
		}
		health, _, _ := unstructured.NestedString(hubApp.Object, "status", "health", "status")
		sync, _, _ := unstructured.NestedString(hubApp.Object, "status", "sync", "status")
		return health == "Healthy" && sync == "Synced", nil
	})
	for path, want := range map[string]string{
		"sync.revision":            "53e28ff20cc530b9ada2173fbbd64d48338583ba",
		"operationState.phase":     "Succeeded",
		"operationState.startedAt": "2026-11-21T10:00:00Z",
		"operationState.message":   "successfully synced (all tasks run)",
	} {
		got, _, _ := unstructured.NestedString(hubApp.Object, append([]string{"status"}, strings.Split(path, ".")...)...)
		if got != want {
			t.Errorf("hub Application status.%s = %q, want %q", path, got, want)
		}
	}

	// 3. Deleting the hub Application removes it from the managed cluster, then from the hub.
	if err := hub.Delete(ctx, hubApp); err != nil {
		t.Fatalf("deleting the hub Application: %v", err)
	}
	eventually(t, "the Application gone from the managed cluster", step, func(ctx context.Context) (bool, error) {
		err := spoke.Get(ctx, key, application(key.Name))
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		// The managed Argo CD (this test) honours its resources finalizer.
		if err == nil {
			got := application(key.Name)
			if spoke.Get(ctx, key, got) == nil && !got.GetDeletionTimestamp().IsZero() && len(got.GetFinalizers()) > 0 {
				got.SetFinalizers(nil)
				return false, spoke.Update(ctx, got)
			}
		}
		return false, err
	})
	eventually(t, "the hub Application gone", step, func(ctx context.Context) (bool, error) {
		err := hub.Get(ctx, key, application(key.Name))
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

// A manual sync and a hard refresh requested on the hub reach the managed cluster and stay there
// until its Argo CD acted on them; then the hub clears its copy and does not send them again.
func TestManualSyncAndRefreshReachTheManagedClusterOnce(t *testing.T) {
	requireLab(t)
	ctx := context.Background()
	hub, spoke := lab.hub.Client, lab.spoke.Client
	key := types.NamespacedName{Namespace: argoNamespace, Name: "sync-once"}
	app := application(key.Name)
	app.SetLabels(map[string]string{argocd.PullLabel: "true"})
	app.SetAnnotations(map[string]string{argocd.ClusterAnnotation: clusterName})
	app.Object["spec"] = map[string]any{
		"project":     "default",
		"source":      map[string]any{"repoURL": "https://git.example/apps", "path": "guestbook", "targetRevision": "main"},
		"destination": map[string]any{"server": argocd.LocalServer, "namespace": "guestbook"},
	}
	if err := hub.Create(ctx, app); err != nil {
		t.Fatalf("creating the hub Application: %v", err)
	}
	t.Cleanup(func() { _ = hub.Delete(context.Background(), application(key.Name)) })
	eventually(t, "the Application on the managed cluster", step, func(ctx context.Context) (bool, error) {
		return spoke.Get(ctx, key, application(key.Name)) == nil, nil
	})

	eventually(t, "requesting a sync and a hard refresh on the hub", step, func(ctx context.Context) (bool, error) {
		got := application(key.Name)
		if err := hub.Get(ctx, key, got); err != nil {
			return false, err
		}
		got.Object["operation"] = map[string]any{"initiatedBy": map[string]any{"username": "admin"}, "sync": map[string]any{"revision": "main"}}
		a := got.GetAnnotations()
		a[argocd.RefreshAnnotation] = "hard"
		got.SetAnnotations(a)
		err := hub.Update(ctx, got)
		return err == nil, err
	})

	// The managed cluster receives both; its Argo CD (this test) acts and clears them.
	eventually(t, "the sync and refresh on the managed cluster", step, func(ctx context.Context) (bool, error) {
		got := application(key.Name)
		if err := spoke.Get(ctx, key, got); err != nil {
			return false, err
		}
		_, op := got.Object["operation"]
		return op && got.GetAnnotations()[argocd.RefreshAnnotation] == "hard", nil
	})
	// As Argo CD does: refresh (new reconciledAt, annotation removed), run the operation (new
	// operationState) and clear it.
	eventually(t, "the managed Argo CD acting on them", step, func(ctx context.Context) (bool, error) {
		got := application(key.Name)
		if err := spoke.Get(ctx, key, got); err != nil {
			return false, err
		}
		op := got.Object["operation"]
		delete(got.Object, "operation")
		a := got.GetAnnotations()
		delete(a, argocd.RefreshAnnotation)
		got.SetAnnotations(a)
		now := time.Now().UTC().Format(time.RFC3339)
		got.Object["status"] = map[string]any{
			"reconciledAt":   now,
			"health":         map[string]any{"status": "Healthy"},
			"sync":           map[string]any{"status": "Synced", "revision": "abc"},
			"operationState": map[string]any{"operation": op, "phase": "Succeeded", "startedAt": now, "finishedAt": now},
		}
		err := spoke.Update(ctx, got)
		return err == nil, err
	})
	eventually(t, "the hub clearing its copy", step, func(ctx context.Context) (bool, error) {
		got := application(key.Name)
		if err := hub.Get(ctx, key, got); err != nil {
			return false, err
		}
		_, op := got.Object["operation"]
		_, refresh := got.GetAnnotations()[argocd.RefreshAnnotation]
		return !op && !refresh, nil
	})
	// For several status-sync intervals of the agent, nothing brings them back.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		got := application(key.Name)
		if err := spoke.Get(ctx, key, got); err != nil {
			t.Fatalf("reading the managed Application: %v", err)
		}
		if _, op := got.Object["operation"]; op {
			t.Fatalf("the operation was applied to the managed cluster again; the work agent's log is %s", lab.agentLog)
		}
		if _, ok := got.GetAnnotations()[argocd.RefreshAnnotation]; ok {
			t.Fatalf("the refresh annotation was applied to the managed cluster again; the work agent's log is %s", lab.agentLog)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
