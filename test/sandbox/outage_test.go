package sandbox_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/sandbox"
)

// outageApp is a pull-model Application of the lab's Argo CD namespace for cluster, without
// automated sync: its managed cluster's Argo CD compares it and deploys nothing, so that the test
// is about what the hub delivers.
func outageApp(name, cluster string) *unstructured.Unstructured {
	app := argocd.NewApplication()
	app.SetNamespace(sandbox.ArgoNamespace)
	app.SetName(name)
	app.SetLabels(map[string]string{api.PullLabel: "true"})
	app.SetAnnotations(map[string]string{api.ClusterAnnotation: cluster, argocd.SkipReconcileAnnotation: "true"})
	app.Object["spec"] = map[string]any{
		"project":     "default",
		"source":      map[string]any{"repoURL": lab.RepoURL, "path": "guestbook", "targetRevision": "main"},
		"destination": map[string]any{"server": argocd.LocalServer, "namespace": "guestbook"},
	}
	return app
}

// retry runs op until it succeeds (the hub apiserver may be down), for at most 3 minutes, or until
// stop is closed (nil: never).
func retry(t *testing.T, stop <-chan struct{}, what string, op func() error) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		err := op()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: %v", what, err)
			return
		}
		select {
		case <-stop:
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func probe(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// churn is a set of pull-model Applications of the lab's Argo CD namespace, all named with one
// prefix, that a test creates, re-targets, changes, unlabels and deletes while something fails.
type churn struct {
	prefix string
	hub    client.Client
	spokes map[string]client.Client
	// before is the ApplicationSet's report before the churn, per cluster.
	before map[string]v1alpha1.ClusterCondition
}

func (c *churn) name(i int) string { return fmt.Sprintf("%s-%d", c.prefix, i) }

// start creates the first four Applications (the third with the resources finalizer), two on
// each cluster, and waits for them on their clusters.
func startChurn(t *testing.T, prefix string) *churn {
	t.Helper()
	hub, spokes := clients(t)
	c := &churn{prefix: prefix, hub: hub, spokes: spokes}
	t.Cleanup(func() {
		for i := range 6 {
			_ = hub.Delete(ctx, outageApp(c.name(i), ""))
		}
	})
	for i := range 4 {
		app := outageApp(c.name(i), lab.Managed[i%2].Name)
		if i == 2 {
			app.SetFinalizers([]string{argocd.ResourcesFinalizer})
		}
		if err := hub.Create(ctx, app); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the first Applications on their clusters", time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		for i := range 4 {
			app := argocd.NewApplication()
			if err := spokes[lab.Managed[i%2].Name].Get(ctx, types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: c.name(i)}, app); err != nil {
				return false, err
			}
		}
		return true, nil
	})
	// The report to come back to is one at rest: an operation another test started (a sync with
	// waves lasts a while) would end during the churn and read as a difference, and so would a
	// cluster that is stale now or has not reported yet (a fresh lab) and reports later (after the
	// hub apiserver's outage, each ManagedCluster is unavailable until its agent renews its lease).
	eventually(t, "the ApplicationSet's report at rest (no operation running, every cluster reported, none stale)", 3*time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		r, byCluster := report(hub)
		for cluster, cc := range byCluster {
			if cc.SyncStatus == "" || cc.SyncStatus == "Unknown" {
				return false, fmt.Errorf("%s: sync status %q", cluster, cc.SyncStatus)
			}
			if cc.OperationStatePhase == "Running" {
				return false, fmt.Errorf("%s: operation %s since %s", cluster, cc.OperationStatePhase, cc.OperationStateStartedAt)
			}
			for _, cond := range cc.Conditions {
				if cond.Type == "StaleStatus" {
					return false, fmt.Errorf("%s: %s", cluster, cond.Message)
				}
			}
		}
		c.before = byCluster
		return len(byCluster) > 0, fmt.Errorf("summary %+v", r.Statuses.Summary)
	})
	return c
}

// start makes the changes in a goroutine, each retried until the hub takes it, pausing after the
// first two; wait returns when all are made. The test's end stops it.
func (c *churn) start(t *testing.T, pause time.Duration) (wait func()) {
	var done sync.WaitGroup
	stop := make(chan struct{})
	t.Cleanup(func() {
		close(stop)
		done.Wait()
	})
	done.Go(func() { c.run(t, stop, pause) })
	return done.Wait
}

