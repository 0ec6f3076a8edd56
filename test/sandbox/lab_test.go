package sandbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/sandbox"
)

var ctx = context.Background()

func clients(t testing.TB) (hub client.Client, spokes map[string]client.Client) {
	t.Helper()
	hub, err := lab.Hub.Client()
	if err != nil {
		t.Fatal(err)
	}
	spokes = map[string]client.Client{}
	for _, c := range lab.Managed {
		if spokes[c.Name], err = c.Client(); err != nil {
			t.Fatal(err)
		}
	}
	return hub, spokes
}

func report(hub client.Client) (*v1alpha1.MulticlusterApplicationSetReport, map[string]v1alpha1.ClusterCondition) {
	r := &v1alpha1.MulticlusterApplicationSetReport{}
	byCluster := map[string]v1alpha1.ClusterCondition{}
	if err := hub.Get(ctx, types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: sandbox.ApplicationSetName}, r); err != nil {
		return r, byCluster
	}
	for _, cc := range r.Statuses.ClusterConditions {
		byCluster[cc.Cluster] = cc
	}
	return r, byCluster
}

func appKey(cluster string) types.NamespacedName {
	return types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: cluster + "-guestbook-app"}
}

func greeting(c client.Client) string {
	cm := &corev1.ConfigMap{}
	if c.Get(ctx, types.NamespacedName{Namespace: "guestbook", Name: "guestbook-ui"}, cm) != nil {
		return ""
	}
	return cm.Data["greeting"]
}

// 1. GitOpsCluster -> cluster secrets -> one Application per cluster -> ManifestWorks ->
// Applications on each cluster -> Argo CD syncs -> hub Applications and the report Synced, Healthy.
func TestDocumentsFlowConverges(t *testing.T) {
	requireLab(t)
	hub, spokes := clients(t)
	if _, err := lab.WaitForReport(ctx, &progress, 2*time.Minute); err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
	// The repository's HEAD: lab.Revision on a first run, later commits on a repeated one.
	head := headOf(t)
	eventually(t, "the report at the repository's HEAD for every cluster", 2*time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		_, byCluster := report(hub)
		for name := range spokes {
			if cc := byCluster[name]; cc.SyncRevision != head || cc.SyncStatus != "Synced" || cc.HealthStatus != "Healthy" {
				return false, fmt.Errorf("%s: %+v", name, cc)
			}
		}
		return true, nil
	})
	for name, spoke := range spokes {
		if got := greeting(spoke); got != "hello from the pull model" {
			t.Errorf("the sample app on %s: greeting %q", name, got)
		}
		hubApp := argocd.NewApplication()
		if err := hub.Get(ctx, appKey(name), hubApp); err != nil {
			t.Fatalf("hub Application of %s: %v", name, err)
		}
		health, _, _ := unstructured.NestedString(hubApp.Object, "status", "health", "status")
		sync, _, _ := unstructured.NestedString(hubApp.Object, "status", "sync", "status")
		if health != "Healthy" || sync != "Synced" {
			t.Errorf("hub Application of %s: %s/%s, want Healthy/Synced", name, health, sync)
		}
		onSpoke := argocd.NewApplication()
		if err := spoke.Get(ctx, appKey(name), onSpoke); err != nil {
			t.Fatalf("Application on %s: %v", name, err)
		}
		if server, _, _ := unstructured.NestedString(onSpoke.Object, "spec", "destination", "server"); server != argocd.LocalServer {
			t.Errorf("destination on %s = %q", name, server)
		}
	}
}

