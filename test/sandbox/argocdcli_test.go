package sandbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/sandbox"
)

// argocdCLI runs Argo CD's own CLI, logged in to the lab's hub API server as admin.
type argocdCLI struct {
	bin, config string
}

// loginArgoCD logs the argocd CLI in to the hub's Argo CD API server, as the lab's output says.
func loginArgoCD(t testing.TB) argocdCLI {
	t.Helper()
	cli := argocdCLI{bin: lab.ArgoCDCLI, config: filepath.Join(t.TempDir(), "argocd.config")}
	if out, err := cli.run(30*time.Second, "login", lab.ArgoCD.Addr, "--plaintext", "--username", "admin", "--password", lab.ArgoCD.Password); err != nil {
		t.Fatalf("argocd login: %v\n%s", err, out)
	}
	return cli
}

// run runs the CLI with a deadline of its own (the CLI's --timeout is the verb's assertion), and
// returns what it printed.
func (c argocdCLI) run(deadline time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, append(args, "--config", c.config)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("still running after %s: %w", deadline, ctx.Err())
	}
	return out.String(), err
}

// api calls the hub's Argo CD API server as the logged-in CLI user, with body (JSON) when given,
// and returns the status and body of its answer.
func (c argocdCLI) api(t testing.TB, method, path string, body ...string) (int, string) {
	t.Helper()
	raw, err := os.ReadFile(c.config)
	if err != nil {
		t.Fatal(err)
	}
	var config struct {
		Users []struct {
			AuthToken string `json:"auth-token"`
		} `json:"users"`
	}
	if err := yaml.Unmarshal(raw, &config); err != nil || len(config.Users) == 0 {
		t.Fatalf("reading the CLI's token from %s: %v", c.config, err)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+lab.ArgoCD.Addr+path, strings.NewReader(strings.Join(body, "")))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+config.Users[0].AuthToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	answer, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(answer)
}

// cliApp is a pull-model hub Application with a manual sync policy, delivered to cluster into
// namespace cliNamespace (which does not exist there until a sync creates it), whose
// source is the lab repository's path.
const cliNamespace = "cli-guestbook"

func cliApp(name, cluster, path string) *unstructured.Unstructured {
	app := outageApp(name, cluster)
	_ = unstructured.SetNestedField(app.Object, path, "spec", "source", "path")
	_ = unstructured.SetNestedField(app.Object, cliNamespace, "spec", "destination", "namespace")
	return app
}

// hubWatcher polls a hub Application's status every 100 ms and records each sync/health pair.
type hubWatcher struct {
	mu   sync.Mutex
	seen []string
	stop chan struct{}
	done chan struct{}
}