func (c *churn) run(t *testing.T, stop <-chan struct{}, pause time.Duration) {
	update := func(i int, mutate func(*unstructured.Unstructured)) func() error {
		return func() error {
			app := argocd.NewApplication()
			if err := c.hub.Get(ctx, types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: c.name(i)}, app); err != nil {
				return err
			}
			mutate(app)
			return c.hub.Update(ctx, app)
		}
	}
	deleteApp := func(i int) func() error {
		return func() error { return client.IgnoreNotFound(c.hub.Delete(ctx, outageApp(c.name(i), ""))) }
	}
	steps := []struct {
		what string
		op   func() error
	}{
		{"create 4", func() error { return client.IgnoreAlreadyExists(c.hub.Create(ctx, outageApp(c.name(4), "cluster1"))) }},
		{"re-target 0", update(0, func(u *unstructured.Unstructured) {
			a := u.GetAnnotations()
			a[api.ClusterAnnotation] = "cluster2"
			u.SetAnnotations(a)
		})},
		{"delete 1 (no finalizer)", deleteApp(1)},
		{"delete 2 (resources finalizer)", deleteApp(2)},
		{"unlabel 3", update(3, func(u *unstructured.Unstructured) { u.SetLabels(nil) })},
		{"create 5", func() error { return client.IgnoreAlreadyExists(c.hub.Create(ctx, outageApp(c.name(5), "cluster2"))) }},
		{"change 4's path", update(4, func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "guestbook-v2", "spec", "source", "path")
		})},
	}
	for i, s := range steps {
		retry(t, stop, c.prefix+": "+s.what, s.op)
		if i == 1 {
			time.Sleep(pause)
		}
	}
}

// converged waits until every pull-model Application of the churn has exactly one work, in its
// cluster's namespace, no work is left without its Application, each managed cluster holds exactly
// the Applications the hub wants there, at the last change, the Application deleted with the
// resources finalizer is gone (its finalizer done, not forced), and the ApplicationSet's report
// reads as before.
func (c *churn) converged(t *testing.T) {
	t.Helper()
	want := map[string]string{c.name(0): "cluster2", c.name(4): "cluster1", c.name(5): "cluster2"} // app -> cluster
	// After a hub apiserver restart OCM's work agents take about a minute to watch the hub again
	// (their reflectors back off): the waits allow for it.
	eventually(t, "one work per pull-model Application, in its cluster's namespace, and none orphaned", 3*time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		works := &workv1.ManifestWorkList{}
		if err := c.hub.List(ctx, works, client.MatchingLabels{api.ManagedByLabel: api.ManagedByValue}); err != nil {
			return false, err
		}
		got := map[string][]string{}
		for _, w := range works.Items {
			app := w.Annotations[api.HubApplicationNameAnnotation]
			if strings.HasPrefix(app, c.prefix+"-") {
				got[app] = append(got[app], w.Namespace)
			}
		}
		for app, clusters := range got {
			if _, ok := want[app]; !ok {
				return false, fmt.Errorf("works of %s, which is gone or not pull-model: %v", app, clusters)
			}
		}
		for app, cluster := range want {
			if !slices.Equal(got[app], []string{cluster}) {
				return false, fmt.Errorf("works of %s in %v, want [%s]", app, got[app], cluster)
			}
		}
		return true, nil
	})
	eventually(t, "each managed cluster holding exactly the Applications the hub wants there", 3*time.Minute, "cluster1-work-agent.log", func() (bool, error) {
		for cluster, spoke := range c.spokes {
			apps := argocd.NewApplicationList()
			if err := spoke.List(ctx, apps, client.InNamespace(sandbox.ArgoNamespace)); err != nil {
				return false, err
			}
			var got, wanted []string
			for _, a := range apps.Items {
				if strings.HasPrefix(a.GetName(), c.prefix+"-") {
					got = append(got, a.GetName())
				}
			}
			for app, at := range want {
				if at == cluster {
					wanted = append(wanted, app)
				}
			}
			slices.Sort(got)
			slices.Sort(wanted)
			if !slices.Equal(got, wanted) {
				return false, fmt.Errorf("%s holds %v, the hub wants %v", cluster, got, wanted)
			}
		}
		return true, nil
	})
	eventually(t, "the last change on the managed cluster", 2*time.Minute, "cluster1-work-agent.log", func() (bool, error) {
		app := argocd.NewApplication()
		err := c.spokes["cluster1"].Get(ctx, types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: c.name(4)}, app)
		path, _, _ := unstructured.NestedString(app.Object, "spec", "source", "path")
		return path == "guestbook-v2", fmt.Errorf("path %q: %v", path, err)
	})
	eventually(t, "the Application deleted with the resources finalizer gone", time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		err := c.hub.Get(ctx, types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: c.name(2)}, argocd.NewApplication())
		return apierrors.IsNotFound(err), err
	})
	eventually(t, "the ApplicationSet's report as before", 2*time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		r, after := report(c.hub)
		for cluster, cc := range c.before {
			if after[cluster].SyncStatus != cc.SyncStatus || after[cluster].HealthStatus != cc.HealthStatus || after[cluster].SyncRevision != cc.SyncRevision {
				return false, fmt.Errorf("%s: %+v, before %+v", cluster, after[cluster], cc)
			}
		}
		return r.Statuses.Summary.Clusters == "2", fmt.Errorf("summary %+v", r.Statuses.Summary)
	})
}

