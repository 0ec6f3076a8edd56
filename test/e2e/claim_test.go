package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/propagation"
)

// An Application made on the managed cluster before the hub delivers one of the same namespace
// and name (by hand, or by the cluster's own Argo CD), with the real work agent: the hub changes
// nothing of it, adds no owner, does not delete it with the hub Application, and says why on the
// hub Application. Once it is gone, the hub's is created by server-side apply, made the agent's
// (held): a field the hub then drops is dropped there (the lab found that an Application first
// created with a plain create keeps every field it was created with), and it is deleted with the
// hub Application.
func TestAnApplicationAlreadyOnTheManagedClusterIsLeftAlone(t *testing.T) {
	requireLab(t)
	ctx := context.Background()
	hub, spoke := lab.hub.Client, lab.spoke.Client
	key := types.NamespacedName{Namespace: argoNamespace, Name: "made-there"}

	theirs := application(key.Name)
	theirs.Object["spec"] = map[string]any{
		"project":     "default",
		"source":      map[string]any{"repoURL": "https://git.example/local", "path": "local", "targetRevision": "theirs"},
		"destination": map[string]any{"server": argocd.LocalServer, "namespace": "local"},
	}
	if err := spoke.Create(ctx, theirs); err != nil {
		t.Fatalf("creating the managed cluster's own Application: %v", err)
	}
	t.Cleanup(func() {
		_ = hub.Delete(context.Background(), application(key.Name))
		_ = spoke.Delete(context.Background(), application(key.Name))
	})

	hubApp := func(revision string) {
		t.Helper()
		app := application(key.Name)
		app.SetLabels(map[string]string{api.PullLabel: "true"})
		app.SetAnnotations(map[string]string{api.ClusterAnnotation: clusterName})
		app.SetFinalizers([]string{argocd.ResourcesFinalizer})
		app.Object["spec"] = map[string]any{
			"project":     "default",
			"source":      map[string]any{"repoURL": "https://git.example/apps", "path": "guestbook", "targetRevision": revision},
			"destination": map[string]any{"server": argocd.LocalServer, "namespace": "guestbook"},
			"syncPolicy":  map[string]any{"automated": map[string]any{"prune": true}},
		}
		if err := hub.Create(ctx, app); err != nil {
			t.Fatalf("creating the hub Application: %v", err)
		}
	}
	untouched := func() string {
		got := application(key.Name)
		if err := spoke.Get(ctx, key, got); err != nil {
			return "the managed cluster's own Application: " + err.Error()
		}
		rev, _, _ := unstructured.NestedString(got.Object, "spec", "source", "targetRevision")
		switch {
		case rev != "theirs":
			return "the managed cluster's own Application was overwritten: targetRevision " + rev
		case len(got.GetOwnerReferences()) > 0:
			return "the managed cluster's own Application got owners: it would be deleted with the hub's"
		case got.GetAnnotations()[api.HubApplicationAnnotation] != "":
			return "the managed cluster's own Application got the hub's annotation"
		}
		return ""
	}

	hubApp("main")
	eventually(t, "the hub Application refused: another Application holds the name", step, func(ctx context.Context) (bool, error) {
		app := application(key.Name)
		if err := hub.Get(ctx, key, app); err != nil {
			return false, err
		}
		return strings.Contains(conditionMessage(app), propagation.ReasonManagedAppExists+": cluster "+clusterName), nil
	})
	throughout(t, 5*time.Second, untouched)

	// Deleting the hub Application deletes its work, and nothing on the managed cluster.
	if err := hub.Delete(ctx, application(key.Name)); err != nil {
		t.Fatalf("deleting the hub Application: %v", err)
	}
	eventually(t, "the hub Application gone", step, func(ctx context.Context) (bool, error) {
		err := hub.Get(ctx, key, application(key.Name))
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	throughout(t, 5*time.Second, untouched)

	// Once the managed cluster's own is gone, the hub's is delivered, and is the agent's.
	if err := spoke.Delete(ctx, application(key.Name)); err != nil {
		t.Fatalf("deleting the managed cluster's own Application: %v", err)
	}
	hubApp("main")
	eventually(t, "the hub's Application on the managed cluster, owned by the work agent", step, func(ctx context.Context) (bool, error) {
		got := application(key.Name)
		if err := spoke.Get(ctx, key, got); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return got.GetAnnotations()[api.HubApplicationAnnotation] == key.String() && len(got.GetOwnerReferences()) == 1, nil
	})
	eventually(t, "the work held", step, func(ctx context.Context) (bool, error) {
		work := &workv1.ManifestWork{}
		err := hub.Get(ctx, types.NamespacedName{Namespace: clusterName, Name: manifestwork.WorkName(key.Namespace, key.Name)}, work)
		return err == nil && manifestwork.Held(work), client.IgnoreNotFound(err)
	})
	eventually(t, "automated sync dropped on the hub", step, func(ctx context.Context) (bool, error) {
		app := application(key.Name)
		if err := hub.Get(ctx, key, app); err != nil {
			return false, err
		}
		unstructured.RemoveNestedField(app.Object, "spec", "syncPolicy")
		err := hub.Update(ctx, app)
		return err == nil, client.IgnoreNotFound(err)
	})
	eventually(t, "automated sync dropped on the managed cluster", step, func(ctx context.Context) (bool, error) {
		got := application(key.Name)
		if err := spoke.Get(ctx, key, got); err != nil {
			return false, err
		}
		_, automated, _ := unstructured.NestedMap(got.Object, "spec", "syncPolicy", "automated")
		return !automated, nil
	})
	if err := hub.Delete(ctx, application(key.Name)); err != nil {
		t.Fatalf("deleting the hub Application: %v", err)
	}
	eventually(t, "the hub's Application gone from the managed cluster", step, func(ctx context.Context) (bool, error) {
		got := application(key.Name)
		err := spoke.Get(ctx, key, got)
		if err == nil && !got.GetDeletionTimestamp().IsZero() && len(got.GetFinalizers()) > 0 {
			got.SetFinalizers(nil) // the managed Argo CD (this test) honours its resources finalizer
			return false, spoke.Update(ctx, got)
		}
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

// conditionMessage is the message of argocd-pull's condition on a hub Application.
func conditionMessage(app *unstructured.Unstructured) string {
	conditions, _, _ := unstructured.NestedSlice(app.Object, "status", "conditions")
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok && m["type"] == "PullPropagationError" {
			msg, _ := m["message"].(string)
			return msg
		}
	}
	return ""
}