// 1b. The hub and the managed clusters may run different Argo CD versions (make test-argocd
// ARGOCD_VERSION=... MANAGED_ARGOCD_VERSION=...), as a fleet in the middle of an upgrade does. The
// lab's processes run the versions it says, and whatever the pair, the hub Application shows what
// the managed cluster's Argo CD reports and nothing it does not: each status field the hub shows
// is one the managed cluster's Application has, and sync and health are the cluster's.
func TestTheHubShowsWhatTheClusterReports(t *testing.T) {
	requireLab(t)
	hub, spokes := clients(t)
	procs, err := sandbox.Processes(labDir)
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]string{
		"hub-argocd-server": lab.HubArgoCDVersion, "hub-argocd-applicationset-controller": lab.HubArgoCDVersion,
		"cluster1-argocd-application-controller": lab.ManagedArgoCDVersion, "cluster1-argocd-repo-server": lab.ManagedArgoCDVersion,
	}
	for _, p := range procs {
		want, ok := runs[p.Name]
		if !ok {
			continue
		}
		delete(runs, p.Name)
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", p.PID))
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		out, err := exec.Command(exe, "version", "--client", "--short").CombinedOutput()
		if err != nil || !strings.HasPrefix(strings.TrimSpace(string(out)), "argocd: "+want+"+") {
			t.Errorf("%s runs %s: %q (%v), want Argo CD %s", p.Name, exe, out, err, want)
		}
	}
	if len(runs) > 0 {
		t.Errorf("not running: %v", slices.Sorted(maps.Keys(runs)))
	}
	t.Logf("Argo CD %s on the hub, %s on the managed clusters", lab.HubArgoCDVersion, lab.ManagedArgoCDVersion)

	for name, spoke := range spokes {
		eventually(t, "the hub Application of "+name+" shows only what "+name+" reports", 2*time.Minute, "hub-argocd-pull.log", func() (bool, error) {
			hubApp, onSpoke := argocd.NewApplication(), argocd.NewApplication()
			if err := hub.Get(ctx, appKey(name), hubApp); err != nil {
				return false, err
			}
			if err := spoke.Get(ctx, appKey(name), onSpoke); err != nil {
				return false, err
			}
			shown, reported := statusPaths(hubApp), statusPaths(onSpoke)
			if _, multi, _ := unstructured.NestedSlice(onSpoke.Object, "status", "sync", "revisions"); multi {
				// A multi-source Application's revisions, joined, are the hub's sync.revision: what
				// the report and RollingSync compare (docs/status.md).
				reported[".sync.revision"] = true
			}
			var invented []string
			for p := range shown {
				if !reported[p] {
					invented = append(invented, p)
				}
			}
			if len(invented) > 0 {
				slices.Sort(invented)
				return false, fmt.Errorf("the hub shows %v, which %s does not report", invented, name)
			}
			for _, field := range [][]string{{"sync", "status"}, {"health", "status"}} {
				h, _, _ := unstructured.NestedString(hubApp.Object, append([]string{"status"}, field...)...)
				c, _, _ := unstructured.NestedString(onSpoke.Object, append([]string{"status"}, field...)...)
				if h != c {
					return false, fmt.Errorf("status.%s: the hub shows %q, %s reports %q", strings.Join(field, "."), h, name, c)
				}
			}
			return true, nil
		})
	}
}

// statusPaths are the paths of the leaves of an Application's status, list items as [].
func statusPaths(app *unstructured.Unstructured) map[string]bool {
	paths := map[string]bool{}
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				walk(e, path+"."+k)
			}
		case []any:
			for _, e := range v {
				walk(e, path+"[]")
			}
		default:
			paths[path] = true
		}
	}
	walk(app.Object["status"], "")
	return paths
}