// noPanic fails the test when the controller's log holds a panic.
func noPanic(t *testing.T) {
	t.Helper()
	path := filepath.Join(labDir, "logs", "hub-argocd-pull.log")
	log, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(log), "panic") {
		t.Errorf("the controller's log holds a panic; read %s", path)
	}
}

// The hub apiserver stops for 30 s and starts again on the same etcd while pull-model
// Applications are created, re-targeted, changed, unlabelled and deleted (with and without the
// resources finalizer). The controller neither exits nor panics, its /readyz says the hub is down
// while it is (and /healthz that the process is fine), and afterwards the churn converged (see
// churn.converged). It ends once OCM's hub reads every cluster available again.
func TestTheHubApiserverGoesAwayAndComesBack(t *testing.T) {
	requireLab(t)
	controller, err := lab.Process("hub-argocd-pull")
	if err != nil {
		t.Fatal(err)
	}
	probes, err := lab.Addr("hub-argocd-pull-probes")
	if err != nil {
		t.Fatal(err)
	}
	readyz := "http://" + probes + "/readyz"
	c := startChurn(t, "outage")
	hub, _ := clients(t)
	// Runs last, after the apiserver is started again (cleanups run in reverse).
	t.Cleanup(func() { clustersAvailableAgain(t, hub) })

	changesMade := c.start(t, 3*time.Second)
	time.Sleep(2 * time.Second)
	if err := lab.Stop("hub-apiserver"); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	t.Cleanup(func() { _ = lab.Start(ctx, "hub-apiserver") })
	eventually(t, "the controller's /readyz saying the hub is down", 20*time.Second, "hub-argocd-pull.log", func() (bool, error) {
		code, body := probe(readyz + "?verbose")
		return code == http.StatusInternalServerError && strings.Contains(body, "[-]hub-apiserver failed"), fmt.Errorf("/readyz %d: %s", code, body)
	})
	if code, _ := probe("http://" + probes + "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz %d while the hub is down: the controller is alive and must not be restarted for it", code)
	}
	time.Sleep(time.Until(stopped.Add(30 * time.Second)))
	if err := lab.Start(ctx, "hub-apiserver"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the controller's /readyz ok again", time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		code, body := probe(readyz)
		return code == http.StatusOK, fmt.Errorf("/readyz %d: %s", code, body)
	})
	changesMade()
	c.converged(t)

	now, err := lab.Process("hub-argocd-pull")
	if err != nil {
		t.Fatal(err)
	}
	if now.PID != controller.PID || !now.Running() {
		t.Errorf("the controller exited during the outage (pid %d, now %d, running %v)", controller.PID, now.PID, now.Running())
	}
	noPanic(t)
}

