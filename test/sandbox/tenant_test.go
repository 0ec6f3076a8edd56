package sandbox_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/sandbox"
)

// tenantApp is a pull-model Application of the lab's tenant namespace for cluster1, deploying the
// repository's path into the tenant's namespace with automated sync.
func tenantApp(name, path string, mutate ...func(*unstructured.Unstructured)) *unstructured.Unstructured {
	app := argocd.NewApplication()
	app.SetNamespace(sandbox.TenantNamespace)
	app.SetName(name)
	app.SetLabels(map[string]string{api.PullLabel: "true"})
	app.SetAnnotations(map[string]string{api.ClusterAnnotation: "cluster1", argocd.SkipReconcileAnnotation: "true"})
	app.Object["spec"] = map[string]any{
		"project":     sandbox.TenantProject,
		"source":      map[string]any{"repoURL": lab.RepoURL, "path": path, "targetRevision": "main"},
		"destination": map[string]any{"server": argocd.LocalServer, "namespace": sandbox.TenantNamespace},
		"syncPolicy":  map[string]any{"automated": map[string]any{"prune": true}},
	}
	for _, m := range mutate {
		m(app)
	}
	return app
}

// propagationError is argocd-pull's condition message on a hub Application, "" when none.
func propagationError(hub client.Client, key types.NamespacedName) string {
	app := argocd.NewApplication()
	if hub.Get(ctx, key, app) != nil {
		return ""
	}
	return argocd.ConditionMessage(app, api.PropagationErrorCondition)
}