func watchHub(hub client.Client, key types.NamespacedName) *hubWatcher {
	w := &hubWatcher{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			sync, health, _ := hubState(hub, key)
			w.mu.Lock()
			if s := sync + "/" + health; len(w.seen) == 0 || w.seen[len(w.seen)-1] != s {
				w.seen = append(w.seen, s)
			}
			w.mu.Unlock()
			select {
			case <-w.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *hubWatcher) states() []string {
	close(w.stop)
	<-w.done
	return w.seen
}

// 0. Argo CD's own CLI, against the hub's Argo CD API server, on a pull-model Application: sync
// returns when the managed cluster finished (as in the push model), a refresh shows nothing the
// managed cluster did not report, and delete --cascade --wait removes it from both sides.
func TestArgoCDCLIOnAPullModelApplication(t *testing.T) {
	requireLab(t)
	name := func() string { return sandbox.ArgoNamespace + "/cli-guestbook" }
	hub, spokes := clients(t)
	cli := loginArgoCD(t)
	first, err := lab.CommitFiles("cli app", map[string]string{"cli/cli-greeting.yaml": configMap("cli-greeting", nil, map[string]string{"greeting": "hello from argocd app sync"})})
	if err != nil {
		t.Fatal(err)
	}
	// Without Argo CD's resources finalizer: argocd app delete --cascade adds it to the hub
	// Application in the request that deletes it, and the managed cluster must still get it.
	app := cliApp("cli-guestbook", "cluster1", "cli")
	key := client.ObjectKeyFromObject(app)
	if err := hub.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Argo CD does not delete the namespaces it creates: the next run starts without it.
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cliNamespace}}
		if err := spokes["cluster1"].Delete(ctx, ns); err == nil {
			eventually(t, "namespace "+cliNamespace+" gone from cluster1", time.Minute, "cluster1-kube-controller-manager.log", func() (bool, error) {
				return apierrors.IsNotFound(spokes["cluster1"].Get(ctx, client.ObjectKeyFromObject(ns), ns)), nil
			})
		}
	})
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		got := argocd.NewApplication()
		if hub.Get(ctx, key, got) == nil {
			status, _ := json.MarshalIndent(got.Object["status"], "", "  ")
			t.Logf("the hub Application's status:\n%s", status)
		}
		if w, err := guestbookWorkOf(hub, "cluster1", key); err == nil {
			conditions, _ := json.Marshal(w.Status.Conditions)
			t.Logf("its work: generation %d, annotations %v, conditions %s", w.Generation, w.Annotations, conditions)
		}
	})
	eventually(t, "the manual Application on cluster1, compared (OutOfSync: never synced)", 90*time.Second, "hub-argocd-pull.log", func() (bool, error) {
		sync, _, _ := hubState(hub, key)
		return sync == argocd.SyncOutOfSync, nil
	})

	// argocd app list and get read the hub Application as the managed cluster reported it.
	out, err := cli.run(30*time.Second, "app", "list")
	if err != nil || !strings.Contains(out, sandbox.ArgoNamespace+"/cli-guestbook") {
		t.Fatalf("argocd app list: %v\n%s", err, out)
	}

	// A sync that fails on cluster1 (its namespace does not exist there) exits non-zero with
	// cluster1's message, as in the push model.
	out, err = cli.run(3*time.Minute, "app", "sync", sandbox.ArgoNamespace+"/cli-guestbook", "--timeout", "120")
	if err == nil || !regexp.MustCompile(`(?m)^Phase:\s+Failed$`).MatchString(out) || !strings.Contains(out, `namespaces "`+cliNamespace+`" not found`) {
		t.Fatalf("argocd app sync of a sync that fails on cluster1: %v, want exit 1 with its phase and message\n%s", err, out)
	}
	// argocd app set, as a user mends it: the namespace is created by the next sync.
	if out, err := cli.run(time.Minute, "app", "set", sandbox.ArgoNamespace+"/cli-guestbook", "--sync-option", "CreateNamespace=true"); err != nil {
		t.Fatalf("argocd app set: %v\n%s", err, out)
	}

	// argocd app sync waits, as by default, and returns once cluster1 finished: the CLI waits
	// for status.reconciledAt >= status.operationState.finishedAt, then refreshes.
	begin := time.Now()
	out, err = cli.run(3*time.Minute, "app", "sync", sandbox.ArgoNamespace+"/cli-guestbook", "--timeout", "120")
	if err != nil {
		t.Fatalf("argocd app sync: %v\n%s", err, out)
	}
	t.Logf("argocd app sync returned after %s:\n%s", time.Since(begin).Round(100*time.Millisecond), out)
	if !regexp.MustCompile(`(?m)^Phase:\s+Succeeded$`).MatchString(out) {
		t.Errorf("argocd app sync does not print the managed cluster's result:\n%s", out)
	}
	if got := configMapData(spokes["cluster1"], cliNamespace, "cli-greeting", "greeting"); got != "hello from argocd app sync" {
		t.Errorf("the sync did not run on cluster1: greeting %q", got)
	}
	// The managed cluster may still report OutOfSync/Progressing for a moment after its sync
	// finished (it compared before the synced objects settled); the hub shows what it reports.
	eventually(t, "the hub Synced/Healthy after argocd app sync", 30*time.Second, "hub-argocd-pull.log", func() (bool, error) {
		sync, health, _ := hubState(hub, key)
		return sync == argocd.SyncSynced && health == argocd.HealthHealthy, nil
	})

	// argocd app get prints the resources table from the status.resources cluster1 reported.
	out, err = cli.run(time.Minute, "app", "get", sandbox.ArgoNamespace+"/cli-guestbook")
	if err != nil || !regexp.MustCompile(`(?m)^\s*ConfigMap\s+`+cliNamespace+`\s+cli-greeting\s+Synced\b`).MatchString(out) {
		t.Errorf("argocd app get shows no resources table with cluster1's ConfigMap: %v\n%s", err, out)
	}

	// argocd app wait --operation returns at once: nothing runs.
	if out, err := cli.run(time.Minute, "app", "wait", sandbox.ArgoNamespace+"/cli-guestbook", "--sync", "--health", "--operation", "--timeout", "30"); err != nil {
		t.Errorf("argocd app wait: %v\n%s", err, out)
	}

	// argocd app get --refresh and --hard-refresh: the request reaches cluster1 (its Argo CD runs a
	// refresh of that kind) and the hub never shows a state cluster1 did not report (it reads
	// Synced/Healthy throughout).
	for refresh, kind := range map[string]string{"--refresh": "normal", "--hard-refresh": "hard"} {
		before := refreshesOnCluster(t, "cluster1", kind, "cli-guestbook")
		w := watchHub(hub, key)
		out, err := cli.run(time.Minute, "app", "get", sandbox.ArgoNamespace+"/cli-guestbook", refresh)
		seen := w.states()
		if err != nil {
			t.Errorf("argocd app get %s: %v\n%s", refresh, err, out)
		}
		eventually(t, "cluster1's Argo CD runs the "+kind+" refresh of argocd app get "+refresh, time.Minute, "cluster1-argocd-application-controller.log", func() (bool, error) {
			n := refreshesOnCluster(t, "cluster1", kind, "cli-guestbook")
			return n > before, fmt.Errorf("%d %s refreshes of cli-guestbook, %d before", n, kind, before)
		})
		if len(seen) != 1 || seen[0] != "Synced/Healthy" {
			t.Errorf("during argocd app get %s the hub read %v; cluster1 reported Synced/Healthy throughout", refresh, seen)
		}
		if !strings.Contains(out, "Sync Status:        Synced") || !strings.Contains(out, "Health Status:      Healthy") {
			t.Errorf("argocd app get %s prints:\n%s", refresh, out)
		}
	}

	// A new commit, synced again from the CLI: the second sync in a row returns too.
	second, err := lab.CommitFiles("cli app v2", map[string]string{"cli/cli-greeting.yaml": configMap("cli-greeting", nil, map[string]string{"greeting": "second sync"})})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := cli.run(3*time.Minute, "app", "sync", sandbox.ArgoNamespace+"/cli-guestbook", "--timeout", "120"); err != nil {
		t.Fatalf("the second argocd app sync: %v\n%s", err, out)
	}
	if got := configMapData(spokes["cluster1"], cliNamespace, "cli-greeting", "greeting"); got != "second sync" {
		t.Errorf("the second sync did not reach cluster1: greeting %q", got)
	}

	// argocd app history lists cluster1's deployments (the failed sync made none), and argocd app
	// rollback runs the first one there.
	var ids []string
	eventually(t, "argocd app history lists cluster1's two deployments", time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		out, err := cli.run(time.Minute, "app", "history", sandbox.ArgoNamespace+"/cli-guestbook")
		ids = nil
		for _, m := range regexp.MustCompile(`(?m)^(\d+)\s+\d{4}-\d\d-\d\d .*\bmain \([0-9a-f]{7}\)$`).FindAllStringSubmatch(out, -1) {
			ids = append(ids, m[1])
		}
		if len(ids) == 2 {
			t.Logf("argocd app history:\n%s", out)
		}
		return len(ids) == 2, err
	})
	out, err = cli.run(3*time.Minute, "app", "rollback", sandbox.ArgoNamespace+"/cli-guestbook", ids[0], "--timeout", "120")
	if err != nil {
		t.Fatalf("argocd app rollback %s: %v\n%s", ids[0], err, out)
	}
	t.Logf("argocd app rollback %s:\n%s", ids[0], out)
	if !regexp.MustCompile(`(?m)^Sync Revision:\s+` + first + `$`).MatchString(out) {
		t.Errorf("argocd app rollback prints another revision than the one it synced on cluster1 (%s)", first)
	}
	if got := configMapData(spokes["cluster1"], cliNamespace, "cli-greeting", "greeting"); got != "hello from argocd app sync" {
		t.Errorf("the rollback did not run on cluster1: greeting %q", got)
	}
	// A rollback to an ID cluster1 never deployed: the server's own answer.
	if out, err := cli.run(time.Minute, "app", "rollback", sandbox.ArgoNamespace+"/cli-guestbook", "99", "--timeout", "30"); err == nil || !strings.Contains(out, "does not have deployment id '99' in history") {
		t.Errorf("argocd app rollback to an unknown ID: %v\n%s", err, out)
	}

	// argocd app sync --revision: the commit named, on cluster1.
	if out, err := cli.run(3*time.Minute, "app", "sync", name(), "--revision", second, "--timeout", "120"); err != nil || !strings.Contains(out, second) {
		t.Errorf("argocd app sync --revision %s: %v\n%s", second, err, out)
	}
	if got := configMapData(spokes["cluster1"], cliNamespace, "cli-greeting", "greeting"); got != "second sync" {
		t.Errorf("argocd app sync --revision did not reach cluster1: greeting %q", got)
	}
	// argocd app sync --prune: a resource removed from Git goes from cluster1 only with --prune.
	if _, err := lab.CommitFiles("cli extra", map[string]string{"cli/cli-extra.yaml": configMap("cli-extra", nil, map[string]string{"greeting": "extra"})}); err != nil {
		t.Fatal(err)
	}
	if out, err := cli.run(3*time.Minute, "app", "sync", name(), "--timeout", "120"); err != nil || configMapData(spokes["cluster1"], cliNamespace, "cli-extra", "greeting") != "extra" {
		t.Fatalf("argocd app sync of a new resource: %v\n%s", err, out)
	}
	if _, err := lab.CommitFiles("cli extra removed", map[string]string{"cli/cli-extra.yaml": ""}); err != nil {
		t.Fatal(err)
	}
	// Without --prune the resource stays, and the CLI exits 1 saying so, as in the push model: it
	// reads the sync result's resources, which cluster1 reports ("ignored (requires pruning)").
	if out, err := cli.run(3*time.Minute, "app", "sync", name(), "--timeout", "120"); err == nil || !strings.Contains(out, "1 resources require pruning") ||
		configMapData(spokes["cluster1"], cliNamespace, "cli-extra", "greeting") != "extra" {
		t.Errorf("argocd app sync without --prune: %v, want exit 1 with \"1 resources require pruning\", and the removed resource still on cluster1\n%s", err, out)
	}
	if out, err := cli.run(3*time.Minute, "app", "sync", name(), "--prune", "--timeout", "120"); err != nil || configMapData(spokes["cluster1"], cliNamespace, "cli-extra", "greeting") != "" {
		t.Errorf("argocd app sync --prune: %v, the removed resource must go from cluster1\n%s", err, out)
	}
	// argocd app sync --resource: only the resource named is synced on cluster1.
	if _, err := lab.CommitFiles("cli selective", map[string]string{
		"cli/cli-greeting.yaml": configMap("cli-greeting", nil, map[string]string{"greeting": "selected"}),
		"cli/cli-other.yaml":    configMap("cli-other", nil, map[string]string{"greeting": "not selected"}),
	}); err != nil {
		t.Fatal(err)
	}
	if out, err := cli.run(3*time.Minute, "app", "sync", name(), "--resource", ":ConfigMap:"+cliNamespace+"/cli-greeting", "--timeout", "120"); err != nil {
		t.Errorf("argocd app sync --resource: %v\n%s", err, out)
	}
	if got, other := configMapData(spokes["cluster1"], cliNamespace, "cli-greeting", "greeting"), configMapData(spokes["cluster1"], cliNamespace, "cli-other", "greeting"); got != "selected" || other != "" {
		t.Errorf("argocd app sync --resource on cluster1: the one named reads %q (want selected), the other %q (want none)", got, other)
	}
	// A selective sync of a resource the Application does not have: the CLI's own answer.
	if out, err := cli.run(time.Minute, "app", "sync", name(), "--resource", ":ConfigMap:"+cliNamespace+"/no-such-map", "--timeout", "30"); err == nil {
		t.Errorf("argocd app sync --resource of a resource that does not exist: exit 0\n%s", out)
	} else {
		t.Logf("argocd app sync --resource of a resource that does not exist: %s", strings.TrimSpace(out))
	}

	// Argo CD's API server answers resource-level verbs from its cache and acts on the
	// Application's destination, https://kubernetes.default.svc: on the hub, the hub itself. The
	// tree argocd-pull writes has no uid on any node, and no managed resources are written, so they
	// fail, from the CLI and from the API alike, and never reach the hub's own object of the same
	// name (docs/security.md; TestResourceLevelVerbsOnTheHubsTreeReachNoHubObject has each verb).
	hubOwn := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cliNamespace, Name: "cli-greeting"}, Data: map[string]string{"greeting": "the hub's own"}}
	if err := hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cliNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hub.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cliNamespace}}) })
	if err := hub.Create(ctx, hubOwn); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// The CLI asks for the managed resources first, which the hub's cache does not hold; the API
	// finds the node in the tree, but without a uid.
	const noCache = "error getting cached app managed resources: cache: key is missing"
	for _, args := range [][]string{
		{"app", "delete-resource", sandbox.ArgoNamespace + "/cli-guestbook", "--kind", "ConfigMap", "--resource-name", "cli-greeting", "--namespace", cliNamespace},
		{"app", "patch-resource", sandbox.ArgoNamespace + "/cli-guestbook", "--kind", "ConfigMap", "--resource-name", "cli-greeting", "--namespace", cliNamespace, "--patch", `{"data":{"greeting":"patched"}}`},
		{"app", "manifests", sandbox.ArgoNamespace + "/cli-guestbook", "--source", "live"},
	} {
		out, err := cli.run(time.Minute, args...)
		if err == nil || !strings.Contains(out, noCache) || strings.Contains(out, "the hub's own") {
			t.Errorf("argocd %s on a pull-model Application: %v, want an error saying %q\n%s", strings.Join(args[:2], " "), err, noCache, out)
		}
		t.Logf("argocd %s: %s", strings.Join(args[:2], " "), strings.TrimSpace(out))
	}
	const noUID = "cli-greeting not found as part of application cli-guestbook"
	for _, call := range []struct{ method, path string }{
		{http.MethodDelete, "/api/v1/applications/cli-guestbook/resource"},
		{http.MethodGet, "/api/v1/applications/cli-guestbook/resource"},
	} {
		status, body := cli.api(t, call.method, call.path+"?appNamespace="+sandbox.ArgoNamespace+"&namespace="+cliNamespace+"&resourceName=cli-greeting&version=v1&kind=ConfigMap")
		if status != http.StatusBadRequest || !strings.Contains(body, noUID) || strings.Contains(body, "the hub's own") {
			t.Errorf("%s %s: %d, want %d saying %q\n%s", call.method, call.path, status, http.StatusBadRequest, noUID, body)
		}
	}
	if got := configMapData(hub, cliNamespace, "cli-greeting", "greeting"); got != "the hub's own" {
		t.Errorf("the hub's own ConfigMap of that name was touched: greeting %q", got)
	}

	// argocd app delete --cascade --wait: gone from the hub and from cluster1, with what it
	// deployed there (the finalizer the delete adds reaches cluster1 first).
	if out, err := cli.run(3*time.Minute, "app", "delete", sandbox.ArgoNamespace+"/cli-guestbook", "--cascade", "--wait", "--yes"); err != nil {
		t.Fatalf("argocd app delete: %v\n%s", err, out)
	}
	eventually(t, "the Application gone from cluster1 with its ConfigMap", time.Minute, "cluster1-work-agent.log", func() (bool, error) {
		gone := spokes["cluster1"].Get(ctx, types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: "cli-guestbook"}, argocd.NewApplication()) != nil
		return gone && configMapData(spokes["cluster1"], cliNamespace, "cli-greeting", "greeting") == "", nil
	})
}