// 2. A push-model Application on the hub is untouched.
// The operator's commands against the lab, set up as the documents say: doctor finds nothing to
// fix on the hub or either managed cluster, and status shows the converged report.
func TestDoctorAndStatusOnTheLab(t *testing.T) {
	requireLab(t)
	bin := filepath.Join(labDir, "argocd-pull")
	// No -n: the namespace is the lab kubeconfig context's, as kubectl's is.
	args := []string{"doctor", "--kubeconfig", lab.Hub.Kubeconfig, "-o", "json",
		"--managed-argocd-namespace", sandbox.ArgoNamespace,
		"--managed-argocd-service-account", sandbox.ArgoControllerServiceAccount,
		"--work-agent-service-account", sandbox.WorkAgentNamespace + "/" + sandbox.WorkAgentServiceAccount}
	for _, c := range lab.Managed {
		args = append(args, "--managed-kubeconfig", c.Name+"="+c.Kubeconfig)
	}
	redis, err := lab.Addr("hub-redis")
	if err != nil {
		t.Fatal(err)
	}
	args = append(args, "--argocd-redis", redis)
	out, err := exec.Command(bin, args...).Output()
	var verdict struct {
		Checks []struct {
			ID, Subject, Status, Message string
		} `json:"checks"`
		Summary struct{ Pass, Warn, Fail, Skip int } `json:"summary"`
	}
	if jsonErr := json.Unmarshal(out, &verdict); jsonErr != nil {
		t.Fatalf("doctor -o json: %v (exit: %v)\n%s", jsonErr, err, out)
	}
	for _, c := range verdict.Checks {
		// The lab's GitOpsCluster sets no managedServiceAccountRef: cluster-access has nothing to
		// look at (TestTheHubReadsAClusterThroughOCMsChannel runs it with the channel on).
		if c.Status == "fail" || (c.Status == "skip" && c.ID != "cluster-access") {
			t.Errorf("doctor check %s (%s) on the lab: %s: %s", c.ID, c.Subject, c.Status, c.Message)
		}
		// The lab binds an exclusive set (the clusterset label, which OCM guards) in the Argo CD
		// namespace: no cluster joins it by a label of its own choosing.
		if c.ID == "cluster-set-labels" && c.Status != "pass" {
			t.Errorf("doctor check %s on the lab's binding: %s: %s", c.ID, c.Status, c.Message)
		}
	}
	if err != nil {
		t.Errorf("doctor exited with %v on a lab set up as the documents say", err)
	}
	seen := map[string]bool{}
	for _, c := range verdict.Checks {
		seen[c.ID] = true
	}
	for _, id := range []string{"applicationset-template", "placement-generator", "cluster-secrets", "managed-clusters", "cluster-set-labels", "argocd-redis",
		"managed-argocd-rbac", "managed-work-agent-rbac", "managed-app-namespace"} {
		if !seen[id] {
			t.Errorf("doctor did not run %s on the lab", id)
		}
	}

	table, err := exec.Command(bin, "status", sandbox.ApplicationSetName, "--kubeconfig", lab.Hub.Kubeconfig).CombinedOutput()
	if err != nil {
		t.Fatalf("status: %v\n%s", err, table)
	}
	for _, c := range lab.Managed {
		if head := headOf(t); !regexp.MustCompile(`(?m)^` + c.Name + `\s+Synced\s+Healthy\s+` + head[:7]).Match(table) {
			t.Errorf("status shows no Synced, Healthy row at %s for %s:\n%s", head[:7], c.Name, table)
		}
	}
	want := fmt.Sprintf("%d clusters: %d synced, %d healthy", len(lab.Managed), len(lab.Managed), len(lab.Managed))
	if !strings.Contains(string(table), want) {
		t.Errorf("status summary: want %q in\n%s", want, table)
	}
}

func TestPushModelApplicationIsUntouched(t *testing.T) {
	requireLab(t)
	hub, spokes := clients(t)
	app := argocd.NewApplication()
	app.SetName("push-model")
	app.SetNamespace(sandbox.ArgoNamespace)
	app.Object["spec"] = map[string]any{"project": "default",
		"source":      map[string]any{"repoURL": lab.RepoURL, "path": "guestbook", "targetRevision": "main"},
		"destination": map[string]any{"name": "cluster1", "namespace": "push"}}
	if err := hub.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hub.Delete(ctx, app) }()
	time.Sleep(5 * time.Second)
	got := argocd.NewApplication()
	if err := hub.Get(ctx, client.ObjectKeyFromObject(app), got); err != nil {
		t.Fatal(err)
	}
	if got.GetResourceVersion() != app.GetResourceVersion() {
		t.Errorf("the push-model Application was written to (resourceVersion %s -> %s)", app.GetResourceVersion(), got.GetResourceVersion())
	}
	for name, spoke := range spokes {
		if err := spoke.Get(ctx, client.ObjectKeyFromObject(app), argocd.NewApplication()); !apierrors.IsNotFound(err) {
			t.Errorf("the push-model Application reached %s: %v", name, err)
		}
	}
}

