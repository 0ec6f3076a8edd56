package sandbox_test

import (
	"encoding/json"
	"fmt"
	"maps"
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
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
	"github.com/argocd-pull/argocd-pull/internal/appstatus"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/sandbox"
)

// configMap is a ConfigMap manifest for the lab's Git repository.
func configMap(name string, annotations map[string]string, data map[string]string) string {
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name}, "data": data}
	if annotations != nil {
		cm["metadata"].(map[string]any)["annotations"] = annotations
	}
	out, _ := yaml.Marshal(cm)
	return string(out)
}

// hubState is a hub Application's sync, health and revision.
func hubState(hub client.Client, key types.NamespacedName) (sync, health, revision string) {
	app := argocd.NewApplication()
	if hub.Get(ctx, key, app) != nil {
		return "", "", ""
	}
	sync, _, _ = unstructured.NestedString(app.Object, "status", "sync", "status")
	health, _, _ = unstructured.NestedString(app.Object, "status", "health", "status")
	revision, _, _ = unstructured.NestedString(app.Object, "status", "sync", "revision")
	return sync, health, revision
}

// doneAt says whether the hub Application key reads Synced and Healthy at revision sha: its
// RollingSync step done there.
func doneAt(hub client.Client, key types.NamespacedName, sha string) bool {
	sync, health, revision := hubState(hub, key)
	return sync == "Synced" && health == "Healthy" && revision == sha
}

// deployment is when a cluster's Argo CD first deployed a revision (RFC 3339, to the second), from
// its Application's status.history.
type deployment struct{ startedAt, at string }

// deployed reads the first deployment of revision sha in the history of a cluster's Application.
func deployed(c client.Client, key types.NamespacedName, sha string) deployment {
	app := argocd.NewApplication()
	if c.Get(ctx, key, app) != nil {
		return deployment{}
	}
	history, _, _ := unstructured.NestedSlice(app.Object, "status", "history")
	for _, h := range history {
		if m, ok := h.(map[string]any); ok && m["revision"] == sha {
			started, _ := m["deployStartedAt"].(string)
			at, _ := m["deployedAt"].(string)
			return deployment{startedAt: started, at: at}
		}
	}
	return deployment{}
}

// configMapData is one value of a ConfigMap on a cluster, "" when there is none.
func configMapData(c client.Client, namespace, name, key string) string {
	cm := &corev1.ConfigMap{}
	if c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, cm) != nil {
		return ""
	}
	return cm.Data[key]
}

// A sync that lasts more than a moment (two sync waves; Argo CD waits between them) requested from
// the hub, as `argocd app sync` writes it, completes on the managed cluster.
func TestSyncWithWavesRequestedFromTheHubCompletes(t *testing.T) {
	requireLab(t)
	hub, spokes := clients(t)
	if _, err := lab.CommitFiles("two sync waves", map[string]string{
		"waves/first.yaml":  configMap("first", map[string]string{"argocd.argoproj.io/sync-wave": "0"}, map[string]string{"wave": "0"}),
		"waves/second.yaml": configMap("second", map[string]string{"argocd.argoproj.io/sync-wave": "5"}, map[string]string{"wave": "5"}),
	}); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: "waves"}
	app := argocd.NewApplication()
	app.SetNamespace(key.Namespace)
	app.SetName(key.Name)
	app.SetLabels(map[string]string{api.PullLabel: "true"})
	app.SetAnnotations(map[string]string{api.ClusterAnnotation: "cluster1", argocd.SkipReconcileAnnotation: "true"})
	app.Object["spec"] = map[string]any{
		"project":     "default",
		"source":      map[string]any{"repoURL": lab.RepoURL, "path": "waves", "targetRevision": "main"},
		"destination": map[string]any{"server": argocd.LocalServer, "namespace": "waves"},
		"syncPolicy":  map[string]any{"syncOptions": []any{"CreateNamespace=true"}}, // no automated sync
	}
	if err := hub.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hub.Delete(ctx, argocdApp(key)) })
	eventually(t, "the Application on cluster1", time.Minute, "cluster1-work-agent.log", func() (bool, error) {
		return spokes["cluster1"].Get(ctx, key, argocd.NewApplication()) == nil, nil
	})

	requested := time.Now()
	patch := []byte(`{"operation":{"initiatedBy":{"username":"admin"},"sync":{"revision":"main","syncOptions":["CreateNamespace=true"],"syncStrategy":{"hook":{}}}}}`)
	if err := hub.Patch(ctx, argocdApp(key), client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "both waves on cluster1, the sync Succeeded and cleared from the hub", 2*time.Minute, "cluster1-argocd-application-controller.log", func() (bool, error) {
		onSpoke := argocd.NewApplication()
		if err := spokes["cluster1"].Get(ctx, key, onSpoke); err != nil {
			return false, err
		}
		phase, _, _ := unstructured.NestedString(onSpoke.Object, "status", "operationState", "phase")
		message, _, _ := unstructured.NestedString(onSpoke.Object, "status", "operationState", "message")
		if configMapData(spokes["cluster1"], "waves", "second", "wave") != "5" || phase != "Succeeded" {
			return false, fmt.Errorf("on cluster1: operation %q (%s)", phase, message)
		}
		onHub := argocd.NewApplication()
		if err := hub.Get(ctx, key, onHub); err != nil {
			return false, err
		}
		_, pending := onHub.Object["operation"]
		hubPhase, _, _ := unstructured.NestedString(onHub.Object, "status", "operationState", "phase")
		return !pending && hubPhase == "Succeeded", nil
	})
	t.Logf("the two-wave sync ran and was cleared from the hub %.1fs after the request", time.Since(requested).Seconds())
}