// guestbookWorkOf is the ManifestWork of hub Application key on cluster.
func guestbookWorkOf(hub client.Client, cluster string, key types.NamespacedName) (*workv1.ManifestWork, error) {
	w := &workv1.ManifestWork{}
	err := hub.Get(ctx, types.NamespacedName{Namespace: cluster, Name: manifestwork.WorkName(key.Namespace, key.Name)}, w)
	return w, err
}

// The documents' Applications are multi-source (`sources:`, their ApplicationSet unchanged):
// argocd app get, history and sync read them on the hub as the push model does, with the source
// and the revision of each deployment.
func TestArgoCDCLIOnTheDocumentsMultiSourceApplication(t *testing.T) {
	requireLab(t)
	hub, _ := clients(t)
	cli := loginArgoCD(t)
	key := appKey("cluster2")
	name := key.Namespace + "/" + key.Name
	eventually(t, "the documents' Application on cluster2 Synced and Healthy", 2*time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		sync, health, _ := hubState(hub, key)
		return sync == argocd.SyncSynced && health == argocd.HealthHealthy, fmt.Errorf("%s/%s", sync, health)
	})
	revisions, _, _ := unstructured.NestedStringSlice(hubApp(hub, key).Object, "status", "sync", "revisions")
	if len(revisions) != 1 {
		t.Fatalf("the hub Application's status.sync.revisions: %v, want the one its cluster reports", revisions)
	}

	if out, err := cli.run(30*time.Second, "app", "list"); err != nil || !strings.Contains(out, name) {
		t.Errorf("argocd app list: %v\n%s", err, out)
	}
	// argocd app get: its source, the revision its cluster synced (read again until the CLI and
	// the hub agree: an automated sync of a commit an earlier test made may land in between) and
	// its resources table.
	var out string
	eventually(t, "argocd app get printing the documents' Application as the hub holds it", time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		var err error
		if out, err = cli.run(time.Minute, "app", "get", name); err != nil {
			return false, err
		}
		revisions, _, _ = unstructured.NestedStringSlice(hubApp(hub, key).Object, "status", "sync", "revisions")
		if len(revisions) != 1 {
			return false, fmt.Errorf("status.sync.revisions %v", revisions)
		}
		ok := strings.Contains(out, "- Repo:             "+lab.RepoURL) && strings.Contains(out, "Sync Status:        Synced to main ("+revisions[0][:7]+")") &&
			regexp.MustCompile(`(?m)^\s*ConfigMap\s+guestbook\s+guestbook-ui\s+Synced\b`).MatchString(out)
		return ok, fmt.Errorf("want its source, its revision %s and its resources table:\n%s", revisions[0][:7], out)
	})
	// The hub's repo-server answers for the lab's repository, as the UI's panels ask it: the
	// manifests of the Application's source, and the commit of a deployment in its history.
	if code, body := cli.api(t, "GET", "/api/v1/applications/"+key.Name+"/manifests?appNamespace="+key.Namespace); code != 200 || !strings.Contains(body, "guestbook-ui") {
		t.Errorf("GetManifests of the documents' Application: %d\n%.600s", code, body)
	}
	if code, body := cli.api(t, "GET", fmt.Sprintf("/api/v1/applications/%s/revisions/%s/metadata?appNamespace=%s&sourceIndex=0&versionId=0", key.Name, revisions[0], key.Namespace)); code != 200 || !strings.Contains(body, `"author"`) {
		t.Errorf("GetRevisionMetadata of the documents' Application's first deployment (the UI's history panel): %d\n%.600s", code, body)
	}
	// A sync from the CLI (the Application's automated sync is on; a manual one runs too) adds a
	// deployment, which the history lists with its source and revision.
	if out, err := cli.run(3*time.Minute, "app", "sync", name, "--timeout", "120"); err != nil || !regexp.MustCompile(`(?m)^Phase:\s+Succeeded$`).MatchString(out) {
		t.Fatalf("argocd app sync of the documents' Application: %v\n%s", err, out)
	}
	// Each deployment with its revision, the newest at the one the sync just deployed.
	revisions, _, _ = unstructured.NestedStringSlice(hubApp(hub, key).Object, "status", "sync", "revisions")
	out, err := cli.run(time.Minute, "app", "history", name)
	rows := regexp.MustCompile(`(?m)^\d+\s+\S+ \S+ \S+ \S+\s+main \(([0-9a-f]{7})\)$`).FindAllStringSubmatch(out, -1)
	if err != nil || !strings.Contains(out, "SOURCE  "+lab.RepoURL) || len(rows) < 2 || len(revisions) != 1 || rows[len(rows)-1][1] != revisions[0][:7] {
		t.Errorf("argocd app history of the documents' Application: %v; want its source and each deployment at main (REVISION), the last at %v\n%s", err, revisions, out)
	}
}