// The controller is killed (SIGKILL: no cleanup, no graceful stop) four times while the same
// churn runs, and started again each time as its Deployment would: afterwards the churn converged
// (see churn.converged), nothing duplicated, orphaned or stuck.
func TestTheControllerKilledDuringChurn(t *testing.T) {
	requireLab(t)
	c := startChurn(t, "crash")
	changesMade := c.start(t, 2*time.Second)
	for range 4 {
		time.Sleep(1500 * time.Millisecond)
		p, err := lab.Process("hub-argocd-pull")
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		for p.Running() {
			time.Sleep(50 * time.Millisecond)
		}
		if err := lab.Start(ctx, "argocd-pull"); err != nil {
			t.Fatal(err)
		}
	}
	changesMade()
	c.converged(t)
	noPanic(t)
}

// Deleting a hub Application that has Argo CD's resources finalizer waits for the managed cluster:
// while a resource its Application deployed there is held by a finalizer, the managed Application,
// its ManifestWork and the hub Application stay; once the resource is gone, all go, and nothing was
// force-removed on the way.
func TestCascadeDeleteWaitsForTheManagedCluster(t *testing.T) {
	requireLab(t)
	hub, spokes := clients(t)
	spoke := spokes["cluster1"]
	app, held := cascadingApp(t, hub, "cascade", "held")
	eventually(t, "the ConfigMap deployed on cluster1", 2*time.Minute, "cluster1-argocd-application-controller.log", func() (bool, error) {
		return configMapData(spoke, held.Namespace, held.Name, "k") == "v", nil
	})
	const hold = "argocd-pull.test/hold"
	setHold := func(on bool) error {
		cm := &corev1.ConfigMap{}
		if err := spoke.Get(ctx, held, cm); err != nil {
			return client.IgnoreNotFound(err)
		}
		if on {
			cm.Finalizers = append(cm.Finalizers, hold)
		} else {
			cm.Finalizers = slices.DeleteFunc(cm.Finalizers, func(f string) bool { return f == hold })
		}
		return spoke.Update(ctx, cm)
	}
	retry(t, nil, "holding the ConfigMap", func() error { return setHold(true) })
	t.Cleanup(func() { retry(t, nil, "releasing the ConfigMap", func() error { return setHold(false) }) })

	if err := hub.Delete(ctx, app); err != nil {
		t.Fatal(err)
	}
	hubKey := types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: "cascade"}
	eventually(t, "the ConfigMap being deleted on cluster1 by its Argo CD", 2*time.Minute, "cluster1-argocd-application-controller.log", func() (bool, error) {
		cm := &corev1.ConfigMap{}
		err := spoke.Get(ctx, held, cm)
		return err == nil && cm.DeletionTimestamp != nil, err
	})
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		hubApp, managedApp := argocd.NewApplication(), argocd.NewApplication()
		if err := hub.Get(ctx, hubKey, hubApp); err != nil {
			t.Fatalf("the hub Application went while the managed cluster still held a resource: %v", err)
		}
		w, err := workOf(hub, "cluster1", hubKey.Name)
		if err != nil || w == nil {
			t.Fatalf("the ManifestWork went while the managed cluster still held a resource (%v)", err)
		}
		if err := spoke.Get(ctx, hubKey, managedApp); err != nil {
			t.Fatalf("the managed Application went while one of its resources is held: %v", err)
		}
	}

	retry(t, nil, "releasing the ConfigMap", func() error { return setHold(false) })
	eventually(t, "the ConfigMap, the managed Application, the work and the hub Application gone", 2*time.Minute, "hub-argocd-pull.log",
		cascadeGone(hub, spoke, "cluster1", hubKey, held))
}

