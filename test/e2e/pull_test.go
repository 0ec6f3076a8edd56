package e2e

import (
	"context"
	"encoding/json"
	"fmt"
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
	app.SetLabels(map[string]string{api.PullLabel: "true"})
	app.SetAnnotations(map[string]string{api.ClusterAnnotation: clusterName, argocd.SkipReconcileAnnotation: "true"})
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
	if _, ok := onSpoke.GetLabels()[api.PullLabel]; ok {
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

// managedArgoCD stands in for the managed cluster's Argo CD on one Application, as Argo CD v3
// handles requests: an operation is copied into status.operationState (Running) and stays in
// .operation until it finishes, when Argo CD clears .operation in the write that records the
// result; a refresh removes the refresh annotation.
type managedArgoCD struct {
	t   *testing.T
	key types.NamespacedName
}

// update reads the managed Application, changes it and writes it, retrying on conflicts with the
// work agent.
func (a managedArgoCD) update(what string, change func(app *unstructured.Unstructured) bool) {
	a.t.Helper()
	eventually(a.t, what, step, func(ctx context.Context) (bool, error) {
		got := application(a.key.Name)
		if err := lab.spoke.Client.Get(ctx, a.key, got); err != nil {
			return false, err
		}
		if !change(got) {
			return false, nil
		}
		err := lab.spoke.Client.Update(ctx, got)
		return err == nil, err
	})
}

// start waits for a requested operation other than the one last started, and starts it.
func (a managedArgoCD) start() {
	a.t.Helper()
	a.update("an operation requested on the managed cluster", func(app *unstructured.Unstructured) bool {
		op, ok := app.Object["operation"].(map[string]any)
		if !ok {
			return false
		}
		if phase, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "phase"); phase == "Running" {
			return false
		}
		app.Object["status"] = map[string]any{"operationState": map[string]any{
			"operation": op, "phase": "Running", "startedAt": time.Now().UTC().Format(time.RFC3339)}}
		return true
	})
}

// finish ends the running operation: Succeeded, and .operation cleared; Argo CD compares the
// Application again right after (reconciledAt).
func (a managedArgoCD) finish() { a.t.Helper(); a.finishCompared(true) }

// finishCompared ends the running operation, with the comparison after it or not yet.
func (a managedArgoCD) finishCompared(compared bool) {
	a.t.Helper()
	a.update("finishing the operation", func(app *unstructured.Unstructured) bool {
		state, _, _ := unstructured.NestedMap(app.Object, "status", "operationState")
		if state["phase"] != "Running" {
			a.t.Fatalf("no operation is running on the managed cluster: %v", state)
		}
		now := time.Now().UTC().Format(time.RFC3339)
		state["phase"] = "Succeeded"
		state["finishedAt"] = now
		state["message"] = "successfully synced (all tasks run)"
		status := map[string]any{"operationState": state}
		if compared {
			status["reconciledAt"] = now
			status["sync"] = map[string]any{"status": "Synced"}
		} else {
			status["sync"] = map[string]any{"status": "OutOfSync"}
			status["reconciledAt"] = time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
		}
		app.Object["status"] = status
		delete(app.Object, "operation")
		return true
	})
}

// refresh waits for a refresh request and performs it.
func (a managedArgoCD) refresh() {
	a.t.Helper()
	a.update("a refresh requested on the managed cluster", func(app *unstructured.Unstructured) bool {
		annotations := app.GetAnnotations()
		if _, ok := annotations[argocd.RefreshAnnotation]; !ok {
			return false
		}
		delete(annotations, argocd.RefreshAnnotation)
		app.SetAnnotations(annotations)
		return true
	})
}

// compare records a comparison of the Application by Argo CD (reconciledAt now).
func (a managedArgoCD) compare() {
	a.t.Helper()
	a.update("comparing the Application", func(app *unstructured.Unstructured) bool {
		_ = unstructured.SetNestedField(app.Object, time.Now().UTC().Format(time.RFC3339), "status", "reconciledAt")
		_ = unstructured.SetNestedField(app.Object, "Synced", "status", "sync", "status")
		return true
	})
}

// startedAt is status.operationState.startedAt on the managed cluster, and its delivery ID.
func (a managedArgoCD) started() (string, string) {
	got := application(a.key.Name)
	if err := lab.spoke.Client.Get(context.Background(), a.key, got); err != nil {
		a.t.Fatalf("reading the managed Application: %v", err)
	}
	startedAt, _, _ := unstructured.NestedString(got.Object, "status", "operationState", "startedAt")
	op, _, _ := unstructured.NestedMap(got.Object, "status", "operationState", "operation")
	return startedAt, manifestwork.DeliveryID(op)
}

func hubRequests(ctx context.Context, key types.NamespacedName) (sync, refresh bool, err error) {
	got := application(key.Name)
	if err := lab.hub.Client.Get(ctx, key, got); err != nil {
		return false, false, err
	}
	_, sync = got.Object["operation"]
	_, refresh = got.GetAnnotations()[argocd.RefreshAnnotation]
	return sync, refresh, nil
}

func requestOnHub(t *testing.T, key types.NamespacedName, sync, refresh bool) {
	t.Helper()
	eventually(t, "requesting on the hub", step, func(ctx context.Context) (bool, error) {
		got := application(key.Name)
		if err := lab.hub.Client.Get(ctx, key, got); err != nil {
			return false, err
		}
		if sync {
			// As argocd app sync writes it: the same request every time.
			got.Object["operation"] = map[string]any{"initiatedBy": map[string]any{"username": "admin"}, "sync": map[string]any{"revision": "main"}}
		}
		if refresh {
			a := got.GetAnnotations()
			a[argocd.RefreshAnnotation] = "hard"
			got.SetAnnotations(a)
		}
		err := lab.hub.Client.Update(ctx, got)
		return err == nil, err
	})
}

// commitOnHub sets the hub Application's targetRevision, as a commit to its ApplicationSet's
// template does.
func commitOnHub(t *testing.T, key types.NamespacedName, revision string) {
	t.Helper()
	eventually(t, "a commit on the hub", step, func(ctx context.Context) (bool, error) {
		got := application(key.Name)
		if err := lab.hub.Client.Get(ctx, key, got); err != nil {
			return false, err
		}
		if err := unstructured.SetNestedField(got.Object, revision, "spec", "source", "targetRevision"); err != nil {
			return false, err
		}
		err := lab.hub.Client.Update(ctx, got)
		return err == nil, err
	})
}

func waitHubCleared(t *testing.T, key types.NamespacedName) {
	t.Helper()
	defer func() {
		if t.Failed() {
			dumpDelivery(t, key)
		}
	}()
	eventually(t, "the hub clearing the requests", step, func(ctx context.Context) (bool, error) {
		sync, refresh, err := hubRequests(ctx, key)
		return !sync && !refresh, err
	})
}

// pullApp creates a pull-model Application on the hub (changed by mutate) and waits for it on the
// managed cluster.
func pullApp(t *testing.T, name string, mutate ...func(*unstructured.Unstructured)) (types.NamespacedName, managedArgoCD) {
	t.Helper()
	key := types.NamespacedName{Namespace: argoNamespace, Name: name}
	app := application(key.Name)
	app.SetLabels(map[string]string{api.PullLabel: "true"})
	app.SetAnnotations(map[string]string{api.ClusterAnnotation: clusterName})
	app.Object["spec"] = map[string]any{
		"project":     "default",
		"source":      map[string]any{"repoURL": "https://git.example/apps", "path": "guestbook", "targetRevision": "main"},
		"destination": map[string]any{"server": argocd.LocalServer, "namespace": "guestbook"},
	}
	for _, m := range mutate {
		m(app)
	}
	if err := lab.hub.Client.Create(context.Background(), app); err != nil {
		t.Fatalf("creating the hub Application: %v", err)
	}
	// Gone from both sides before the next test (or a repeated run) uses the name again: a managed
	// Application left over would answer for the new one.
	t.Cleanup(func() {
		_ = lab.hub.Client.Delete(context.Background(), application(key.Name))
		eventually(t, "the Application gone from the managed cluster", step, func(ctx context.Context) (bool, error) {
			return apierrors.IsNotFound(lab.spoke.Client.Get(ctx, key, application(key.Name))), nil
		})
	})
	eventually(t, "the Application on the managed cluster", step, func(ctx context.Context) (bool, error) {
		return lab.spoke.Client.Get(ctx, key, application(key.Name)) == nil, nil
	})
	return key, managedArgoCD{t: t, key: key}
}

// A sync that takes time stays on the managed cluster until its Argo CD finished it; the same sync
// requested twice runs twice; a refresh likewise; each is then cleared from the hub, and nothing
// brings it back, not even a commit before the hub cleared it.
func TestEverySyncAndRefreshRunsOnceOnTheManagedCluster(t *testing.T) {
	requireLab(t)
	key, argo := pullApp(t, "sync-once")

	// 1. A sync and a refresh together. The sync runs for a while (sync waves): through several
	// status-sync intervals of the agent, neither the hub nor the work withdraws it.
	requestOnHub(t, key, true, true)
	argo.refresh()
	argo.start()
	started1, id1 := argo.started()
	throughout(t, 4*time.Second, func() string {
		if _, ok := managedApp(t, key).Object["operation"]; !ok {
			return "the running operation was removed from the managed cluster; the work agent's log is " + lab.agentLog
		}
		if sync, _, err := hubRequests(context.Background(), key); err != nil || !sync {
			return fmt.Sprintf("the hub cleared the sync before the managed cluster finished it (err %v)", err)
		}
		return ""
	})
	argo.finish()
	waitHubCleared(t, key)

	// 2. The same sync at once: it runs again (a new delivery), and is cleared again, but only
	// once Argo CD compared the Application after it; meanwhile nothing is sent again.
	requestOnHub(t, key, true, false)
	argo.start()
	started2, id2 := argo.started()
	if id2 == id1 || id2 == "" {
		t.Fatalf("the second sync carries delivery %q, the first %q: want a new one", id2, id1)
	}
	argo.finishCompared(false)
	throughout(t, 3*time.Second, func() string {
		if _, op := managedApp(t, key).Object["operation"]; op {
			return "the finished operation was sent to the managed cluster again before it was compared"
		}
		if sync, _, err := hubRequests(context.Background(), key); err != nil || !sync {
			return fmt.Sprintf("the hub cleared the sync before the managed cluster compared after it (err %v)", err)
		}
		return ""
	})
	// A commit meanwhile (the ApplicationSet controller writes it into the hub Application): the
	// work agent applies the changed manifest, and one still carrying the finished operation would
	// have Argo CD run it again.
	commitOnHub(t, key, "v2")
	eventually(t, "the commit on the managed cluster", step, func(ctx context.Context) (bool, error) {
		revision, _, _ := unstructured.NestedString(managedApp(t, key).Object, "spec", "source", "targetRevision")
		return revision == "v2", nil
	})
	throughout(t, 2*time.Second, func() string {
		if _, op := managedApp(t, key).Object["operation"]; op {
			return "the finished operation was applied to the managed cluster again with the commit; the work agent's log is " + lab.agentLog
		}
		return ""
	})
	argo.compare()
	waitHubCleared(t, key)
	t.Logf("operations started at %s and %s", started1, started2)

	// 3. The same refresh twice.
	for i := 0; i < 2; i++ {
		requestOnHub(t, key, false, true)
		argo.refresh()
		waitHubCleared(t, key)
	}

	// Nothing is applied again afterwards.
	throughout(t, 4*time.Second, func() string {
		got := managedApp(t, key)
		if _, op := got.Object["operation"]; op {
			return "the operation was applied to the managed cluster again; the work agent's log is " + lab.agentLog
		}
		if _, ok := got.GetAnnotations()[argocd.RefreshAnnotation]; ok {
			return "the refresh annotation was applied to the managed cluster again; the work agent's log is " + lab.agentLog
		}
		return ""
	})
	if _, id := argo.started(); id != id2 {
		t.Fatalf("the last operation on the managed cluster is delivery %q, want %q", id, id2)
	}
}

// A request made while the controller is down is delivered once it is back, and one it was
// delivering when it stopped is finished and cleared after the restart.
func TestRequestsSurviveAControllerRestart(t *testing.T) {
	requireLab(t)
	key, argo := pullApp(t, "sync-restart")

	lab.controller.Stop()
	requestOnHub(t, key, true, true)
	if err := startController(); err != nil {
		t.Fatalf("starting the controller again: %v", err)
	}
	argo.refresh()
	argo.start()
	_, id1 := argo.started()

	// Stopped while the managed cluster runs the operation; it finishes meanwhile.
	lab.controller.Stop()
	argo.finish()
	if err := startController(); err != nil {
		t.Fatalf("starting the controller again: %v", err)
	}
	waitHubCleared(t, key)

	// The same request again after the restart: a new delivery.
	requestOnHub(t, key, true, false)
	argo.start()
	if _, id2 := argo.started(); id2 == id1 {
		t.Fatalf("the request after the restart reused delivery %q", id1)
	}
	argo.finish()
	waitHubCleared(t, key)
}

// dumpDelivery logs the hub Application, its work and the managed Application, for a failed test.
func dumpDelivery(t *testing.T, key types.NamespacedName) {
	ctx := context.Background()
	hubApp, spokeApp := application(key.Name), application(key.Name)
	_ = lab.hub.Client.Get(ctx, key, hubApp)
	_ = lab.spoke.Client.Get(ctx, key, spokeApp)
	works := &workv1.ManifestWorkList{}
	_ = lab.hub.Client.List(ctx, works, client.InNamespace(clusterName))
	for _, o := range []any{hubApp.Object, spokeApp.Object, works.Items} {
		raw, _ := json.MarshalIndent(o, "", "  ")
		t.Logf("%s", raw)
	}
}

// throughout checks, for d, every 200 ms, that check finds nothing wrong (""), and fails the test
// with what it finds.
func throughout(t *testing.T, d time.Duration, check func() string) {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if msg := check(); msg != "" {
			t.Fatal(msg)
		}
	}
}

// managedApp reads the Application key on the managed cluster.
func managedApp(t *testing.T, key types.NamespacedName) *unstructured.Unstructured {
	t.Helper()
	got := application(key.Name)
	if err := lab.spoke.Client.Get(context.Background(), key, got); err != nil {
		t.Fatalf("reading the managed Application: %v", err)
	}
	return got
}