// stuckHook is a PreSync hook the lab's managed clusters never finish: its Job's pod selects no
// node, so it stays Pending and Argo CD waits on it (Running) until the operation is terminated.
// Unscheduled, it also goes at once when the hook is deleted: bound to a node, its delete waits for
// the kubelet, and the next sync met the terminated hook still there and failed at once ("one or
// more synchronization tasks completed unsuccessfully", in the lab with a node).
const stuckHook = `apiVersion: batch/v1
kind: Job
metadata:
  name: stuck-presync
  annotations:
    argocd.argoproj.io/hook: PreSync
    argocd.argoproj.io/hook-delete-policy: BeforeHookCreation
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      nodeSelector: {argocd-pull.lab/no-such-node: "true"}
      containers:
      - name: wait
        image: registry.invalid/wait:never
        command: ["sleep", "3600"]
`

// refreshesOnCluster counts the refreshes of a kind ("normal" or "hard") that a cluster's Argo CD
// ran on an Application because one was requested, from its application controller's log.
func refreshesOnCluster(t *testing.T, cluster, kind, app string) int {
	t.Helper()
	log, err := os.ReadFile(filepath.Join(labDir, "logs", cluster+"-argocd-application-controller.log"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.Lines(string(log)) {
		if strings.Contains(line, "Refreshing app status ("+kind+" refresh requested)") && strings.Contains(line, app) {
			n++
		}
	}
	return n
}

// operationOf is an Application's status.operationState phase, startedAt and message, as c holds it.
func operationOf(c client.Client, key types.NamespacedName) (phase, startedAt, message string) {
	app := argocd.NewApplication()
	if c.Get(ctx, key, app) != nil {
		return "", "", ""
	}
	phase, _, _ = unstructured.NestedString(app.Object, "status", "operationState", "phase")
	startedAt, _, _ = unstructured.NestedString(app.Object, "status", "operationState", "startedAt")
	message, _, _ = unstructured.NestedString(app.Object, "status", "operationState", "message")
	return phase, startedAt, message
}

// 0. argocd app terminate-op on a sync stuck in a hook on the managed cluster: the operation
// stops there, the hub shows it terminated, the next sync runs (the request to terminate is not
// repeated), and argocd app delete --cascade of an Application whose sync is stuck deletes it.
func TestArgoCDCLITerminatesASyncStuckInAHook(t *testing.T) {
	requireLab(t)
	hub, spokes := clients(t)
	cli := loginArgoCD(t)
	const namespace = "cli-stuck"
	if _, err := lab.CommitFiles("a sync stuck in a hook", map[string]string{
		"stuck/greeting.yaml": configMap("stuck-greeting", nil, map[string]string{"greeting": "never synced"}),
		"stuck/hook.yaml":     stuckHook,
	}); err != nil {
		t.Fatal(err)
	}
	app := cliApp("cli-stuck", "cluster1", "stuck")
	_ = unstructured.SetNestedField(app.Object, namespace, "spec", "destination", "namespace")
	_ = unstructured.SetNestedStringSlice(app.Object, []string{"CreateNamespace=true"}, "spec", "syncPolicy", "syncOptions")
	app.SetFinalizers([]string{argocd.ResourcesFinalizer})
	key := client.ObjectKeyFromObject(app)
	if err := hub.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
		_ = spokes["cluster1"].Delete(ctx, ns)
		if t.Failed() {
			for name, c := range map[string]client.Client{"hub": hub, "cluster1": spokes["cluster1"]} {
				got := argocd.NewApplication()
				if c.Get(ctx, key, got) == nil {
					status, _ := json.MarshalIndent(map[string]any{"operation": got.Object["operation"], "status": got.Object["status"], "metadata": got.Object["metadata"]}, "", "  ")
					t.Logf("the Application on %s:\n%s", name, status)
				}
			}
		}
	})
	eventually(t, "the Application on cluster1, compared", 90*time.Second, "hub-argocd-pull.log", func() (bool, error) {
		sync, _, _ := hubState(hub, key)
		return sync == argocd.SyncOutOfSync, nil
	})
	name := sandbox.ArgoNamespace + "/cli-stuck"
	if out, err := cli.run(time.Minute, "app", "sync", name, "--async"); err != nil {
		t.Fatalf("argocd app sync --async: %v\n%s", err, out)
	}
	var stuckSince string
	eventually(t, "the sync Running on cluster1 (its PreSync hook never finishes) and on the hub", 90*time.Second, "cluster1-argocd-application-controller.log", func() (bool, error) {
		phase, started, _ := operationOf(spokes["cluster1"], key)
		hubPhase, _, _ := operationOf(hub, key)
		stuckSince = started
		return phase == "Running" && hubPhase == "Running", nil
	})

	// The running hook is in the status.resources cluster1 reports, marked a hook (a boolean) on
	// the hub as there: the UI's sync panel leaves hooks out of what it offers to sync.
	eventually(t, "the hub's status.resources marking the stuck hook a hook, as cluster1's does", time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		for _, c := range []client.Client{spokes["cluster1"], hub} {
			resources, _, _ := unstructured.NestedSlice(hubApp(c, key).Object, "status", "resources")
			marked := false
			for _, r := range resources {
				if m, _ := r.(map[string]any); m["name"] == "stuck-presync" && m["hook"] == true {
					marked = true
				}
			}
			if !marked {
				return false, fmt.Errorf("status.resources %v", resources)
			}
		}
		return true, nil
	})

	// A sync while one runs: the API server's own answer, as in the push model.
	if out, err := cli.run(time.Minute, "app", "sync", name, "--async"); err == nil || !strings.Contains(out, "another operation is already in progress") {
		t.Errorf("argocd app sync while a sync runs: %v, want the server's refusal\n%s", err, out)
	}

	// argocd app terminate-op: the operation stops on cluster1, and the hub never reads Running
	// again meanwhile.
	out, err := cli.run(time.Minute, "app", "terminate-op", name)
	if err != nil {
		t.Fatalf("argocd app terminate-op: %v\n%s", err, out)
	}
	t.Logf("argocd app terminate-op %s:\n%s", name, out)
	var hubPhases []string
	eventually(t, "the operation terminated on cluster1 and the hub", 90*time.Second, "hub-argocd-pull.log", func() (bool, error) {
		phase, _, message := operationOf(spokes["cluster1"], key)
		hubPhase, _, hubMessage := operationOf(hub, key)
		if len(hubPhases) == 0 || hubPhases[len(hubPhases)-1] != hubPhase {
			hubPhases = append(hubPhases, hubPhase)
		}
		return phase == "Failed" && strings.Contains(message, "terminated") && hubPhase == "Failed" && hubMessage == message, nil
	})
	if slices.Contains(hubPhases, "Running") {
		t.Errorf("after argocd app terminate-op the hub read %v; it must not read Running again", hubPhases)
	}
	out, err = cli.run(time.Minute, "app", "get", name, "--show-operation")
	if err != nil || !regexp.MustCompile(`(?m)^Phase:\s+Failed$`).MatchString(out) || !strings.Contains(out, "terminated") {
		t.Errorf("argocd app get after terminate-op: %v\n%s", err, out)
	}
	t.Logf("argocd app get %s --show-operation, after terminate-op:\n%s", name, out)

	// The next sync is accepted and runs: the request to terminate was not repeated on it.
	if out, err := cli.run(time.Minute, "app", "sync", name, "--async"); err != nil {
		t.Fatalf("argocd app sync --async after terminate-op: %v\n%s", err, out)
	}
	eventually(t, "the next sync Running on cluster1", 90*time.Second, "cluster1-argocd-application-controller.log", func() (bool, error) {
		phase, started, _ := operationOf(spokes["cluster1"], key)
		return phase == "Running" && started != stuckSince, nil
	})
	_, runningSince, _ := operationOf(spokes["cluster1"], key)
	for range 10 {
		time.Sleep(time.Second)
		if phase, started, message := operationOf(spokes["cluster1"], key); phase != "Running" || started != runningSince {
			t.Fatalf("the next sync on cluster1 did not stay Running (it waits on its hook): %s since %s: %s", phase, started, message)
		}
	}

	// argocd app delete --cascade while that sync is stuck: gone from the hub and from cluster1.
	if out, err := cli.run(4*time.Minute, "app", "delete", name, "--cascade", "--wait", "--yes"); err != nil {
		t.Fatalf("argocd app delete --cascade of an Application whose sync is stuck in a hook: %v\n%s", err, out)
	}
	eventually(t, "the Application gone from cluster1 with its ConfigMap", time.Minute, "cluster1-work-agent.log", func() (bool, error) {
		gone := apierrors.IsNotFound(spokes["cluster1"].Get(ctx, key, argocd.NewApplication()))
		return gone && configMapData(spokes["cluster1"], namespace, "stuck-greeting", "greeting") == "", nil
	})
}