// A tenant namespace delivers for real: the tenant's Application lands in its own namespace on
// cluster1, where the managed Argo CD (configured for Applications in that namespace) reads it
// with the tenant's AppProject, and it is Synced and Healthy. The escapes of issue 22 (rows 1
// and 2) are refused on the hub and nothing reaches the cluster; revoking the tenant's binding
// freezes its Application there: a new Git commit is seen but not synced, until the binding is
// back.
func TestATenantDeliversOnlyWithinItsLane(t *testing.T) {
	requireLab(t)
	hub, spokes := clients(t)
	cluster1 := spokes["cluster1"]
	if _, err := lab.CommitFiles("tenant web", map[string]string{
		"tenant/web.yaml": configMap("team-web", nil, map[string]string{"version": "1"}),
	}); err != nil {
		t.Fatal(err)
	}
	create := func(app *unstructured.Unstructured) types.NamespacedName {
		t.Helper()
		key := client.ObjectKeyFromObject(app)
		if err := hub.Create(ctx, app); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = hub.Delete(ctx, argocdApp(key)) })
		return key
	}

	web := create(tenantApp("web", "tenant"))
	eventually(t, "the tenant's Application Synced and Healthy, its ConfigMap on cluster1", 2*time.Minute, "cluster1-argocd-application-controller.log", func() (bool, error) {
		sync, health, _ := hubState(hub, web)
		return sync == "Synced" && health == "Healthy" && configMapData(cluster1, sandbox.TenantNamespace, "team-web", "version") == "1",
			fmt.Errorf("hub reads %s/%s; condition %q", sync, health, propagationError(hub, web))
	})
	if err := cluster1.Get(ctx, web, argocd.NewApplication()); err != nil {
		t.Fatalf("the Application is not in the tenant's namespace on cluster1: %v", err)
	}

	// Row 1: into the managed Argo CD's own namespace, with the platform's project.
	escape := create(tenantApp("escape", "tenant", func(u *unstructured.Unstructured) {
		a := u.GetAnnotations()
		a[api.AppNamespaceAnnotation] = sandbox.ArgoNamespace
		u.SetAnnotations(a)
		u.Object["spec"].(map[string]any)["project"] = "default"
		u.Object["spec"].(map[string]any)["destination"].(map[string]any)["namespace"] = "kube-system"
	}))
	// Row 1 again: its own namespace, but a project that does not list it.
	borrow := create(tenantApp("borrow", "tenant", func(u *unstructured.Unstructured) {
		u.Object["spec"].(map[string]any)["project"] = "default"
	}))
	// Row 2: the platform delivers "shared" into the tenant's namespace; the tenant names one alike.
	platform := argocd.NewApplication()
	platform.SetNamespace(sandbox.ArgoNamespace)
	platform.SetName("shared")
	platform.SetLabels(map[string]string{api.PullLabel: "true"})
	platform.SetAnnotations(map[string]string{api.ClusterAnnotation: "cluster1", argocd.SkipReconcileAnnotation: "true",
		api.AppNamespaceAnnotation: sandbox.TenantNamespace})
	platform.Object["spec"] = map[string]any{
		"project":     sandbox.TenantProject,
		"source":      map[string]any{"repoURL": lab.RepoURL, "path": "tenant", "targetRevision": "main"},
		"destination": map[string]any{"server": argocd.LocalServer, "namespace": sandbox.TenantNamespace},
	}
	create(platform)
	shared := types.NamespacedName{Namespace: sandbox.TenantNamespace, Name: "shared"}
	eventually(t, "the platform's Application on cluster1", time.Minute, "cluster1-work-agent.log", func() (bool, error) {
		return cluster1.Get(ctx, shared, argocd.NewApplication()) == nil, nil
	})
	takeover := create(tenantApp("shared", "elsewhere"))

	// (The hub has no default AppProject unless an Argo CD server made one: either way refused.)
	for key, reason := range map[types.NamespacedName]string{escape: "ManagedNamespaceNotAllowed:", borrow: "AppProjectNot", takeover: "ManagedApplicationTaken:"} {
		eventually(t, key.Name+" refused with "+reason, time.Minute, "hub-argocd-pull.log", func() (bool, error) {
			msg := propagationError(hub, key)
			return strings.HasPrefix(msg, reason), fmt.Errorf("condition %q", msg)
		})
	}
	if err := cluster1.Get(ctx, types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: "escape"}, argocd.NewApplication()); !apierrors.IsNotFound(err) {
		t.Errorf("the escape reached the managed Argo CD's namespace (%v)", err)
	}
	if err := cluster1.Get(ctx, borrow, argocd.NewApplication()); !apierrors.IsNotFound(err) {
		t.Errorf("the borrowed project's Application reached cluster1 (%v)", err)
	}
	onSpoke := argocd.NewApplication()
	if err := cluster1.Get(ctx, shared, onSpoke); err != nil {
		t.Fatal(err)
	}
	if path, _, _ := unstructured.NestedString(onSpoke.Object, "spec", "source", "path"); path != "tenant" {
		t.Errorf("the platform's Application on cluster1 now has path %q: the tenant took it over", path)
	}

	// Row 4: the binding is revoked. The tenant's Application is frozen on cluster1: its Argo CD
	// sees the next commit (OutOfSync at it) but does not sync it.
	binding := &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: "gitops", Namespace: sandbox.TenantNamespace}}
	if err := hub.Delete(ctx, binding); err != nil {
		t.Fatal(err)
	}
	restore := func() error {
		err := hub.Create(ctx, &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: "gitops", Namespace: sandbox.TenantNamespace},
			Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "gitops"}})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}
	t.Cleanup(func() { _ = restore() })
	eventually(t, "the tenant's Application frozen on cluster1", time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		app := argocd.NewApplication()
		if err := cluster1.Get(ctx, web, app); err != nil {
			return false, err
		}
		_, automated, _ := unstructured.NestedMap(app.Object, "spec", "syncPolicy", "automated")
		return !automated && app.GetAnnotations()[api.FrozenAnnotation] == "ClusterNotBoundToNamespace", fmt.Errorf("condition %q", propagationError(hub, web))
	})
	sha, err := lab.CommitFiles("tenant web 2", map[string]string{"tenant/web.yaml": configMap("team-web", nil, map[string]string{"version": "2"})})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "cluster1's Argo CD sees the new commit", time.Minute, "cluster1-argocd-application-controller.log", func() (bool, error) {
		app := argocd.NewApplication()
		if err := cluster1.Get(ctx, web, app); err != nil {
			return false, err
		}
		sync, _, _ := unstructured.NestedString(app.Object, "status", "sync", "status")
		revision, _, _ := unstructured.NestedString(app.Object, "status", "sync", "revision")
		return sync == "OutOfSync" && revision == sha, fmt.Errorf("%s at %s", sync, revision)
	})
	// Not synced, over a window: an automated Argo CD syncs within seconds of seeing a commit.
	for until := time.Now().Add(15 * time.Second); time.Now().Before(until); time.Sleep(500 * time.Millisecond) {
		app := argocd.NewApplication()
		if err := cluster1.Get(ctx, web, app); err != nil {
			t.Fatal(err)
		}
		synced, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "syncResult", "revision")
		if v := configMapData(cluster1, sandbox.TenantNamespace, "team-web", "version"); v != "1" || synced == sha {
			t.Fatalf("a frozen Application synced a new commit: version %q, last sync at %s", v, synced)
		}
	}

	if err := restore(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new commit synced once the binding is back", 2*time.Minute, "cluster1-argocd-application-controller.log", func() (bool, error) {
		return configMapData(cluster1, sandbox.TenantNamespace, "team-web", "version") == "2", fmt.Errorf("condition %q", propagationError(hub, web))
	})
}