// 2b. A fleet at rest costs the hub nothing. The lab's managed Argo CDs reconcile every Application
// every 10 s (--app-resync) and rewrite its status.reconciledAt each time, as every managed Argo
// CD does every 3 minutes by default; none of that is written to the hub's ManifestWorks.
func TestAFleetAtRestWritesNothingToTheHub(t *testing.T) {
	requireLab(t)
	hub, spokes := clients(t)
	versions := map[string]string{}
	eventually(t, "the fleet at rest: Synced, Healthy, no request in flight", 2*time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		_, byCluster := report(hub)
		for name := range spokes {
			w, err := guestbookWork(hub, name)
			if err != nil {
				return false, err
			}
			// No request in flight: none on the hub Application, and none the work carries that the
			// hub has not cleared (a cleared one stays in an unchanged work: manifestwork.KeepCleared).
			hubApp := argocd.NewApplication()
			if err := hub.Get(ctx, appKey(name), hubApp); err != nil {
				return false, err
			}
			requests := manifestwork.HubOf(hubApp)
			carried := manifestwork.ParseDeliveries(w.Annotations[api.DeliveriesAnnotation]).Outstanding(requests)
			if requests.Operation != nil || requests.Refresh != "" || carried.Sync != nil {
				return false, fmt.Errorf("%s: a request in flight (the hub's .operation %v, refresh %q; the work carries %s)", name,
					requests.Operation, requests.Refresh, w.Annotations[api.DeliveriesAnnotation])
			}
			if cc := byCluster[name]; cc.SyncStatus != "Synced" || cc.HealthStatus != "Healthy" {
				return false, fmt.Errorf("%s: %+v", name, cc)
			}
			versions[name] = w.ResourceVersion
		}
		return true, nil
	})
	reconciledAt := func(name string) string {
		app := argocd.NewApplication()
		if err := spokes[name].Get(ctx, appKey(name), app); err != nil {
			t.Fatal(err)
		}
		at, _, _ := unstructured.NestedString(app.Object, "status", "reconciledAt")
		return at
	}
	seen := map[string]map[string]bool{}
	for name := range spokes {
		seen[name] = map[string]bool{reconciledAt(name): true}
	}
	// Until every managed Argo CD has reconciled twice more, no write to any work.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		done := true
		for name := range spokes {
			seen[name][reconciledAt(name)] = true
			done = done && len(seen[name]) >= 3
			w, err := guestbookWork(hub, name)
			if err != nil {
				t.Fatal(err)
			}
			if w.ResourceVersion != versions[name] {
				t.Fatalf("the work of %s was written while its Application was at rest (resourceVersion %s -> %s); its managed Argo CD reconciled at %v",
					name, versions[name], w.ResourceVersion, slices.Sorted(maps.Keys(seen[name])))
			}
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the managed Argo CDs did not reconcile twice within a minute (reconciledAt seen: %v)", seen)
		}
	}
}

// guestbookWork is the ManifestWork that carries the guestbook Application to cluster.
func guestbookWork(hub client.Client, cluster string) (*workv1.ManifestWork, error) {
	w := &workv1.ManifestWork{}
	key := appKey(cluster)
	err := hub.Get(ctx, types.NamespacedName{Namespace: cluster, Name: manifestwork.WorkName(key.Namespace, key.Name)}, w)
	return w, err
}