// The hub's Argo CD API server serves Argo CD's web UI, built from the release's ui/ with the
// argo-ui commit it pins (hack/tools/argocd/ui.sh): its index on the app's routes, and the scripts
// that index loads. (What the UI shows of a pull-model Application is read in a browser elsewhere.)
func TestTheHubServesArgoCDsWebUI(t *testing.T) {
	requireLab(t)
	if lab.ArgoCD.NoWebUI != "" {
		t.Fatalf("the hub's Argo CD API server serves no web UI: %s", lab.ArgoCD.NoWebUI)
	}
	get := func(path string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+lab.ArgoCD.Addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		// As a browser asks: the server answers the app's routes with its index only then.
		req.Header.Set("Accept", "text/html,application/xhtml+xml,*/*")
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	var index string
	for _, path := range []string{"/", "/applications", "/applications/" + sandbox.ArgoNamespace + "/cluster1-guestbook-app"} {
		code, body := get(path)
		if code != http.StatusOK || !strings.Contains(body, "<title>Argo CD</title>") {
			t.Fatalf("GET %s: %d, want Argo CD's index; got:\n%.300s", path, code, body)
		}
		index = body
	}
	scripts := regexp.MustCompile(`<script[^>]+src="([^"]+\.js)"`).FindAllStringSubmatch(index, -1)
	if len(scripts) == 0 {
		t.Fatalf("the index loads no script:\n%.600s", index)
	}
	largest := 0
	for _, s := range scripts {
		src := s[1]
		if !strings.HasPrefix(src, "/") {
			src = "/" + src
		}
		code, body := get(src)
		if code != http.StatusOK {
			t.Errorf("GET %s: %d", src, code)
		}
		largest = max(largest, len(body))
	}
	if largest < 100<<10 {
		t.Errorf("the index's scripts %v are at most %d bytes: not the UI's bundle", scripts, largest)
	}
}