// rolloutAppSet is a RollingSync ApplicationSet over the lab's clusters: cluster1, then a step that
// selects no cluster (a step with no clusters is passed over, never counted against the order),
// then cluster2. Automated sync is off: the ApplicationSet controller requests each step's syncs.
const rolloutAppSet = `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata:
  name: rollout
  namespace: openshift-gitops
spec:
  generators:
  - clusterDecisionResource:
      configMapRef: ocm-placement-generator
      labelSelector:
        matchLabels:
          cluster.open-cluster-management.io/placement: aws-app-placement
      requeueAfterSeconds: 30
  strategy:
    type: RollingSync
    rollingSync:
      steps:
      - matchExpressions:
        - {key: env, operator: In, values: [cluster1]}
      - matchExpressions:
        - {key: env, operator: In, values: [no-such-cluster]}
      - matchExpressions:
        - {key: env, operator: In, values: [cluster2]}
  template:
    metadata:
      name: '{{name}}-rollout'
      labels:
        env: '{{name}}'
        apps.open-cluster-management.io/pull-to-ocm-managed-cluster: "true"
      annotations:
        apps.open-cluster-management.io/ocm-managed-cluster: '{{name}}'
        apps.open-cluster-management.io/ocm-managed-cluster-app-namespace: openshift-gitops
        argocd.argoproj.io/skip-reconcile: "true"
    spec:
      project: default
      source:
        repoURL: REPO
        targetRevision: main
        path: rollout
      destination:
        server: https://kubernetes.default.svc
        namespace: rollout
      syncPolicy:
        syncOptions:
        - CreateNamespace=true
`