// The hub reads the managed Application's operation through the agent's status feedback, a read
// now and then: it may read Running a moment before the operation ends. Deleting the hub
// Application then writes a request to terminate, which lands on the finished operation (phase
// Terminating beside its finishedAt, no .operation). Argo CD acts on a phase only with an
// .operation beside it, so that phase stays: the deletion goes on at once, it does not wait out
// the grace (manifestwork.FinalGrace) for an answer that never comes.
func TestCascadeDeleteAfterTheOperationEndedUnseen(t *testing.T) {
	requireLab(t)
	hub, spokes := clients(t)
	spoke := spokes["cluster1"]
	app, ended := cascadingApp(t, hub, "ended", "ended")
	key := client.ObjectKeyFromObject(app)
	eventually(t, "the automated sync finished on cluster1", 2*time.Minute, "cluster1-argocd-application-controller.log", func() (bool, error) {
		managed := argocd.NewApplication()
		if err := spoke.Get(ctx, key, managed); err != nil {
			return false, err
		}
		phase, _, _ := unstructured.NestedString(managed.Object, "status", "operationState", "phase")
		finishedAt, _, _ := unstructured.NestedString(managed.Object, "status", "operationState", "finishedAt")
		return phase == "Succeeded" && finishedAt != "" && configMapData(spoke, ended.Namespace, ended.Name, "k") == "v", fmt.Errorf("phase %q", phase)
	})
	// What the hub read mid-operation, made to stay: the phase Running again over the finished
	// operation state, with no .operation (Argo CD leaves it, as it leaves the Terminating below).
	running := client.RawPatch(types.MergePatchType, []byte(`{"status":{"operationState":{"phase":"Running"}}}`))
	managed := argocd.NewApplication()
	managed.SetNamespace(key.Namespace)
	managed.SetName(key.Name)
	if err := spoke.Patch(ctx, managed, running); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the hub reading the operation Running", time.Minute, "cluster1-work-agent.log", func() (bool, error) {
		return feedbackValue(hub, "cluster1", key, manifestwork.FeedbackPhase) == "Running", nil
	})

	if err := hub.Delete(ctx, app); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the request to terminate on cluster1's Application", time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		managed := argocd.NewApplication()
		err := spoke.Get(ctx, key, managed)
		phase, _, _ := unstructured.NestedString(managed.Object, "status", "operationState", "phase")
		return phase == manifestwork.PhaseTerminating || managed.GetDeletionTimestamp() != nil || apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	eventually(t, "the ConfigMap, the managed Application, the work and the hub Application gone, before the grace", manifestwork.FinalGrace-30*time.Second,
		"hub-argocd-pull.log", cascadeGone(hub, spoke, "cluster1", key, ended))
}

// cascadingApp creates the hub Application name for cluster1, with Argo CD's resources finalizer
// and an automated sync, of the lab repository's path, where it commits one ConfigMap (named as
// the path, in the guestbook namespace) first.
func cascadingApp(t *testing.T, hub client.Client, name, path string) (*unstructured.Unstructured, types.NamespacedName) {
	t.Helper()
	if _, err := lab.CommitFiles("a ConfigMap for "+name, map[string]string{path + "/" + path + ".yaml": configMap(path, nil, map[string]string{"k": "v"})}); err != nil {
		t.Fatal(err)
	}
	app := outageApp(name, "cluster1")
	_ = unstructured.SetNestedField(app.Object, path, "spec", "source", "path")
	_ = unstructured.SetNestedField(app.Object, map[string]any{"automated": map[string]any{"prune": true}}, "spec", "syncPolicy")
	app.SetFinalizers([]string{argocd.ResourcesFinalizer})
	if err := hub.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	return app, types.NamespacedName{Namespace: "guestbook", Name: path}
}

// cascadeGone is true once a cascading deletion of the hub Application app on cluster is done:
// the resource it deployed there, the managed Application, the work and the hub Application gone.
func cascadeGone(hub, spoke client.Client, cluster string, app, deployed types.NamespacedName) func() (bool, error) {
	return func() (bool, error) {
		if err := spoke.Get(ctx, deployed, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("ConfigMap: %v", err)
		}
		if err := spoke.Get(ctx, app, argocd.NewApplication()); !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("managed Application: %v", err)
		}
		if w, err := workOf(hub, cluster, app.Name); w != nil || err != nil {
			return false, fmt.Errorf("work still there (%v)", err)
		}
		err := hub.Get(ctx, app, argocd.NewApplication())
		return apierrors.IsNotFound(err), fmt.Errorf("hub Application: %v", err)
	}
}

// workOf is the work on cluster of the hub Application name, nil when there is none.
func workOf(hub client.Client, cluster, name string) (*workv1.ManifestWork, error) {
	works := &workv1.ManifestWorkList{}
	if err := hub.List(ctx, works, client.InNamespace(cluster), client.MatchingLabels{api.ManagedByLabel: api.ManagedByValue}); err != nil {
		return nil, err
	}
	for i, w := range works.Items {
		if w.Annotations[api.HubApplicationNameAnnotation] == name {
			return &works.Items[i], nil
		}
	}
	return nil, nil
}
