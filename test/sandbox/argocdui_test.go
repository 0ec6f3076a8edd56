package sandbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/sandbox"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

// argoUI is Argo CD's web UI, served by the hub's API server, in headless Chromium. It keeps a
// screenshot of each page it visited; a failed test writes them to testenv.Artifacts and prints
// their paths. Error toasts are recorded as the UI shows them (a MutationObserver installed in
// every page), and a page visit fails the test on any.
type argoUI struct {
	t     *testing.T
	ctx   context.Context
	shots []uiShot
	// expected is the error the current page was shown to give (expectErrorToast): it may say it
	// again, each time it reloads what it cannot load, until the next visit leaves it.
	expected string
}

type uiShot struct {
	name string
	png  []byte
}

// recordToasts keeps the text of every error toast the UI shows in window.__argocdPullToasts.
const recordToasts = `window.__argocdPullToasts = [];
new MutationObserver(() => document.querySelectorAll('.Toastify__toast--error').forEach(e => {
	if (!e.dataset.argocdPullSeen) { e.dataset.argocdPullSeen = '1'; window.__argocdPullToasts.push(e.innerText); }
})).observe(document, {childList: true, subtree: true});`

// openArgoUI opens the hub's Argo CD UI and logs in through its login form as admin.
func openArgoUI(t *testing.T) *argoUI {
	t.Helper()
	if lab.ArgoCD.NoWebUI != "" {
		t.Fatalf("the hub's Argo CD API server serves no web UI: %s", lab.ArgoCD.NoWebUI)
	}
	ui := &argoUI{t: t, ctx: testenv.Browser(t, ctx)}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ui.shot("at-failure")
		dir := testenv.Artifacts(t)
		for i, s := range ui.shots {
			path := filepath.Join(dir, fmt.Sprintf("argocd-ui-%02d-%s.png", i, s.name))
			if err := os.WriteFile(path, s.png, 0o644); err != nil {
				t.Error(err)
				continue
			}
			t.Logf("screenshot: %s", path)
		}
	})
	if _, err := chromedp.Call(ui.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: recordToasts}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ui.ctx,
		chromedp.Navigate("http://"+lab.ArgoCD.Addr+"/login"),
		chromedp.WaitVisible(chromedp.CSS(`input[name=username]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name=username]`), "admin"),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), lab.ArgoCD.Password),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)),
	); err != nil {
		t.Fatalf("logging in through the UI's form: %v", err)
	}
	ui.waitFor("the applications list after the login", time.Minute, `location.pathname === '/applications' && !!document.querySelector('.applications-list__entry, .applications-list')`)
	ui.shot("logged-in")
	return ui
}

// visit opens path (the UI's own routes) as a person follows a link to it, once the page shown
// before raised no error toast.
func (ui *argoUI) visit(name, path string) {
	ui.t.Helper()
	ui.noErrorToasts()
	ui.expected = ""
	if err := chromedp.Do(ui.ctx, chromedp.Navigate("http://"+lab.ArgoCD.Addr+path)); err != nil {
		ui.t.Fatalf("opening %s: %v", path, err)
	}
	ui.waitFor(name+" drawn", time.Minute, `!!document.querySelector('.application-details, .applications-list')`)
	ui.shot(name)
}

// eval evaluates expr in the page.
func (ui *argoUI) eval(expr string) (any, error) {
	return chromedp.Run(ui.ctx, chromedp.Evaluate[any](expr))
}