// 3. A commit to the Git repository reaches every cluster and the report's syncRevision.
func TestCommitReachesEveryCluster(t *testing.T) {
	requireLab(t)
	hub, spokes := clients(t)
	sha, err := lab.Commit("hello again")
	if err != nil {
		t.Fatal(err)
	}
	// The next tests (and a repeated run) expect the first greeting: commit it back and wait for it.
	t.Cleanup(func() {
		restored, err := lab.Commit("hello from the pull model")
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, "the first greeting back on every cluster", 2*time.Minute, "cluster1-argocd-application-controller.log", func() (bool, error) {
			_, byCluster := report(hub)
			for name := range spokes {
				if byCluster[name].SyncRevision != restored || greeting(spokes[name]) != "hello from the pull model" {
					return false, nil
				}
			}
			return true, nil
		})
	})
	eventually(t, "the new revision in the report for every cluster", 2*time.Minute, "cluster1-argocd-application-controller.log", func() (bool, error) {
		_, byCluster := report(hub)
		for name := range spokes {
			if cc := byCluster[name]; cc.SyncRevision != sha || cc.HealthStatus != "Healthy" || cc.SyncStatus != "Synced" {
				return false, nil
			}
		}
		return true, nil
	})
	for name, spoke := range spokes {
		if got := greeting(spoke); got != "hello again" {
			t.Errorf("the sample app on %s: greeting %q, want the new commit's", name, got)
		}
	}
}

// ranDelivery is the delivery ID of the last operation Argo CD ran on a managed Application, ""
// when it was not one the hub requested.
func ranDelivery(app *unstructured.Unstructured) string {
	info, _, _ := unstructured.NestedSlice(app.Object, "status", "operationState", "operation", "info")
	for _, i := range info {
		if m, ok := i.(map[string]any); ok && m["name"] == api.DeliveryInfoName {
			v, _ := m["value"].(string)
			return v
		}
	}
	return ""
}