// A RollingSync rollout in pull mode: each revision reaches cluster1 first and cluster2 only once
// cluster1's hub Application is Synced and Healthy at that revision, even when cluster2 finds the
// commit first, after which `argocd app wait
// --operation` finds no sync running; a revision that fails on cluster1 never reaches cluster2, and
// the rollout goes on once cluster1 is fixed. Throughout, a
// comparison a cluster reports while its sync runs shows on the hub while it runs, and the hub's
// reconciledAt never moves back (watchReconciledAt).
func TestRollingSyncStepsThroughTheFleet(t *testing.T) {
	requireLab(t)
	hub, spokes := clients(t)
	rollout := func(revision string, extra bool) string {
		t.Helper()
		files := map[string]string{"rollout/rollout.yaml": configMap("rollout", nil, map[string]string{"revision": revision}), "rollout/extra.yaml": ""}
		if extra {
			files["rollout/extra.yaml"] = configMap("rollout-extra", nil, map[string]string{"a": "from git"})
		}
		sha, err := lab.CommitFiles("rollout "+revision, files)
		if err != nil {
			t.Fatal(err)
		}
		return sha
	}
	key := func(cluster string) types.NamespacedName {
		return types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: cluster + "-rollout"}
	}
	healthyAt := func(cluster, sha string) bool { return doneAt(hub, key(cluster), sha) }
	checkReconciledAt := watchReconciledAt(t, []string{"cluster1", "cluster2"}, key)
	cli := loginArgoCD(t)
	// syncedOnce checks that each cluster synced revision sha, once when once: Argo CD records
	// every successful sync in the Application's status.history. A commit made while the one before
	// rolls out may be synced twice by a cluster, as requests pinned to either revision cross there
	// (logged).
	syncedOnce := func(sha string, once bool) {
		t.Helper()
		for _, cluster := range []string{"cluster1", "cluster2"} {
			app := argocd.NewApplication()
			if err := spokes[cluster].Get(ctx, key(cluster), app); err != nil {
				t.Fatal(err)
			}
			history, _, _ := unstructured.NestedSlice(app.Object, "status", "history")
			n := 0
			for _, h := range history {
				if m, ok := h.(map[string]any); ok && m["revision"] == sha {
					n++
				}
			}
			// Each of the ApplicationSet controller's requests runs once (runs above fails the test
			// otherwise), and it makes one per step: Argo CD 3.4+ writes a step's request again in
			// the reconcile that moves the step on (argo-cd#21502), which finds the finished request
			// still on the hub (manifestwork.HeldForStep) and adds no sync.
			switch {
			case n == 0:
				t.Errorf("%s never synced %s (status.history: %v)", cluster, sha, history)
			case n > 1 && once:
				t.Errorf("%s synced %s %d times (status.history: %v)", cluster, sha, n, history)
			case n > 1:
				t.Logf("%s synced %s %d times", cluster, sha, n)
			}
		}
	}
	// runs records, for each delivery ID a managed cluster's Argo CD started, the operations it
	// started under it (their startedAt), looked at every 200 ms while the rollout runs. The
	// ApplicationSet controller may request a step's sync twice (two requests, two IDs); one
	// request run twice (a redelivery) is one ID with two starts, and fails the test.
	var runsMu sync.Mutex
	runs := map[string]map[string]bool{}
	stopWatching := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			for _, cluster := range []string{"cluster1", "cluster2"} {
				app := argocd.NewApplication()
				if spokes[cluster].Get(ctx, key(cluster), app) != nil {
					continue
				}
				op, _, _ := unstructured.NestedMap(app.Object, "status", "operationState", "operation")
				started, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "startedAt")
				if id := manifestwork.DeliveryID(op); id != "" && started != "" {
					runsMu.Lock()
					if runs[cluster+" "+id] == nil {
						runs[cluster+" "+id] = map[string]bool{}
					}
					runs[cluster+" "+id][started] = true
					runsMu.Unlock()
				}
			}
			select {
			case <-stopWatching:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() {
		close(stopWatching)
		<-watched
		twice := 0
		for id, starts := range runs {
			if len(starts) > 1 {
				twice++
				t.Errorf("%s: one sync request run %d times (started at %v): a redelivery", id, len(starts), slices.Sorted(maps.Keys(starts)))
			}
		}
		t.Logf("%d sync requests started on the managed clusters, %d of them more than once", len(runs), twice)
	})

	// converge waits until both clusters run revision, checking the order on every look.
	converge := func(revision, sha string, timeout time.Duration) {
		t.Helper()
		eventually(t, "revision "+revision+" Synced and Healthy on both clusters, cluster1 first", timeout, "hub-argocd-applicationset-controller.log", func() (bool, error) {
			// The ApplicationSet controller may request cluster1's sync again after its step went
			// on, which shows it in flight on the hub meanwhile: then the clusters' records say
			// whether cluster1 had finished the revision before cluster2 started it.
			if configMapData(spokes["cluster2"], "rollout", "rollout", "revision") == revision && !healthyAt("cluster1", sha) {
				finished, started := deployed(spokes["cluster1"], key("cluster1"), sha), deployed(spokes["cluster2"], key("cluster2"), sha)
				if finished.at == "" || started.startedAt == "" || finished.at > started.startedAt {
					t.Fatalf("revision %s reached cluster2 (its sync started at %q) before cluster1 had deployed it (at %q), and cluster1's hub Application is not Synced and Healthy at %s; now:%s",
						revision, started.startedAt, finished.at, sha, rolloutEvidence(hub, spokes, "rollout", key))
				}
			}
			return healthyAt("cluster1", sha) && healthyAt("cluster2", sha), nil
		})
	}

	sha1 := rollout("one", false)
	createAppSet(t, hub, rolloutAppSet)
	converge("one", sha1, 3*time.Minute)

	// Two successive commits, each rolled out step by step.
	for _, revision := range []string{"two", "three"} {
		committed := time.Now()
		sha := rollout(revision, false)
		// The case the hub's RollingSync barrier is for (appstatus.Member): the later step's
		// cluster finds the commit first, its Argo CD asked to refresh on the cluster itself, while
		// cluster1 finds it only on its next periodic refresh.
		if err := spokes["cluster2"].Patch(ctx, argocdApp(key("cluster2")), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"argocd.argoproj.io/refresh":"normal"}}}`))); err != nil {
			t.Fatal(err)
		}
		converge(revision, sha, 3*time.Minute)
		t.Logf("revision %s: commit to the last step Synced and Healthy on the hub in %.1fs", revision, time.Since(committed).Seconds())
		syncedOnce(sha, true)
		// What a user waiting on the rollout with Argo CD's CLI sees: no operation left running. A
		// step's finished sync may still be held on the hub, shown Running, until the
		// ApplicationSet counted it Healthy (at most 10 s once it read it Progressing).
		for _, cluster := range []string{"cluster1", "cluster2"} {
			if out, err := cli.run(time.Minute, "app", "wait", sandbox.ArgoNamespace+"/"+key(cluster).Name, "--operation", "--sync", "--health", "--timeout", "30"); err != nil {
				t.Errorf("argocd app wait --operation on %s after revision %s: %v\n%s", cluster, revision, err, out)
			}
		}
	}

	// cluster1 already holds an immutable ConfigMap of a name the next revision adds: its sync
	// fails there. The revision must not reach cluster2 while it fails.
	blocker := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "rollout-extra", Namespace: "rollout"},
		Immutable: ptr.To(true), Data: map[string]string{"a": "set by hand"}}
	// Left by an earlier run of this test (go test -count) if its Applications were not yet gone.
	_ = spokes["cluster1"].Delete(ctx, &corev1.ConfigMap{ObjectMeta: blocker.ObjectMeta})
	eventually(t, "no rollout-extra on cluster1", 30*time.Second, "cluster1-apiserver.log", func() (bool, error) {
		return apierrors.IsNotFound(spokes["cluster1"].Get(ctx, client.ObjectKeyFromObject(blocker), &corev1.ConfigMap{})), nil
	})
	if err := spokes["cluster1"].Create(ctx, blocker); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = spokes["cluster1"].Delete(ctx, blocker, client.Preconditions{UID: ptr.To(blocker.UID)}) })
	sha4 := rollout("four", true)
	eventually(t, "the sync of revision four failing on cluster1", 2*time.Minute, "cluster1-argocd-application-controller.log", func() (bool, error) {
		app := argocd.NewApplication()
		if err := hub.Get(ctx, key("cluster1"), app); err != nil {
			return false, err
		}
		message, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "message")
		return regexpImmutable.MatchString(message), nil
	})
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		if got := configMapData(spokes["cluster2"], "rollout", "rollout", "revision"); got != "three" {
			t.Fatalf("cluster2 runs revision %q while revision four fails on cluster1", got)
		}
		if healthyAt("cluster1", sha4) {
			t.Fatalf("cluster1's hub Application reads Synced and Healthy at a revision that failed there")
		}
	}
	if err := spokes["cluster1"].Delete(ctx, blocker, client.Preconditions{UID: ptr.To(blocker.UID)}); err != nil {
		t.Fatal(err)
	}
	converge("four", sha4, 5*time.Minute)
	syncedOnce(sha4, true)
	if got := configMapData(spokes["cluster2"], "rollout", "rollout-extra", "a"); got != "from git" {
		t.Errorf("cluster2's rollout-extra = %q after the rollout went on", got)
	}

	// A second commit mid-rollout: six lands as soon as the first step runs five. Six goes
	// through the steps again in order (converge checks it on every look), and runs once on each
	// cluster; the second step's request for five, if it came, is pinned to five and never counts
	// for six.
	sha5 := rollout("five", true)
	eventually(t, "cluster1 at revision five", 3*time.Minute, "hub-argocd-applicationset-controller.log", func() (bool, error) {
		return healthyAt("cluster1", sha5), nil
	})
	sha6 := rollout("six", true)
	converge("six", sha6, 5*time.Minute)
	syncedOnce(sha6, false)
	checkReconciledAt()
}

// regexpImmutable matches Argo CD's message for a change to an immutable ConfigMap.
var regexpImmutable = regexp.MustCompile(`(?i)immutable`)

// createAppSet creates the ApplicationSet manifest (YAML) on the hub with the lab's Git repository
// as its template's source, and deletes it when the test ends.
func createAppSet(t *testing.T, hub client.Client, manifest string) {
	t.Helper()
	appSet := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &appSet.Object); err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(appSet.Object, lab.RepoURL, "spec", "template", "spec", "source", "repoURL")
	if err := hub.Create(ctx, appSet); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hub.Delete(ctx, appSet) })
}

// rolloutOf creates the lab's rollout ApplicationSet under another name (<name>-rollout, its
// Applications <cluster>-<name>, deploying the repository's <name> directory into namespace
// <name>), commits revision one there and waits until both clusters run it. It returns a commit of
// a revision to that directory, the key of a cluster's hub Application, and revision one's SHA.
func rolloutOf(t *testing.T, hub client.Client, name string) (commit func(revision string) string, key func(cluster string) types.NamespacedName, sha1 string) {
	t.Helper()
	commit = func(revision string) string {
		t.Helper()
		sha, err := lab.CommitFiles(name+" "+revision, map[string]string{name + "/rollout.yaml": configMap(name, nil, map[string]string{"revision": revision})})
		if err != nil {
			t.Fatal(err)
		}
		return sha
	}
	key = func(cluster string) types.NamespacedName {
		return types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: cluster + "-" + name}
	}
	manifest := strings.NewReplacer("name: rollout\n", "name: "+name+"-rollout\n", "'{{name}}-rollout'", "'{{name}}-"+name+"'",
		"path: rollout", "path: "+name, "namespace: rollout", "namespace: "+name).Replace(rolloutAppSet)
	sha1 = commit("one")
	createAppSet(t, hub, manifest)
	eventually(t, "revision one Synced and Healthy on both clusters", 3*time.Minute, "hub-argocd-applicationset-controller.log", func() (bool, error) {
		return doneAt(hub, key("cluster1"), sha1) && doneAt(hub, key("cluster2"), sha1), nil
	})
	return commit, key, sha1
}

// appSetStatusOf is the ApplicationSet controller's status for one Application of set
// ("Waiting", "Pending", "Progressing", "Healthy"), "" when it lists none.
func appSetStatusOf(hub client.Client, set, app string) string {
	s := &unstructured.Unstructured{}
	s.SetGroupVersionKind(argocd.ApplicationSetGVK)
	if hub.Get(ctx, types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: set}, s) != nil {
		return ""
	}
	statuses, _, _ := unstructured.NestedSlice(s.Object, "status", "applicationStatus")
	for _, st := range statuses {
		if m, ok := st.(map[string]any); ok && m["application"] == app {
			status, _ := m["status"].(string)
			return status
		}
	}
	return ""
}

// A RollingSync step whose cluster is cut off: the rollout waits at that step and never counts it
// done (its hub Application shows the new spec not applied: Progressing, OutOfSync), and the report
// says why (StaleStatus); once the cluster is back, the rollout finishes.
func TestRollingSyncWaitsForAStaleStep(t *testing.T) {
	requireLab(t)
	hub, spokes := clients(t)
	commit, key, _ := rolloutOf(t, hub, "stale")
	healthyAt := func(cluster, sha string) bool { return doneAt(hub, key(cluster), sha) }

	// cluster2 (the second step) is cut off; a new revision is committed.
	if err := lab.Stop("cluster2-agents"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lab.Start(ctx, "cluster2-agents") })
	sha2 := commit("two")
	eventually(t, "cluster1 at revision two", 3*time.Minute, "hub-argocd-applicationset-controller.log", func() (bool, error) {
		return healthyAt("cluster1", sha2), nil
	})
	window := 5*sandbox.LeaseDurationSeconds*time.Second + time.Minute
	eventually(t, "cluster2 stale in the ApplicationSet's report", window, "hub-argocd-pull.log", func() (bool, error) {
		r := &v1alpha1.MulticlusterApplicationSetReport{}
		if err := hub.Get(ctx, types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: "stale-rollout"}, r); err != nil {
			return false, err
		}
		for _, cc := range r.Statuses.ClusterConditions {
			if cc.Cluster == "cluster2" && len(cc.Conditions) > 0 && cc.Conditions[0].Type == "StaleStatus" {
				return true, nil
			}
		}
		return false, fmt.Errorf("report: %+v", r.Statuses.ClusterConditions)
	})
	// Its hub Application says so too, as argocd app get shows it.
	staleOnHub := func() string {
		app := argocd.NewApplication()
		if err := hub.Get(ctx, key("cluster2"), app); err != nil {
			return err.Error()
		}
		return argocd.ConditionMessage(app, appstatus.StaleCondition)
	}
	eventually(t, "cluster2's hub Application says its status is stale", 30*time.Second, "hub-argocd-pull.log", func() (bool, error) {
		msg := staleOnHub()
		return strings.HasPrefix(msg, "no status from cluster2 since "), fmt.Errorf("condition %s: %q", appstatus.StaleCondition, msg)
	})
	// As a user reads it: argocd app get, through Argo CD's API server, lists the condition.
	if out, err := loginArgoCD(t).run(time.Minute, "app", "get", sandbox.ArgoNamespace+"/"+key("cluster2").Name); err != nil ||
		!regexp.MustCompile(`(?m)^`+appstatus.StaleCondition+`\s+no status from cluster2 since `).MatchString(out) {
		t.Errorf("argocd app get does not show %s for cluster2: %v\n%s", appstatus.StaleCondition, err, out)
	}
	// The step waits: cluster2 is never counted done at revision two while it is cut off.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		if healthyAt("cluster2", sha2) {
			t.Fatal("cluster2's hub Application reads Synced and Healthy at revision two while cut off")
		}
		if status := appSetStatusOf(hub, "stale-rollout", key("cluster2").Name); status == "Healthy" {
			// Healthy at revision one is what it was; at two it must not be: the ApplicationSet
			// status names no revision, so read the hub Application's alongside.
			if _, _, revision := hubState(hub, key("cluster2")); revision == sha2 {
				t.Fatal("the ApplicationSet counts cluster2's step done at revision two while it is cut off")
			}
		}
		if configMapData(spokes["cluster2"], "stale", "stale", "revision") == "two" {
			t.Fatal("revision two reached cluster2 while it was cut off")
		}
	}

	if err := lab.Start(ctx, "cluster2-agents"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "cluster2 at revision two once back", 3*time.Minute, "hub-argocd-applicationset-controller.log", func() (bool, error) {
		return healthyAt("cluster2", sha2) && configMapData(spokes["cluster2"], "stale", "stale", "revision") == "two", nil
	})
	eventually(t, "cluster2's hub Application current again", 30*time.Second, "hub-argocd-pull.log", func() (bool, error) {
		msg := staleOnHub()
		return msg == "", fmt.Errorf("condition %s: %q", appstatus.StaleCondition, msg)
	})
}

// A RollingSync step whose Application is paused, as an operator pauses one during an incident
// (argocd-pull pause application): the real ApplicationSet controller replaces the annotations it
// does not keep, so the pause is refused until the ApplicationSet keeps the annotation (an
// annotation written past the CLI is gone within a reconcile). Kept, the pause holds through a
// commit: the first step rolls, the paused step never counts done and never receives the revision,
// and the report and its hub Application say why; resumed, the rollout finishes.
func TestAPausedStepHoldsItsRollout(t *testing.T) {
	requireLab(t)
	hub, spokes := clients(t)
	commit, key, _ := rolloutOf(t, hub, "paused")
	cluster2 := key("cluster2")
	pullCLI := func(args ...string) (string, error) {
		out, err := exec.Command(filepath.Join(labDir, "argocd-pull"), append(args, "-n", sandbox.ArgoNamespace, "--kubeconfig", lab.Hub.Kubeconfig)...).CombinedOutput()
		return string(out), err
	}
	pausedAnnotation := func() (string, bool) {
		app := argocd.NewApplication()
		if err := hub.Get(ctx, cluster2, app); err != nil {
			return err.Error(), true
		}
		v, ok := app.GetAnnotations()[api.PausedAnnotation]
		return v, ok
	}

	// Refused while the ApplicationSet does not keep the annotation, and rightly: written past the
	// CLI, the ApplicationSet controller removes it.
	if out, err := pullCLI("pause", "application", cluster2.Name, "--reason", "INC-7"); err == nil ||
		!strings.Contains(out, "the pause would not hold") || !strings.Contains(out, "argocd-pull pause applicationset paused-rollout") {
		t.Fatalf("pause of an Application its ApplicationSet would resume: %v\n%s", err, out)
	}
	retry(t, nil, "annotating cluster2's Application past the CLI", func() error {
		app := argocd.NewApplication()
		if err := hub.Get(ctx, cluster2, app); err != nil {
			return err
		}
		a := app.GetAnnotations()
		a[api.PausedAnnotation] = "INC-7" // beside the template's: the Application stays pull-model
		app.SetAnnotations(a)
		return hub.Update(ctx, app)
	})
	eventually(t, "the ApplicationSet controller removing the annotation it does not keep", 2*time.Minute, "hub-argocd-applicationset-controller.log", func() (bool, error) {
		v, ok := pausedAnnotation()
		return !ok, fmt.Errorf("annotation %q", v)
	})

	// The ApplicationSet keeps it: the pause is taken, and holds through a commit.
	retry(t, nil, "keeping the pause annotation on the ApplicationSet", func() error {
		set := argocd.NewApplicationSet()
		if err := hub.Get(ctx, types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: "paused-rollout"}, set); err != nil {
			return err
		}
		if err := unstructured.SetNestedStringSlice(set.Object, []string{api.PausedAnnotation}, "spec", "preservedFields", "annotations"); err != nil {
			return err
		}
		return hub.Update(ctx, set)
	})
	if out, err := pullCLI("pause", "application", cluster2.Name, "--reason", "INC-7"); err != nil {
		t.Fatalf("pause: %v\n%s", err, out)
	}
	eventually(t, "cluster2's hub Application paused", time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		app := argocd.NewApplication()
		if err := hub.Get(ctx, cluster2, app); err != nil {
			return false, err
		}
		msg := argocd.ConditionMessage(app, api.PausedCondition)
		return strings.Contains(msg, "INC-7"), fmt.Errorf("condition %s: %q", api.PausedCondition, msg)
	})
	// As a user reads it: argocd app get, through Argo CD's API server, lists the condition.
	if out, err := loginArgoCD(t).run(time.Minute, "app", "get", sandbox.ArgoNamespace+"/"+cluster2.Name); err != nil ||
		!regexp.MustCompile(`(?m)^`+api.PausedCondition+`\s+delivery paused by the Application \(INC-7\)`).MatchString(out) {
		t.Errorf("argocd app get does not show %s for cluster2: %v\n%s", api.PausedCondition, err, out)
	}
	sha2 := commit("two")
	eventually(t, "cluster1 at revision two", 3*time.Minute, "hub-argocd-applicationset-controller.log", func() (bool, error) {
		return doneAt(hub, key("cluster1"), sha2), nil
	})
	eventually(t, "cluster2 paused in the ApplicationSet's report", time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		r := &v1alpha1.MulticlusterApplicationSetReport{}
		if err := hub.Get(ctx, types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: "paused-rollout"}, r); err != nil {
			return false, err
		}
		for _, cc := range r.Statuses.ClusterConditions {
			for _, c := range cc.Conditions {
				if cc.Cluster == "cluster2" && c.Type == "Paused" && strings.Contains(c.Message, "INC-7") {
					return true, nil
				}
			}
		}
		return false, fmt.Errorf("report: %+v", r.Statuses.ClusterConditions)
	})
	// The step waits, and the pause survives the ApplicationSet controller's reconciles (its
	// generator requeues every 30 s).
	for deadline := time.Now().Add(45 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		if v, ok := pausedAnnotation(); !ok || v != "INC-7" {
			t.Fatalf("the pause annotation on cluster2's Application is now %q (present %v)", v, ok)
		}
		if doneAt(hub, cluster2, sha2) {
			t.Fatal("cluster2's hub Application reads Synced and Healthy at revision two while paused")
		}
		if configMapData(spokes["cluster2"], "paused", "paused", "revision") != "one" {
			t.Fatal("cluster2 no longer runs revision one while paused")
		}
	}

	if out, err := pullCLI("resume", "application", cluster2.Name); err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	eventually(t, "cluster2 at revision two once resumed", 3*time.Minute, "hub-argocd-applicationset-controller.log", func() (bool, error) {
		return doneAt(hub, cluster2, sha2) && configMapData(spokes["cluster2"], "paused", "paused", "revision") == "two", nil
	})
}

// A cluster held behind its fleet by the RollingSync barrier is freed when the ApplicationSet
// stops using RollingSync, and when the cluster that went ahead leaves it; Argo CD's API server
// shows it so. cluster1's Argo CD is stopped, so cluster1 keeps reporting Synced at the old
// revision (its work agent still runs), while cluster2 finds the new commit and reports OutOfSync
// at it: cluster1 is behind.
func TestRollingSyncFreesAClusterHeldBehind(t *testing.T) {
	requireLab(t)
	hub, _ := clients(t)
	commit, key, sha1 := rolloutOf(t, hub, "held")
	cli := loginArgoCD(t)
	// shows is cluster1's sync status and revision as `argocd app get` reads them from Argo CD's
	// API server.
	shows := func(want, sha string) func() (bool, error) {
		return func() (bool, error) {
			out, err := cli.run(time.Minute, "app", "get", sandbox.ArgoNamespace+"/"+key("cluster1").Name, "-o", "json")
			if err != nil {
				return false, fmt.Errorf("argocd app get: %v: %s", err, out)
			}
			var app struct {
				Status struct {
					Sync struct{ Status, Revision string }
				}
			}
			if err := json.Unmarshal([]byte(out), &app); err != nil {
				return false, fmt.Errorf("argocd app get: %v: %s", err, out)
			}
			got := app.Status.Sync
			return got.Status == want && got.Revision == sha, fmt.Errorf("argocd app get: %s at %s", got.Status, got.Revision)
		}
	}

	if err := lab.Stop("cluster1-argocd-application-controller"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lab.Start(ctx, "cluster1-argocd-application-controller") })
	sha2 := commit("two")
	eventually(t, "cluster2 OutOfSync at revision two, cluster1 held behind", 2*time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		sync2, _, rev2 := hubState(hub, key("cluster2"))
		return sync2 == "OutOfSync" && rev2 == sha2, nil
	})
	// Held behind: OutOfSync at the revision its fleet went ahead to (Argo CD 3.4+'s RollingSync
	// waits again only on a changed revision), though its cluster still reports revision one.
	eventually(t, "cluster1 OutOfSync at revision two, through argocd app get", 30*time.Second, "hub-argocd-pull.log", shows("OutOfSync", sha2))

	patch := func(spec map[string]any) {
		t.Helper()
		set := &unstructured.Unstructured{}
		set.SetGroupVersionKind(argocd.ApplicationSetGVK)
		set.SetNamespace(sandbox.ArgoNamespace)
		set.SetName("held-rollout")
		data, _ := json.Marshal(map[string]any{"spec": spec})
		if err := hub.Patch(ctx, set, client.RawPatch(types.MergePatchType, data)); err != nil {
			t.Fatal(err)
		}
	}
	// The ApplicationSet stops using RollingSync: cluster1 reads what its cluster reports.
	strategy := argocd.NewApplicationSet()
	if err := hub.Get(ctx, types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: "held-rollout"}, strategy); err != nil {
		t.Fatal(err)
	}
	rolling, _, _ := unstructured.NestedMap(strategy.Object, "spec", "strategy")
	patch(map[string]any{"strategy": nil})
	eventually(t, "cluster1 Synced at revision one once the ApplicationSet left RollingSync", 30*time.Second, "hub-argocd-pull.log", shows("Synced", sha1))

	// Back to RollingSync: held behind again.
	patch(map[string]any{"strategy": rolling})
	eventually(t, "cluster1 OutOfSync at revision two again under RollingSync", 30*time.Second, "hub-argocd-pull.log", shows("OutOfSync", sha2))

	// The cluster that went ahead leaves the ApplicationSet (its generator passes cluster2 over):
	// its Application is deleted, and cluster1 is free.
	generators, _, _ := unstructured.NestedSlice(strategy.Object, "spec", "generators")
	generators[0].(map[string]any)["selector"] = map[string]any{"matchExpressions": []any{
		map[string]any{"key": "name", "operator": "NotIn", "values": []any{"cluster2"}}}}
	patch(map[string]any{"generators": generators})
	eventually(t, "cluster2's Application gone", 2*time.Minute, "hub-argocd-applicationset-controller.log", func() (bool, error) {
		return apierrors.IsNotFound(hub.Get(ctx, key("cluster2"), argocd.NewApplication())), nil
	})
	eventually(t, "cluster1 Synced at revision one once cluster2 left", 30*time.Second, "hub-argocd-pull.log", shows("Synced", sha1))
}

// A rollout made by changing the ApplicationSet template's targetRevision (a tag or a commit, as
// platform teams bump a release), with the real ApplicationSet controller: each cluster syncs the
// new revision in its step, not the revision its cluster compared under the old targetRevision
// (a step's request pinned to it would deploy the old commit under the new source, and leave the
// cluster OutOfSync and Healthy: manifestwork.HubOf).
func TestATemplatesNewTargetRevisionRollsOutThatRevision(t *testing.T) {
	requireLab(t)
	hub, spokes := clients(t)
	commit, key, sha1 := rolloutOf(t, hub, "bumped")
	setTarget := func(revision string) {
		t.Helper()
		retry(t, nil, "setting the template's targetRevision to "+revision, func() error {
			set := argocd.NewApplicationSet()
			if err := hub.Get(ctx, types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: "bumped-rollout"}, set); err != nil {
				return err
			}
			if err := unstructured.SetNestedField(set.Object, revision, "spec", "template", "spec", "source", "targetRevision"); err != nil {
				return err
			}
			return hub.Update(ctx, set)
		})
	}
	// Pinned to revision one's commit, the clusters no longer follow main.
	setTarget(sha1)
	sha2 := commit("two")
	setTarget(sha2)
	eventually(t, "revision two Synced and Healthy on both clusters, its ConfigMap there", 4*time.Minute, "hub-argocd-applicationset-controller.log", func() (bool, error) {
		for _, cluster := range []string{"cluster1", "cluster2"} {
			if !doneAt(hub, key(cluster), sha2) || configMapData(spokes[cluster], "bumped", "bumped", "revision") != "two" {
				sync, health, revision := hubState(hub, key(cluster))
				return false, fmt.Errorf("%s: %s %s at %s, ConfigMap %q", cluster, sync, health, revision, configMapData(spokes[cluster], "bumped", "bumped", "revision"))
			}
		}
		return true, nil
	})
	for _, cluster := range []string{"cluster1", "cluster2"} {
		if d := deployed(spokes[cluster], key(cluster), sha2); d.at == "" {
			t.Errorf("%s's Argo CD has no deployment of %s in its history", cluster, sha2)
		}
	}
}