// waitFor polls expr until it is true.
func (ui *argoUI) waitFor(what string, timeout time.Duration, expr string) {
	ui.t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	var last any
	var err error
	for time.Now().Before(deadline) {
		if last, err = ui.eval(expr); err == nil && last == true {
			if took := time.Since(start); took >= 5*time.Second {
				ui.t.Logf("the UI: %s: %s", what, took.Round(100*time.Millisecond)) // as eventually logs
			}
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	ui.t.Fatalf("the UI: %s: not within %s (last %v, %v)", what, timeout, last, err)
}

// waitText polls the text of the elements matching selector until it contains each of want, and
// returns it.
func (ui *argoUI) waitText(what, selector string, timeout time.Duration, want ...string) string {
	ui.t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	var text string
	for time.Now().Before(deadline) {
		// The editors' text (Monaco) spaces with no-break spaces: read as plain spaces.
		v, _ := ui.eval(fmt.Sprintf(`[...document.querySelectorAll(%q)].map(e => e.innerText).join('\n').replace(/\u00a0/g, ' ')`, selector))
		text, _ = v.(string)
		missing := false
		for _, w := range want {
			if !strings.Contains(text, w) {
				missing = true
			}
		}
		if !missing {
			if took := time.Since(start); took >= 5*time.Second {
				ui.t.Logf("the UI: %s: %s", what, took.Round(100*time.Millisecond))
			}
			ui.shot(what)
			return text
		}
		time.Sleep(500 * time.Millisecond)
	}
	ui.t.Fatalf("the UI: %s: %s does not show %q within %s; it shows:\n%s", what, selector, want, timeout, text)
	return ""
}

// click clicks the first element matching selector whose text is label ("" for any).
func (ui *argoUI) click(what, selector, label string) {
	ui.t.Helper()
	expr := fmt.Sprintf(`(() => { const e = [...document.querySelectorAll(%q)].find(e => %q === '' || e.innerText.trim().toUpperCase() === %q.toUpperCase()); if (!e) return false; e.click(); return true; })()`, selector, label, label)
	ui.waitFor("clicking "+what, 30*time.Second, expr)
}

// shot takes a screenshot, kept under name (see argoUI).
func (ui *argoUI) shot(name string) {
	start := time.Now()
	defer func() {
		if took := time.Since(start); took >= time.Second {
			ui.t.Logf("the UI: screenshot %s: %s", name, took.Round(100*time.Millisecond))
		}
	}()
	png, err := chromedp.Run(ui.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		ui.t.Logf("screenshot %s: %v", name, err)
		return
	}
	ui.shots = append(ui.shots, uiShot{name: name, png: png})
}

// noErrorToasts fails the test on any error toast the current page raised, but for the one it
// was shown to give (expected).
func (ui *argoUI) noErrorToasts() {
	ui.t.Helper()
	v, err := ui.eval(`window.__argocdPullToasts || []`)
	if err != nil {
		return // no page yet
	}
	var unexpected []string
	all, _ := v.([]any)
	for _, toast := range all {
		if s, _ := toast.(string); ui.expected == "" || !strings.Contains(s, ui.expected) {
			unexpected = append(unexpected, s)
		}
	}
	if len(unexpected) > 0 {
		ui.shot("error-toast")
		ui.t.Errorf("the UI showed error toasts: %q", unexpected)
	}
	_, _ = ui.eval(`window.__argocdPullToasts = []`)
}

// expectErrorToast waits for an error toast containing text, then until the page raises no new
// toast for 5 s, fails on any toast that does not contain text, and forgets them: what the UI says
// where the hub cannot answer. The page may say it again until the next visit: it reloads what it
// cannot load each time the Application changes (a refresh it asked for, delivered), and CI saw
// that toast come after 5 s of quiet.
func (ui *argoUI) expectErrorToast(text string) {
	ui.t.Helper()
	ui.waitFor(fmt.Sprintf("an error toast saying %q", text), time.Minute, fmt.Sprintf(`(window.__argocdPullToasts || []).some(t => t.includes(%q))`, text))
	var toasts []any
	for deadline, seen := time.Now().Add(time.Minute), -1; time.Now().Before(deadline); time.Sleep(5 * time.Second) {
		v, _ := ui.eval(`window.__argocdPullToasts || []`)
		if toasts, _ = v.([]any); len(toasts) == seen {
			break
		}
		seen = len(toasts)
	}
	for _, toast := range toasts {
		if s, _ := toast.(string); !strings.Contains(s, text) {
			ui.t.Errorf("the UI showed an error toast %q, want only %q", s, text)
		}
	}
	_, _ = ui.eval(`window.__argocdPullToasts = []`)
	ui.expected = text
}

// statesShown is a JavaScript expression: "health/sync" as the page's status icons show them
// (their titles; "" for one not shown), by the title of each element matching item.
func statesShown(item, title string) string {
	return fmt.Sprintf(`Object.fromEntries([...document.querySelectorAll(%q)].map(e => {
	const h = e.querySelector('[qe-id=utils-health-status-title]')?.getAttribute('title') ?? '';
	const s = e.querySelector('[qe-id=utils-sync-status-title]')?.getAttribute('title') ?? '';
	return [e.querySelector(%q)?.innerText.trim() ?? '', h + '/' + s];
}))`, item, title)
}

var (
	// tileStates is what the applications list shows of each Application, by namespace/name.
	tileStates = statesShown(".applications-list__entry", ".applications-list__title")
	// treeNodes is what an Application's tree shows of each resource, by name.
	treeNodes = statesShown(".application-resource-tree__node", ".application-resource-tree__node-title")
)

// uiApp is a manual pull-model Application for cluster1 of the lab repository's path, delivered
// into namespace, with Argo CD's resources finalizer (a cascade delete); sources makes it
// multi-source, in the documents' form.
func uiApp(name, path, namespace string, multiSource bool) *unstructured.Unstructured {
	app := argocd.NewApplication()
	app.SetNamespace(sandbox.ArgoNamespace)
	app.SetName(name)
	app.SetLabels(map[string]string{api.PullLabel: "true"})
	app.SetAnnotations(map[string]string{api.ClusterAnnotation: "cluster1", argocd.SkipReconcileAnnotation: "true"})
	app.SetFinalizers([]string{argocd.ResourcesFinalizer})
	source := map[string]any{"repoURL": lab.RepoURL, "path": path, "targetRevision": "main"}
	app.Object["spec"] = map[string]any{
		"project":     "default",
		"destination": map[string]any{"server": argocd.LocalServer, "namespace": namespace},
		"syncPolicy":  map[string]any{"syncOptions": []any{"CreateNamespace=true"}},
	}
	if multiSource {
		app.Object["spec"].(map[string]any)["sources"] = []any{source}
	} else {
		app.Object["spec"].(map[string]any)["source"] = source
	}
	return app
}

// Argo CD's web UI on the hub, used as a person uses it in Chromium, on the documents'
// multi-source Applications (their ApplicationSet, unchanged) and on a single-source Application
// with two sync waves and a PreSync hook: the list, the tree, the history, SYNC, ROLLBACK,
// TERMINATE and DELETE, each run on the managed cluster; no page raises an error toast.
func TestArgoCDsWebUIOnPullModelApplications(t *testing.T) {
	requireLab(t)
	hub, spokes := clients(t)
	cluster1 := spokes["cluster1"]

	// The second Application: two waves and a hook, single source, synced by hand.
	first, err := lab.CommitFiles("ui: two waves and a hook", map[string]string{
		"uiwaves/first.yaml":  configMap("first", map[string]string{"argocd.argoproj.io/sync-wave": "0"}, map[string]string{"wave": "0", "version": "1"}),
		"uiwaves/second.yaml": configMap("second", map[string]string{"argocd.argoproj.io/sync-wave": "5"}, map[string]string{"wave": "5"}),
		"uiwaves/hook.yaml": configMap("presync-hook", map[string]string{"argocd.argoproj.io/hook": "PreSync",
			"argocd.argoproj.io/hook-delete-policy": "HookSucceeded"}, map[string]string{"ran": "yes"}),
		"uistuck/greeting.yaml": configMap("stuck-greeting", nil, map[string]string{"greeting": "never synced"}),
		"uistuck/hook.yaml":     stuckHook,
	})
	if err != nil {
		t.Fatal(err)
	}
	apps := map[string]*unstructured.Unstructured{
		"waves": uiApp("ui-waves", "uiwaves", "ui-waves", false),
		"multi": uiApp("ui-multi", "uiwaves", "ui-multi", true),
		"stuck": uiApp("ui-stuck", "uistuck", "ui-stuck", false),
	}
	for _, app := range apps {
		if err := hub.Create(ctx, app); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, app := range apps {
			_ = hub.Delete(ctx, app)
			for _, ns := range []string{app.GetName()} {
				_ = cluster1.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
			}
		}
	})
	for _, app := range apps {
		key := client.ObjectKeyFromObject(app)
		eventually(t, key.Name+" on cluster1, compared (OutOfSync: never synced)", 90*time.Second, "hub-argocd-pull.log", func() (bool, error) {
			sync, _, _ := hubState(hub, key)
			return sync == argocd.SyncOutOfSync, nil
		})
	}
	// The documents' Applications as their clusters report them (run first, the lab may have
	// just started).
	for _, cluster := range []string{"cluster1", "cluster2"} {
		eventually(t, appKey(cluster).Name+" Synced and Healthy", 3*time.Minute, "hub-argocd-pull.log", func() (bool, error) {
			sync, health, _ := hubState(hub, appKey(cluster))
			return sync == argocd.SyncSynced && health == "Healthy", fmt.Errorf("%s/%s", health, sync)
		})
	}
	ui := openArgoUI(t)

	// The list: every pull-model Application, with the health and sync status its cluster reports.
	ui.visit("list", "/applications")
	want := map[string]string{}
	for _, key := range []types.NamespacedName{appKey("cluster1"), appKey("cluster2"), client.ObjectKeyFromObject(apps["waves"]), client.ObjectKeyFromObject(apps["multi"])} {
		sync, health, _ := hubState(hub, key)
		want[key.Namespace+"/"+key.Name] = health + "/" + sync
	}
	ui.waitFor(fmt.Sprintf("the list showing %v", want), time.Minute, fmt.Sprintf(`(() => { const got = %s; const want = %s; return Object.entries(want).every(([k, v]) => got[k] === v); })()`, tileStates, jsonOf(t, want)))
	ui.shot("list")

	// The tree of the documents' Application on cluster1: each resource its cluster reports, with
	// its health and sync status.
	docs := appKey("cluster1")
	ui.visit("tree", "/applications/"+docs.Namespace+"/"+docs.Name)
	docsApp := argocd.NewApplication()
	if err := hub.Get(ctx, docs, docsApp); err != nil {
		t.Fatal(err)
	}
	resources, _, _ := unstructured.NestedSlice(docsApp.Object, "status", "resources")
	wantNodes := map[string]string{docs.Name: "Healthy/Synced"}
	for _, r := range resources {
		m := r.(map[string]any)
		health, _, _ := unstructured.NestedString(m, "health", "status")
		wantNodes[m["name"].(string)] = health + "/" + m["status"].(string)
	}
	ui.waitFor(fmt.Sprintf("the tree showing %v", wantNodes), time.Minute, fmt.Sprintf(`(() => { const got = %s; const want = %s; return Object.entries(want).every(([k, v]) => got[k] === v); })()`, treeNodes, jsonOf(t, wantNodes)))
	ui.shot("tree")

	// A page view costs the managed cluster nothing: Argo CD's API server reads the tree from its
	// cache, where argocd-pull writes it (internal/resourcetree), and asks for no refresh. (With no
	// tree, each view asked cluster1 for one: about one a view, measured before the tree.)
	const views = 3
	counted := refreshesDelivered(cluster1, docs)
	for i := range views {
		ui.visit(fmt.Sprintf("view-%d", i+1), "/applications/"+docs.Namespace+"/"+docs.Name)
		ui.waitFor("the tree drawn", time.Minute, fmt.Sprintf(`!!%s[%q]`, treeNodes, docs.Name))
		time.Sleep(5 * time.Second) // a refresh a view asked for reaches the cluster in this time
	}
	refreshes := counted()
	t.Logf("%d views of an Application's page delivered %d refreshes to its managed cluster", views, refreshes)
	if refreshes != 0 {
		t.Errorf("%d views of the page delivered %d refreshes to its managed cluster, want none", views, refreshes)
	}

	// A resource's panel, opened from its node, loads Argo CD's managed resources (its live and
	// desired manifests), which the hub does not have and argocd-pull does not invent
	// (docs/argocd-clients.md, "The resource tree"): Argo CD says so in the panel and in a toast,
	// after asking cluster1 for a refresh.
	res0 := resources[0].(map[string]any)
	group, _ := res0["group"].(string)
	nodeKey := strings.Join([]string{group, res0["kind"].(string), res0["namespace"].(string), res0["name"].(string), "0"}, "/")
	counted = refreshesDelivered(cluster1, docs)
	ui.visit("resource-panel", "/applications/"+docs.Namespace+"/"+docs.Name+"?node="+url.QueryEscape(nodeKey))
	ui.waitText("the resource panel", ".sliding-panel__body", time.Minute, "Failed to load data")
	ui.expectErrorToast("error getting cached app managed resources: cache: key is missing")
	t.Logf("opening a resource's panel delivered %d refreshes to its managed cluster", counted())

	// Its history (multi-source): each deployment with its revision, source and who started it.
	history, _, _ := unstructured.NestedSlice(docsApp.Object, "status", "history")
	if len(history) == 0 {
		t.Fatalf("the documents' Application has no history on the hub")
	}
	last := history[len(history)-1].(map[string]any)
	revisions, _, _ := unstructured.NestedStringSlice(last, "revisions")
	if len(revisions) == 0 {
		t.Fatalf("its last deployment has no revisions on the hub: %v", last)
	}
	ui.visit("history-multi-source", "/applications/"+docs.Namespace+"/"+docs.Name+"?rollback=0")
	text := ui.waitText("the documents' history", ".application-deployment-history", time.Minute, lab.RepoURL, revisions[0][:7], "Initiated by:", "Authored by")
	if strings.Contains(text, "Failed to load data") {
		t.Errorf("the history panel failed to load data:\n%s", text)
	}

	// SYNC from the page of the two-wave Application: it runs on cluster1, and the operation panel
	// shows cluster1's result, hook and waves included.
	syncFromPage := func(key types.NamespacedName) {
		t.Helper()
		_, before, _ := operationOf(cluster1, key)
		ui.visit("sync-"+key.Name, "/applications/"+key.Namespace+"/"+key.Name)
		ui.click("SYNC", "button", "SYNC")
		ui.click("Synchronize", "[qe-id=application-sync-panel-button-synchronize]", "")
		eventually(t, key.Name+": the sync from the UI finished on cluster1 and on the hub", 3*time.Minute, "cluster1-argocd-application-controller.log", func() (bool, error) {
			onCluster, started, message := operationOf(cluster1, key)
			onHub, _, _ := operationOf(hub, key)
			_, pending := hubApp(hub, key).Object["operation"]
			return started != before && onCluster == "Succeeded" && onHub == "Succeeded" && !pending, fmt.Errorf("cluster1 %s (%s, started %s), hub %s", onCluster, message, started, onHub)
		})
	}
	waves, multi := client.ObjectKeyFromObject(apps["waves"]), client.ObjectKeyFromObject(apps["multi"])
	syncFromPage(waves)
	if got := configMapData(cluster1, "ui-waves", "second", "wave"); got != "5" {
		t.Fatalf("the second wave is not on cluster1 after the sync from the UI (wave %q)", got)
	}
	ui.visit("operation", "/applications/"+waves.Namespace+"/"+waves.Name+"?operation=true")
	ui.waitText("the sync's result", ".sliding-panel__body", time.Minute, "Succeeded", first[:7], "presync-hook", "PreSync", "configmap/first created", "configmap/second created")
	syncFromPage(multi)

	// A second deployment of each, synced from the page.
	second, err := lab.CommitFiles("ui: a second version", map[string]string{
		"uiwaves/first.yaml": configMap("first", map[string]string{"argocd.argoproj.io/sync-wave": "0"}, map[string]string{"wave": "0", "version": "2"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []types.NamespacedName{waves, multi} {
		eventually(t, key.Name+" OutOfSync at the second version", 2*time.Minute, "cluster1-argocd-application-controller.log", func() (bool, error) {
			if err := hub.Patch(ctx, argocdApp(key), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"argocd.argoproj.io/refresh":"normal"}}}`))); err != nil {
				return false, err
			}
			sync, _, revision := hubState(hub, key)
			return sync == argocd.SyncOutOfSync && strings.Contains(revision, second), fmt.Errorf("%s at %s", sync, revision)
		})
		syncFromPage(key)
		if got := configMapData(cluster1, key.Name, "first", "version"); got != "2" {
			t.Fatalf("%s: the second version is not on cluster1 after the sync from the UI (version %q)", key.Name, got)
		}
	}

	// ROLLBACK from the panel, to the first deployment, for the single- and the multi-source form:
	// it runs on cluster1 (Argo CD 3.5's API server rolls back either form).
	for _, key := range []types.NamespacedName{waves, multi} {
		ui.visit("history-"+key.Name, "/applications/"+key.Namespace+"/"+key.Name+"?rollback=0")
		ui.waitText(key.Name+": both deployments in the history", ".application-deployment-history", time.Minute, first[:7], second[:7], "Initiated by:", "admin", lab.RepoURL)
		// The oldest deployment is listed last; its menu holds Rollback.
		ui.waitFor("the deployments' menus", 30*time.Second, `document.querySelectorAll('.application-deployment-history__item-menu button').length >= 2`)
		if _, err := ui.eval(`[...document.querySelectorAll('.application-deployment-history__item-menu button')].at(-1).click()`); err != nil {
			t.Fatal(err)
		}
		ui.click("Rollback", "li", "Rollback")
		ui.click("OK", "[qe-id=argo-popup-ok-button]", "")
		eventually(t, key.Name+": the rollback from the UI ran on cluster1", 3*time.Minute, "cluster1-argocd-application-controller.log", func() (bool, error) {
			phase, _, message := operationOf(cluster1, key)
			version := configMapData(cluster1, key.Name, "first", "version")
			return phase == "Succeeded" && version == "1", fmt.Errorf("cluster1 %s (%s), version %q", phase, message, version)
		})
		ui.visit("rolled-back-"+key.Name, "/applications/"+key.Namespace+"/"+key.Name+"?operation=true")
		ui.waitText(key.Name+": the rollback's result", ".sliding-panel__body", 2*time.Minute, "Succeeded", first[:7])
	}

	// TERMINATE, from the operation panel, of a sync stuck in its PreSync hook: it stops on cluster1.
	stuck := client.ObjectKeyFromObject(apps["stuck"])
	ui.visit("stuck", "/applications/"+stuck.Namespace+"/"+stuck.Name)
	ui.click("SYNC", "button", "SYNC")
	ui.click("Synchronize", "[qe-id=application-sync-panel-button-synchronize]", "")
	eventually(t, "the sync stuck in its hook on cluster1", 2*time.Minute, "cluster1-argocd-application-controller.log", func() (bool, error) {
		phase, _, _ := operationOf(cluster1, stuck)
		return phase == "Running", fmt.Errorf("cluster1 %s", phase)
	})
	ui.visit("terminate", "/applications/"+stuck.Namespace+"/"+stuck.Name+"?operation=true")
	ui.waitText("the running sync", ".sliding-panel__body", time.Minute, "Running")
	ui.click("TERMINATE", ".sliding-panel__body button", "TERMINATE")
	ui.click("OK", "[qe-id=argo-popup-ok-button]", "")
	eventually(t, "the stuck sync terminated on cluster1 and on the hub", 2*time.Minute, "cluster1-argocd-application-controller.log", func() (bool, error) {
		onCluster, _, message := operationOf(cluster1, stuck)
		onHub, _, _ := operationOf(hub, stuck)
		return onCluster == "Failed" && onHub == "Failed", fmt.Errorf("cluster1 %s (%s), hub %s", onCluster, message, onHub)
	})
	ui.waitText("the terminated sync", ".sliding-panel__body", time.Minute, "Failed")

	// DELETE with cascade (foreground), from the page: gone from the hub and from cluster1.
	ui.visit("delete", "/applications/"+waves.Namespace+"/"+waves.Name)
	ui.click("DELETE", "button", "DELETE")
	if err := chromedp.Do(ui.ctx, chromedp.SendKeys(chromedp.CSS(`input[qeid=name-field-delete-confirmation], .popup-container input[type=text]`), waves.Name)); err != nil {
		t.Fatalf("typing the name to confirm the deletion: %v", err)
	}
	ui.click("Foreground", ".propagation-policy-option input", "")
	ui.shot("delete-dialog")
	ui.click("OK", "[qe-id=prompt-popup-ok-button]", "")
	eventually(t, "ui-waves gone from the hub and from cluster1 with its ConfigMaps", 3*time.Minute, "cluster1-work-agent.log", func() (bool, error) {
		onHub := apierrors.IsNotFound(hub.Get(ctx, waves, argocd.NewApplication()))
		onCluster := apierrors.IsNotFound(cluster1.Get(ctx, waves, argocd.NewApplication()))
		return onHub && onCluster && configMapData(cluster1, "ui-waves", "second", "wave") == "", fmt.Errorf("gone from the hub %t, from cluster1 %t", onHub, onCluster)
	})
	ui.noErrorToasts()
}

// hubApp is the hub Application key, empty when it cannot be read.
func hubApp(hub client.Client, key types.NamespacedName) *unstructured.Unstructured {
	app := argocd.NewApplication()
	_ = hub.Get(ctx, key, app)
	return app
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// refreshesDelivered counts the refresh requests that reach a managed cluster's Application while
// it runs: the distinct delivery IDs its Application carries (see api.RefreshDeliveryAnnotation),
// polled every 100 ms; a delivery is there until the hub saw it done, a second or more.
func refreshesDelivered(c client.Client, key types.NamespacedName) (stop func() int) {
	ids := map[string]bool{}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		for {
			app := argocd.NewApplication()
			if c.Get(ctx, key, app) == nil {
				if id := app.GetAnnotations()[api.RefreshDeliveryAnnotation]; id != "" {
					ids[id] = true
				}
			}
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() int {
		close(done)
		<-finished
		return len(ids)
	}
}