// 4. A hard refresh and a manual sync requested on the hub reach the managed cluster, once.
func TestRefreshAndSyncFromTheHubReachTheClusterOnce(t *testing.T) {
	requireLab(t)
	hub, spokes := clients(t)
	key := appKey("cluster1")
	before := argocd.NewApplication()
	if err := spokes["cluster1"].Get(ctx, key, before); err != nil {
		t.Fatal(err)
	}
	// Which sync ran is told by the delivery ID argocd-pull puts in the operation's info, which
	// Argo CD copies into status.operationState; startedAt has a one-second granularity and an
	// automated sync may have started in the same second.
	ranBefore := ranDelivery(before)

	patch := []byte(`{"metadata":{"annotations":{"argocd.argoproj.io/refresh":"hard"}},"operation":{"initiatedBy":{"username":"admin"},"sync":{"revision":"main"}}}`)
	if err := hub.Patch(ctx, argocdApp(key), client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the hub clearing the requests once cluster1 acted on them", 90*time.Second, "hub-argocd-pull.log", func() (bool, error) {
		got := argocd.NewApplication()
		if err := hub.Get(ctx, key, got); err != nil {
			return false, err
		}
		_, op := got.Object["operation"]
		_, refresh := got.GetAnnotations()[argocd.RefreshAnnotation]
		return !op && !refresh, nil
	})
	after := argocd.NewApplication()
	if err := spokes["cluster1"].Get(ctx, key, after); err != nil {
		t.Fatal(err)
	}
	if ran := ranDelivery(after); ran == "" || ran == ranBefore {
		phase, _, _ := unstructured.NestedString(after.Object, "status", "operationState", "phase")
		t.Errorf("the requested sync did not run on cluster1 (last operation %s, delivery %q, before %q)", phase, ran, ranBefore)
	}
	for i := 0; i < 10; i++ { // and it is not applied again
		got := argocd.NewApplication()
		if err := spokes["cluster1"].Get(ctx, key, got); err != nil {
			t.Fatal(err)
		}
		if _, op := got.Object["operation"]; op {
			t.Fatalf("the operation is on cluster1 again after it ran")
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func argocdApp(key types.NamespacedName) *unstructured.Unstructured {
	app := argocd.NewApplication()
	app.SetNamespace(key.Namespace)
	app.SetName(key.Name)
	return app
}

// 5. A sync error on one cluster shows in the report's conditions for that cluster only, and in
// the fleet view (`argocd-pull dashboard` in headless Chromium): that cell turns failing without a
// reload, the state filter keeps that cluster only, the cell opens the error, and the recovery
// shows too. A screenshot is kept in tmp/artifacts ($ARTIFACTS).
func TestSyncErrorOnOneClusterOnly(t *testing.T) {
	requireLab(t)
	hub, spokes := clients(t)
	page := openFleetView(t)
	// cluster2 already holds an immutable ConfigMap of the name the next commit adds, with other
	// data: its Argo CD cannot apply it there. cluster1 has none.
	blocker := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "guestbook-extra", Namespace: "guestbook"},
		Immutable: ptr.To(true), Data: map[string]string{"a": "set by hand"}}
	// What Argo CD created in an earlier run of this test (no prune) would be in the way.
	_ = spokes["cluster2"].Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "guestbook-extra", Namespace: "guestbook"}})
	eventually(t, "no guestbook-extra on cluster2", 30*time.Second, "cluster2-apiserver.log", func() (bool, error) {
		return apierrors.IsNotFound(spokes["cluster2"].Get(ctx, client.ObjectKeyFromObject(blocker), &corev1.ConfigMap{})), nil
	})
	if err := spokes["cluster2"].Create(ctx, blocker); err != nil {
		t.Fatal(err)
	}
	// Whatever happens here, the next tests must not inherit the blocker; the UID precondition
	// spares the ConfigMap Argo CD creates under the same name once the blocker is gone.
	t.Cleanup(func() { _ = spokes["cluster2"].Delete(ctx, blocker, client.Preconditions{UID: ptr.To(blocker.UID)}) })
	// A new revision on every run: Argo CD does not retry an automated sync of a revision that failed.
	extra := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: guestbook-extra\ndata:\n  a: b-%d\n", time.Now().UnixNano())
	if _, err := lab.AddManifest("extra.yaml", extra); err != nil {
		t.Fatal(err)
	}
	// The fleet view shows it too: the hub's first knowledge of the error is the ManifestWork's
	// feedback; the page follows it (the time between the two is logged, bounded by the 100 ms
	// polls here, not asserted).
	var workSaw, pageSaw time.Time
	eventually(t, "a sync error for cluster2 on the hub's ManifestWork and in the fleet view", 2*time.Minute, "cluster2-argocd-application-controller.log", func() (bool, error) {
		now := time.Now()
		if workSaw.IsZero() && strings.Contains(feedbackValue(hub, "cluster2", appKey("cluster2"), manifestwork.FeedbackMessage), "immutable") {
			workSaw = now
		}
		if pageSaw.IsZero() && page.state("cluster2") == "failing" {
			pageSaw = now
		}
		return !workSaw.IsZero() && !pageSaw.IsZero(), fmt.Errorf("work saw it at %v, the page at %v; the page shows cluster2 %q", workSaw, pageSaw, page.state("cluster2"))
	})
	t.Logf("fleet view: cluster2's sync error drawn %v after the hub's ManifestWork carried it", pageSaw.Sub(workSaw).Round(100*time.Millisecond))
	// cluster1 syncs the same commit meanwhile (Progressing for a moment): it ends healthy.
	eventually(t, "the fleet view showing cluster1 healthy", 2*time.Minute, "cluster1-argocd-application-controller.log", func() (bool, error) {
		got := page.state("cluster1")
		return got == "healthy", fmt.Errorf("the fleet view shows cluster1 %q", got)
	})
	if _, err := page.eval(`(() => { const e = document.getElementById('f-state'); e.value = 'failing'; e.dispatchEvent(new Event('input')); })()`); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the fleet view filtered to failing clusters: cluster2 only", 10*time.Second, "", func() (bool, error) {
		rows, err := page.eval(`[...document.querySelectorAll('#rows .row .key')].map(k => k.textContent).join(',')`)
		return rows == "cluster2", fmt.Errorf("rows %v: %v", rows, err)
	})
	if _, err := page.eval(`document.querySelector('.cell[data-cluster="cluster2"]').click()`); err != nil {
		t.Fatal(err)
	}
	eventually(t, "cluster2's detail with the sync error", 10*time.Second, "", func() (bool, error) {
		text, err := page.eval(`document.getElementById('detail').hidden ? '' : document.getElementById('detail-body').textContent`)
		s, _ := text.(string)
		return strings.Contains(s, "SyncError") && strings.Contains(s, "immutable"), fmt.Errorf("detail %q: %v", s, err)
	})
	page.screenshot(t, "fleet-view-lab-sync-error.png")
	if _, err := page.eval(`(() => { const e = document.getElementById('f-state'); e.value = ''; e.dispatchEvent(new Event('input')); })()`); err != nil {
		t.Fatal(err)
	}
	_, byCluster := report(hub)
	if c1 := byCluster["cluster1"]; len(c1.Conditions) != 0 {
		t.Errorf("cluster1 carries conditions: %+v", c1.Conditions)
	}
	eventually(t, "a sync error for cluster2 in the report", 2*time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		_, byCluster := report(hub)
		for _, c := range byCluster["cluster2"].Conditions {
			if c.Type == "SyncError" && strings.Contains(c.Message, "immutable") {
				return true, nil
			}
		}
		return false, fmt.Errorf("cluster2 in the report: %+v", byCluster["cluster2"])
	})
	// Remove the blocker and ask for a sync from the hub: cluster2 recovers.
	if err := spokes["cluster2"].Delete(ctx, blocker); err != nil {
		t.Fatal(err)
	}
	patch := []byte(`{"operation":{"initiatedBy":{"username":"admin"},"sync":{"revision":"main"}}}`)
	if err := hub.Patch(ctx, argocdApp(appKey("cluster2")), client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "cluster2 recovering after the blocker is gone and a sync", 2*time.Minute, "cluster2-argocd-application-controller.log", func() (bool, error) {
		_, byCluster := report(hub)
		cc := byCluster["cluster2"]
		return cc.SyncStatus == "Synced" && cc.HealthStatus == "Healthy", nil
	})
	eventually(t, "the fleet view showing cluster2 recovered", 30*time.Second, "", func() (bool, error) {
		return page.state("cluster2") == "healthy", fmt.Errorf("cluster2 %q", page.state("cluster2"))
	})
}

// feedbackValue is a status feedback value of the hub's ManifestWork for app on cluster.
func feedbackValue(hub client.Client, cluster string, app types.NamespacedName, name string) string {
	works := &workv1.ManifestWorkList{}
	if hub.List(ctx, works, client.InNamespace(cluster), client.MatchingLabels{api.ManagedByLabel: api.ManagedByValue}) != nil {
		return ""
	}
	for _, w := range works.Items {
		if w.Annotations[api.HubApplicationNameAnnotation] != app.Name {
			continue
		}
		for _, m := range w.Status.ResourceStatus.Manifests {
			for _, v := range m.StatusFeedbacks.Values {
				if v.Name == name && v.Value.String != nil {
					return *v.Value.String
				}
			}
		}
	}
	return ""
}

// headOf is the lab repository's HEAD.
func headOf(t *testing.T) string {
	t.Helper()
	head, err := lab.Head()
	if err != nil {
		t.Fatal(err)
	}
	return head
}
