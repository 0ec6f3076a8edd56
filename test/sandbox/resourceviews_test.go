package sandbox_test

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/internal/clusteraccess"
	"github.com/argocd-pull/argocd-pull/internal/sandbox"
)

// A Deployment whose Pods run on cluster1's node (the lab's stand-in image, which writes a log
// line every 10 s). Their grace period is 0: they go with their Deployment at once.
var viewsManifests = map[string]string{"views/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: views-web
spec:
  replicas: 2
  selector:
    matchLabels: {app: views-web}
  template:
    metadata:
      labels: {app: views-web}
    spec:
      terminationGracePeriodSeconds: 0
      containers:
      - name: web
        image: registry.invalid/views-web:1
`}

// An Application whose destination names cluster1, once cluster1's secret reaches it through OCM's
// channel (the documents' GitOpsCluster with managedServiceAccountRef), shows cluster1's own tree
// in the hub's Argo CD: the ReplicaSet and the Pods under the Deployment, with uids, read through
// the real cluster-proxy as the ManagedServiceAccount; and argocd app get-resource answers with
// the live manifest from cluster1, a value set there by hand included. Scaled on cluster1 by hand,
// the Deployment's live state and its diff from Git show in argocd app manifests --source live and
// argocd app diff, and in the UI's resource panel (its summary, Diff and EVENTS, from cluster1);
// argocd app logs and the panel's LOGS get cluster1's own answer. The web terminal on a Pod runs
// its exec on cluster1 only, as the read-only account, which refuses it (the apiservers' audit
// logs). Writes still reach nothing: cluster1's Deployment is unchanged. Single-source, and
// multi-source as the documents' own Applications are.
func TestAnApplicationOnItsClustersChannelShowsTheClustersOwnTree(t *testing.T) {
	ctx, hub, cluster1, cli := onTheChannel(t, 8*time.Minute, "a Deployment for the views", viewsManifests)

	for form, multiSource := range map[string]bool{"single-source": false, "multi-source": true} {
		t.Run(form, func(t *testing.T) { showsTheClustersOwnTree(ctx, t, hub, cluster1, cli, "views-"+form, multiSource) })
	}
}

// showsTheClustersOwnTree delivers an Application of the views path named name to cluster1 by its
// name and reads its tree and a live manifest through the hub's Argo CD.
func showsTheClustersOwnTree(ctx context.Context, t *testing.T, hub, cluster1 client.Client, cli argocdCLI, appName string, multiSource bool) {
	app := uiApp(appName, "views", "views", multiSource)
	deployment := types.NamespacedName{Namespace: "views", Name: "views-web"}
	name := deliverOnItsChannel(ctx, t, hub, cluster1, app, "views", &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: deployment.Namespace, Name: deployment.Name}})

	// The tree: cluster1's ReplicaSet and both Pods under the Deployment.
	var tree string
	eventually(t, "argocd app resources showing cluster1's ReplicaSet and Pods under the Deployment", 4*time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		out, err := cli.run(time.Minute, "app", "resources", name, "--output", "tree=detailed")
		tree = out
		return err == nil && strings.Contains(out, "ReplicaSet") && strings.Count(out, "Pod") >= 2, fmt.Errorf("%v: %s", err, out)
	})
	t.Logf("argocd app resources %s --output tree=detailed:\n%s", name, tree)

	// The live manifest from cluster1: a value set there by hand, which no Git or hub holds.
	changeByHand(ctx, t, cluster1, deployment, func(d *appsv1.Deployment) {
		if d.Annotations == nil {
			d.Annotations = map[string]string{}
		}
		d.Annotations["views.argocd-pull.test/set-on"] = "cluster1-by-hand"
	})
	live := &appsv1.Deployment{}
	if err := cluster1.Get(ctx, deployment, live); err != nil {
		t.Fatal(err)
	}
	var manifest string
	eventually(t, "argocd app get-resource answering with cluster1's live Deployment", time.Minute, "hub-argocd-server.log", func() (bool, error) {
		out, err := cli.run(time.Minute, "app", "get-resource", name, "--kind", "Deployment", "--resource-name", "views-web", "-o", "yaml")
		manifest = out
		return err == nil && strings.Contains(out, "cluster1-by-hand") && strings.Contains(out, string(live.UID)), fmt.Errorf("%v: %s", err, out)
	})
	t.Logf("argocd app get-resource %s --kind Deployment --resource-name views-web -o yaml:\n%s", name, manifest)

	// Scaled on cluster1 by hand (the automated sync does not heal): cluster1's Argo CD reports
	// the Deployment OutOfSync, and the hub reads it again. Its live state and its diff from Git
	// come from cluster1 and the hub's repo-server.
	scaleByHand(ctx, t, cluster1, deployment, 3)
	eventually(t, "argocd app manifests --source live showing cluster1's 3 replicas", 3*time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		out, err := cli.run(time.Minute, "app", "manifests", name, "--source", "live")
		manifest = out
		return err == nil && strings.Contains(out, "replicas: 3") && strings.Contains(out, "cluster1-by-hand"), fmt.Errorf("%v: %s", err, out)
	})
	t.Logf("argocd app manifests %s --source live:\n%s", name, manifest)
	var diff string
	eventually(t, "argocd app diff showing cluster1's 3 replicas against Git's 2", time.Minute, "hub-argocd-server.log", func() (bool, error) {
		out, err := cli.run(time.Minute, "app", "diff", name)
		diff = out
		// Exit code 1: a difference was found.
		return strings.Contains(out, "replicas: 3") && strings.Contains(out, "replicas: 2"), fmt.Errorf("%v: %s", err, out)
	})
	t.Logf("argocd app diff %s:\n%s", name, diff)

	// Logs reach cluster1's apiserver as the ManagedServiceAccount, and its kubelet: the Pods run
	// on cluster1's node, from the lab's stand-in image, which writes a line every 10 s.
	pod := runningPodOn(ctx, t, cluster1, "views", "views-web")
	const standIn = "the lab's stand-in for registry.invalid/views-web:1"
	var logs string
	eventually(t, "argocd app logs showing the Pods' own lines from cluster1", time.Minute, "hub-argocd-server.log", func() (bool, error) {
		out, err := cli.run(time.Minute, "app", "logs", name, "--group", "apps", "--kind", "Deployment", "--name", "views-web", "--namespace", "views")
		logs = out
		return err == nil && strings.Contains(out, standIn) && strings.Contains(out, pod), fmt.Errorf("%v: %s", err, out)
	})
	t.Logf("argocd app logs %s --group apps --kind Deployment --name views-web --namespace views:\n%s", name, logs)

	// The UI: the resource panel of the Deployment, its live manifest from cluster1 (the value
	// set by hand, the 3 replicas), its Diff from Git, and cluster1's EVENTS.
	ui := openArgoUI(t)
	panel := "/applications/" + sandbox.ArgoNamespace + "/" + app.GetName() + "?node=" + url.QueryEscape("apps/Deployment/views/views-web/0")
	ui.visit("resource-panel-"+app.GetName(), panel+"&tab=summary")
	ui.waitText("the Deployment's live manifest from cluster1", ".sliding-panel__body", time.Minute, "OutOfSync", "cluster1-by-hand", "replicas: 3")
	ui.click("DIFF", ".sliding-panel__body *", "DIFF")
	ui.waitText("the Deployment's diff from Git", ".sliding-panel__body", time.Minute, "replicas: 3", "replicas: 2")
	ui.click("EVENTS", ".sliding-panel__body *", "EVENTS")
	ui.waitText("cluster1's events of the Deployment", ".sliding-panel__body", time.Minute, "ScalingReplicaSet")
	// LOGS: the API server asks cluster1's apiserver, as the ManagedServiceAccount, for the logs
	// of the Deployment's Pods, and the panel shows their lines, from cluster1's kubelet.
	ui.click("LOGS", ".sliding-panel__body *", "LOGS")
	ui.waitText("the Deployment's logs from cluster1's Pods", ".sliding-panel__body", time.Minute, standIn)
	ui.noErrorToasts()

	// The terminal: Argo CD finds the Pod by its uid in cluster1's tree and runs a shell in it on
	// cluster1, as the read-only account, which cluster1 refuses (its audit log's 403); nothing
	// runs in a Pod of the hub.
	terminalReachesOnlyTheCluster(ctx, t, hub, cluster1, app.GetName(), types.NamespacedName{Namespace: "views", Name: pod}, "web")

	// The write verbs reach cluster1, which refuses each as the read-only account (its own 403,
	// naming the ManagedServiceAccount): a delete, a patch, and Argo CD's built-in restart of a
	// Deployment (a patch of its template). cluster1's Deployment stays as it was.
	before := &appsv1.Deployment{}
	if err := cluster1.Get(ctx, deployment, before); err != nil {
		t.Fatal(err)
	}
	object := []string{"--kind", "Deployment", "--resource-name", "views-web", "--namespace", "views"}
	for _, verb := range [][]string{
		append([]string{"app", "delete-resource", name}, object...),
		append([]string{"app", "patch-resource", name, "--patch", `{"spec":{"replicas":0}}`, "--patch-type", "application/merge-patch+json"}, object...),
		append([]string{"app", "actions", "run", name, "restart"}, object...),
	} {
		out, err := cli.run(time.Minute, verb...)
		if err == nil || !refusedByTheAccount(out) {
			t.Errorf("argocd %s on cluster1's Deployment: %v, want cluster1's 403 to the read-only account\n%s", strings.Join(verb[:2], " "), err, out)
		}
		t.Logf("argocd %s: %s", strings.Join(verb[:2], " "), strings.TrimSpace(out))
	}
	after := &appsv1.Deployment{}
	if err := cluster1.Get(ctx, deployment, after); err != nil || after.UID != live.UID || after.DeletionTimestamp != nil || after.ResourceVersion != before.ResourceVersion {
		t.Errorf("cluster1's Deployment after the write verbs: %v, uid %s (was %s), deleting %v, resourceVersion %s (was %s)", err, after.UID, live.UID, after.DeletionTimestamp, after.ResourceVersion, before.ResourceVersion)
	}
}

// refusedByTheAccount says whether the argocd CLI's answer is a managed cluster's own 403 to the
// hub's read-only account (the ManagedServiceAccount argocd-pull, in managed-serviceaccount's
// namespace): the verb reached the cluster, as that account, and the cluster refused it.
func refusedByTheAccount(out string) bool {
	return strings.Contains(out, "is forbidden") && strings.Contains(out, "system:serviceaccount:"+clusteraccess.DefaultServiceAccountNamespace+":argocd-pull") &&
		strings.Contains(out, "cannot ")
}

// runningPodOn waits until a Pod of the Deployment name in ns of cluster runs on the cluster's
// node (the scheduler placed it, the kubelet started it: node.go) and returns its name.
func runningPodOn(ctx context.Context, t *testing.T, cluster client.Client, ns, name string) string {
	t.Helper()
	var running string
	eventually(t, "a Pod of "+name+" running on "+sandbox.Node("cluster1"), 2*time.Minute, "cluster1-kubelet.log", func() (bool, error) {
		pods := &corev1.PodList{}
		if err := cluster.List(ctx, pods, client.InNamespace(ns)); err != nil {
			return false, err
		}
		var seen []string
		for i := range pods.Items {
			p := &pods.Items[i]
			if !strings.HasPrefix(p.Name, name+"-") || p.DeletionTimestamp != nil {
				continue
			}
			if p.Spec.NodeName == sandbox.Node("cluster1") && p.Status.Phase == corev1.PodRunning {
				running = p.Name
				return true, nil
			}
			seen = append(seen, fmt.Sprintf("%s on %q: %s", p.Name, p.Spec.NodeName, p.Status.Phase))
		}
		return false, fmt.Errorf("no Pod of %s running: %v", name, seen)
	})
	return running
}

// On its cluster's channel, an Application's tree carries the uids of cluster1's objects, so the
// resource-level verbs pass Argo CD's uid guard and act: on cluster1's apiserver, as the
// read-only ManagedServiceAccount, which refuses every write; never on the hub, although cluster1
// holds objects named as the hub's own in its Argo CD namespace (the attacks of
// TestResourceLevelVerbsOnTheHubsTreeReachNoHubObject, in this mode). The Secret, which the
// account never reads, keeps no uid and no states: no verb reaches it, and no answer carries the
// hub's data. The hub's objects and cluster1's are unchanged.
func TestResourceLevelVerbsOnTheClustersOwnTreeReachOnlyTheClusterReadOnly(t *testing.T) {
	ctx, hub, cluster1, cli := onTheChannel(t, 8*time.Minute, "objects named as the hub's", hubNamedManifests)
	hubSecret, hubConfigMap, hubData := hubNamedObjects(t, hub)
	secretKey, configMapKey := client.ObjectKeyFromObject(hubSecret), client.ObjectKeyFromObject(hubConfigMap)

	app := uiApp("hubnames-channel", "hubnames", sandbox.ArgoNamespace, false)
	name := deliverOnItsChannel(ctx, t, hub, cluster1, app, sandbox.ArgoNamespace, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secretKey.Namespace, Name: secretKey.Name}})
	// cluster1's own ConfigMap, by its uid: the tree is cluster1's.
	eventually(t, "argocd app get-resource answering with cluster1's ConfigMap", 4*time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		out, err := cli.run(time.Minute, "app", "get-resource", name, "--kind", "ConfigMap", "--resource-name", "ocm-placement-generator", "-o", "yaml")
		return err == nil && strings.Contains(out, "cluster1-own"), fmt.Errorf("%v: %s", err, out)
	})
	onCluster1 := &corev1.ConfigMap{}
	if err := cluster1.Get(ctx, configMapKey, onCluster1); err != nil {
		t.Fatal(err)
	}

	configMap := []string{"--kind", "ConfigMap", "--resource-name", "ocm-placement-generator", "--namespace", sandbox.ArgoNamespace}
	secret := []string{"--kind", "Secret", "--resource-name", "argocd-initial-admin-secret", "--namespace", sandbox.ArgoNamespace}
	for _, c := range []struct {
		args []string
		want string // what the error says
	}{
		// The ConfigMap has cluster1's uid: the verbs reach cluster1, which refuses the writes as
		// the read-only account's (a Deployment's restart, a patch that reaches the cluster:
		// TestAnApplicationOnItsClustersChannelShowsTheClustersOwnTree).
		{append([]string{"app", "patch-resource", name, "--patch", `{"data":{"note":"patched"}}`, "--patch-type", "application/merge-patch+json"}, configMap...), accountRefusal},
		{append([]string{"app", "delete-resource", name}, configMap...), accountRefusal},
		// A ConfigMap has no restart: Argo CD refuses it itself.
		{append([]string{"app", "actions", "run", name, "restart"}, configMap...), "built-in script does not exist"},
		// The Secret has no uid: nothing passes the guard.
		{[]string{"app", "get-resource", name, "--kind", "Secret", "--resource-name", "argocd-initial-admin-secret"}, "not found as part of application " + app.GetName()},
		{append([]string{"app", "patch-resource", name, "--patch", `{"data":{"password":"cGF0Y2hlZA=="}}`, "--patch-type", "application/merge-patch+json"}, secret...), "no matching resource found"},
		{append([]string{"app", "delete-resource", name}, secret...), "no matching resource found"},
	} {
		what := "argocd " + strings.Join(c.args[:2], " ") + " " + c.args[slices.Index(c.args, "--kind")+1]
		out, err := cli.run(2*time.Minute, c.args...)
		if err == nil || (c.want == accountRefusal && !refusedByTheAccount(out)) || (c.want != accountRefusal && !strings.Contains(out, c.want)) {
			t.Errorf("%s: %v, want an error saying %q\n%s", what, err, c.want, out)
		}
		for _, v := range hubData {
			if v != "" && strings.Contains(out, v) {
				t.Errorf("%s answered with the hub object's data:\n%s", what, out)
			}
		}
		t.Logf("%s: %s", what, strings.TrimSpace(out))
	}
	// The reads answer with cluster1's objects only; the server-side diff's dry run is a write,
	// which cluster1 refuses.
	for _, c := range []struct {
		args  []string
		fails bool
		want  string
	}{
		{[]string{"app", "manifests", name, "--source", "live"}, false, "note: cluster1-own"},
		{[]string{"app", "diff", name}, false, ""},
		{[]string{"app", "diff", name, "--server-side-diff"}, true, "is forbidden"},
	} {
		what := "argocd " + strings.Join(c.args, " ")
		out, err := cli.run(2*time.Minute, c.args...)
		if (err != nil) != c.fails || !strings.Contains(out, c.want) {
			t.Errorf("%s: %v, want failing %t, saying %q\n%s", what, err, c.fails, c.want, out)
		}
		for _, v := range hubData {
			if v != "" && strings.Contains(out, v) {
				t.Errorf("%s answered with the hub object's data:\n%s", what, out)
			}
		}
		t.Logf("%s: %v\n%s", what, err, strings.TrimSpace(out))
	}

	after, afterConfigMap, afterOnCluster1 := &corev1.Secret{}, &corev1.ConfigMap{}, &corev1.ConfigMap{}
	if err := hub.Get(ctx, secretKey, after); err != nil || after.ResourceVersion != hubSecret.ResourceVersion {
		t.Errorf("the hub's %s changed: %v, resourceVersion %s, was %s", secretKey, err, after.ResourceVersion, hubSecret.ResourceVersion)
	}
	if err := hub.Get(ctx, configMapKey, afterConfigMap); err != nil || afterConfigMap.ResourceVersion != hubConfigMap.ResourceVersion {
		t.Errorf("the hub's %s changed: %v, resourceVersion %s, was %s", configMapKey, err, afterConfigMap.ResourceVersion, hubConfigMap.ResourceVersion)
	}
	if err := cluster1.Get(ctx, configMapKey, afterOnCluster1); err != nil || afterOnCluster1.ResourceVersion != onCluster1.ResourceVersion || afterOnCluster1.Data["note"] != "cluster1-own" {
		t.Errorf("cluster1's %s changed: %v, resourceVersion %s, was %s, data %v", configMapKey, err, afterOnCluster1.ResourceVersion, onCluster1.ResourceVersion, afterOnCluster1.Data)
	}
}

// accountRefusal stands for cluster1's own 403 to the read-only account (refusedByTheAccount).
const accountRefusal = "cluster1's 403 to the read-only account"

// OCM's channel to cluster1 down (its konnectivity agent stopped), an Application on it keeps a
// tree: the next status cluster1 reports (through its work agent, which the channel does not
// carry) gives the display tree, and one ClusterTreeNotRead event says why; delivery and status go
// on. The channel back, the cluster's own tree returns with no change of the Application.
func TestAChannelThatIsDownGivesTheDisplayTreeUntilItIsBack(t *testing.T) {
	ctx, hub, cluster1, cli := onTheChannel(t, 10*time.Minute, "a Deployment for the views", viewsManifests)
	app := uiApp("views-channel-down", "views", "views", false)
	deployment := types.NamespacedName{Namespace: "views", Name: "views-web"}
	name := deliverOnItsChannel(ctx, t, hub, cluster1, app, "views", &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: deployment.Namespace, Name: deployment.Name}})
	tree := func(withPods bool) func() (bool, error) { return viewsTree(cli, name, withPods) }
	eventually(t, "argocd app resources showing cluster1's Pods", 4*time.Minute, "hub-argocd-pull.log", tree(true))

	if err := lab.Stop("cluster1-proxy-agent"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lab.Start(context.Background(), "cluster1-proxy-agent") })
	// The channel's own word for a cluster whose agent is gone (cluster-proxy's proxy server).
	driftToTheDisplayTree(ctx, t, hub, cluster1, cli, app.GetName(), deployment, "No agent available")
	// The cluster reports again (its Deployment scaled back by hand) while the channel is down: the
	// tree is built again, the display tree, and nothing more is said.
	scaleByHand(ctx, t, cluster1, deployment, 2)
	key := types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: app.GetName()}
	eventually(t, "the hub Application Synced again, as cluster1 reports it, with the display tree", 3*time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		sync, _, _ := unstructured.NestedString(hubApp(hub, key).Object, "status", "sync", "status")
		ok, err := tree(false)()
		return sync == "Synced" && ok, fmt.Errorf("sync %q; %v", sync, err)
	})
	if events, err := treeNotReadEvents(ctx, hub, app.GetName()); err != nil || len(events) != 1 || events[0].Count > 1 || (events[0].Series != nil && events[0].Series.Count > 1) {
		t.Errorf("ClusterTreeNotRead events: %v, %+v; want one, said once", err, events)
	}

	if err := lab.Start(ctx, "cluster1-proxy-agent"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "argocd app resources showing cluster1's Pods again", 4*time.Minute, "hub-argocd-pull.log", tree(true))
}

// A token cluster1 refuses: the ManagedServiceAccount's ServiceAccount deleted on cluster1, which
// revokes its token, with the add-on's agent stopped so that none is made again. While the hub's
// tree still holds cluster1's uids, Argo CD's API server asks cluster1 and the argocd CLI shows
// cluster1's own refusal as Argo CD words it, and the UI, which takes any 401 for the end of its own
// session, its login page, the session still valid. argocd-pull's next probe of cluster1 (every 2
// minutes in the lab; the token is revoked just after one) finds the refusal with no change on the
// hub: the display tree, and one ClusterTreeNotRead that names the refusal; delivery and status
// go on. The agent back, it makes the ServiceAccount and a token again, the token reaches
// cluster1's secret on the hub, and cluster1's own tree returns with no change of the Application.
func TestATokenTheClusterRefusesGivesItsOwnErrorAndTheDisplayTree(t *testing.T) {
	ctx, hub, cluster1, cli := onTheChannel(t, 10*time.Minute, "a Deployment for the views", viewsManifests)
	app := uiApp("views-token-refused", "views", "views", false)
	deployment := types.NamespacedName{Namespace: "views", Name: "views-web"}
	name := deliverOnItsChannel(ctx, t, hub, cluster1, app, "views", &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: deployment.Namespace, Name: deployment.Name}})
	eventually(t, "argocd app resources showing cluster1's Pods", 4*time.Minute, "hub-argocd-pull.log", viewsTree(cli, name, true))
	getResource := func() (string, error) {
		return cli.run(time.Minute, "app", "get-resource", name, "--kind", "Deployment", "--resource-name", deployment.Name, "-o", "yaml")
	}
	if out, err := getResource(); err != nil || !strings.Contains(out, "uid:") {
		t.Fatalf("argocd app get-resource before the token is revoked: %v\n%s", err, out)
	}

	agent := "cluster1-" + sandbox.ManagedServiceAccountAddon + "-agent"
	if err := lab.Stop(agent); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lab.Start(context.Background(), agent) })
	// Just after a round of argocd-pull's probes, so that the CLI and the UI meet cluster1's
	// refusal before the next round finds it.
	metrics, err := lab.Addr("hub-argocd-pull-metrics")
	if err != nil {
		t.Fatal(err)
	}
	probes := func(labels ...string) float64 {
		return scrapeCounter(t, metrics, "argocd_pull_cluster_probes_total", labels...)
	}
	before := probes()
	eventually(t, "a round of argocd-pull's probes", 3*time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		n := probes()
		return n > before, fmt.Errorf("%.0f probes", n)
	})
	failedBefore := probes(`result="failed"`)
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: sandbox.AddonInstallNamespace, Name: "argocd-pull"}}
	if err := cluster1.Delete(ctx, account); err != nil {
		t.Fatalf("deleting the ManagedServiceAccount's ServiceAccount on cluster1: %v", err)
	}
	eventually(t, "argocd app get-resource answering with cluster1's refusal of the token", 2*time.Minute, "hub-argocd-server.log", func() (bool, error) {
		out, err := getResource()
		refused := strings.Contains(out, "Unauthorized") || strings.Contains(out, "provide credentials")
		if err != nil && refused {
			t.Logf("argocd app get-resource %s: %s", name, strings.TrimSpace(out))
		}
		return err != nil && refused && !strings.Contains(out, "uid:"), fmt.Errorf("%v: %s", err, out)
	})

	// The UI: the Deployment's panel asks cluster1 for the live object, and Argo CD's UI takes the
	// 401 for the end of its own session: it opens its login page. The session itself stays
	// valid: the applications list opens without logging in again.
	ui := openArgoUI(t)
	panel := "/applications/" + sandbox.ArgoNamespace + "/" + app.GetName() + "?node=" + url.QueryEscape("apps/Deployment/views/views-web/0") + "&tab=summary"
	if err := chromedp.Do(ui.ctx, chromedp.Navigate("http://"+lab.ArgoCD.Addr+panel)); err != nil {
		t.Fatal(err)
	}
	ui.waitFor("Argo CD's login page, its answer to cluster1's 401", time.Minute, `location.pathname === '/login'`)
	ui.shot("login-page-after-a-refused-token")
	if err := chromedp.Do(ui.ctx, chromedp.Navigate("http://"+lab.ArgoCD.Addr+"/applications")); err != nil {
		t.Fatal(err)
	}
	ui.waitFor("the applications list, with no new login", time.Minute, `location.pathname === '/applications' && !!document.querySelector('.applications-list__entry, .applications-list')`)
	_, _ = ui.eval(`window.__argocdPullToasts = []`)

	eventually(t, "argocd app resources without cluster1's Pods, from the probe's next round, with no change of the Application", 3*time.Minute, "hub-argocd-pull.log", viewsTree(cli, name, false))
	if failed := probes(`result="failed"`); failed <= failedBefore {
		t.Fatalf("argocd_pull_cluster_probes_total{result=\"failed\"} is %.0f, as before the token was revoked", failed)
	}
	driftToTheDisplayTree(ctx, t, hub, cluster1, cli, app.GetName(), deployment, "Unauthorized", "provide credentials")

	if err := lab.Start(ctx, agent); err != nil {
		t.Fatal(err)
	}
	eventually(t, "argocd app resources showing cluster1's Pods again, on the agent's new token", 4*time.Minute, "hub-argocd-pull.log", viewsTree(cli, name, true))
	eventually(t, "argocd app get-resource answering with cluster1's Deployment again", time.Minute, "hub-argocd-server.log", func() (bool, error) {
		out, err := getResource()
		return err == nil && strings.Contains(out, "replicas: 3"), fmt.Errorf("%v: %s", err, out)
	})
}

// treeNotReadEvents are the ClusterTreeNotRead events of the hub Application app.
func treeNotReadEvents(ctx context.Context, hub client.Client, app string) ([]corev1.Event, error) {
	events := &corev1.EventList{}
	if err := hub.List(ctx, events, client.InNamespace(sandbox.ArgoNamespace)); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(events.Items, func(e corev1.Event) bool { return e.InvolvedObject.Name != app || e.Reason != "ClusterTreeNotRead" }), nil
}

// viewsTree says whether argocd app resources of name (namespace/name) lists views-web, and
// cluster1's Pods under it (withPods) or none.
func viewsTree(cli argocdCLI, name string, withPods bool) func() (bool, error) {
	return func() (bool, error) {
		out, err := cli.run(time.Minute, "app", "resources", name, "--output", "tree=detailed")
		return err == nil && strings.Contains(out, "views-web") && strings.Contains(out, "Pod") == withPods, fmt.Errorf("%v: %s", err, out)
	}
}

// scaleByHand sets the replicas of cluster's Deployment, as a person with kubectl there would.
func scaleByHand(ctx context.Context, t testing.TB, cluster client.Client, deployment types.NamespacedName, replicas int32) {
	t.Helper()
	changeByHand(ctx, t, cluster, deployment, func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To(replicas) })
}

// changeByHand changes cluster's Deployment with a merge patch, as kubectl does: the cluster's
// controllers write its status meanwhile (its Pods run on the cluster's node), which an update of
// the version read would meet as a conflict.
func changeByHand(ctx context.Context, t testing.TB, cluster client.Client, deployment types.NamespacedName, change func(*appsv1.Deployment)) {
	t.Helper()
	live := &appsv1.Deployment{}
	if err := cluster.Get(ctx, deployment, live); err != nil {
		t.Fatal(err)
	}
	before := live.DeepCopy()
	change(live)
	if err := cluster.Patch(ctx, live, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
}

// driftToTheDisplayTree scales the Deployment app delivers on cluster1 by hand (2 to 3), with
// cluster1's own tree unreadable, and waits for what the hub must still do: the hub Application
// OutOfSync as cluster1's work agent reports it, with the display tree (argocd app resources lists
// no Pod), and one ClusterTreeNotRead event on it whose message says why (one of the words given).
func driftToTheDisplayTree(ctx context.Context, t *testing.T, hub, cluster1 client.Client, cli argocdCLI, app string, deployment types.NamespacedName, why ...string) {
	t.Helper()
	scaleByHand(ctx, t, cluster1, deployment, 3)
	key := types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: app}
	work, err := guestbookWorkOf(hub, "cluster1", key)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the hub Application OutOfSync, as cluster1 reports it, with the display tree", 3*time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		sync, _, _ := unstructured.NestedString(hubApp(hub, key).Object, "status", "sync", "status")
		ok, err := viewsTree(cli, key.Namespace+"/"+key.Name, false)()
		return sync == "OutOfSync" && ok, fmt.Errorf("sync %q; %v", sync, err)
	})
	// An event, saying why in the cluster's (or the channel's) own words.
	eventually(t, "a ClusterTreeNotRead event on the hub Application", time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		events, err := treeNotReadEvents(ctx, hub, app)
		if err != nil || len(events) == 0 {
			return false, err
		}
		e := events[0]
		t.Logf("event %s: %s", e.Reason, e.Message)
		said := slices.ContainsFunc(why, func(w string) bool { return strings.Contains(e.Message, w) })
		return strings.Contains(e.Message, "could not be read through OCM's channel") && said, fmt.Errorf("event: %s; want one of %q in it", e.Message, why)
	})
	// Delivery went on: the hub Application has no propagation error, and its work was not written
	// again for the channel's sake.
	if msg := propagationError(hub, key); msg != "" {
		t.Errorf("the hub Application's propagation: %s", msg)
	}
	if now, err := guestbookWorkOf(hub, "cluster1", key); err != nil || now.Generation != work.Generation {
		t.Errorf("the Application's work: %v, generation %d (was %d)", err, now.Generation, work.Generation)
	}
}

// deliverOnItsChannel creates app with an automated sync and a destination naming cluster1 (its
// namespace namespace), and returns its name for the argocd CLI; at the test's end, it deletes app
// and waits until cluster1's object gone, one of what app deploys, is gone with it.
func deliverOnItsChannel(ctx context.Context, t testing.TB, hub, cluster1 client.Client, app *unstructured.Unstructured, namespace string, gone client.Object) string {
	t.Helper()
	_ = unstructured.SetNestedMap(app.Object, map[string]any{"name": "cluster1", "namespace": namespace}, "spec", "destination")
	_ = unstructured.SetNestedMap(app.Object, map[string]any{}, "spec", "syncPolicy", "automated")
	if err := hub.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = hub.Delete(context.Background(), app)
		eventually(t, "cluster1's objects gone with "+app.GetName(), 2*time.Minute, "cluster1-argocd-application-controller.log", func() (bool, error) {
			err := cluster1.Get(context.Background(), client.ObjectKeyFromObject(gone), gone)
			return apierrors.IsNotFound(err), err
		})
	})
	return sandbox.ArgoNamespace + "/" + app.GetName()
}

// onTheChannel prepares a test of cluster1's own views (the lab required): a context of timeout,
// the hub's and cluster1's clients, the argocd CLI logged in, cluster1's secret on OCM's channel
// until the test ends, and files committed to the lab's Git repository with message.
func onTheChannel(t testing.TB, timeout time.Duration, message string, files map[string]string) (context.Context, client.Client, client.Client, argocdCLI) {
	t.Helper()
	requireLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	hub, spokes := clients(t)
	cli := loginArgoCD(t)
	useChannel(ctx, t, hub, "cluster1")
	if _, err := lab.CommitFiles(message, files); err != nil {
		t.Fatal(err)
	}
	return ctx, hub, spokes["cluster1"], cli
}

// A tenant's Application on cluster1's channel, whose AppProject (the lab tenant's) permits only
// its namespace on the managed cluster itself, gets no view of cluster1: Argo CD would build no
// tree for a destination its project does not permit, so the hub keeps the display tree, with no
// uid, and Argo CD's API server answers get-resource with its own "not found as part of
// application". It is delivered and synced as before. The platform's Application of the same
// objects on the same channel (Argo CD's default project, every destination) gets the live
// manifest from cluster1.
func TestATenantsProjectKeepsItFromTheClustersViews(t *testing.T) {
	ctx, hub, cluster1, cli := onTheChannel(t, 8*time.Minute, "a ConfigMap for a tenant's views",
		map[string]string{"tenantviews/cm.yaml": configMap("tenant-views", nil, map[string]string{"read": "through the channel"})})
	tenant := tenantApp("tenant-views", "tenantviews", func(u *unstructured.Unstructured) {
		u.Object["spec"].(map[string]any)["destination"] = map[string]any{"name": "cluster1", "namespace": sandbox.TenantNamespace}
	})
	if err := hub.Create(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(tenant)
	t.Cleanup(func() { _ = hub.Delete(context.Background(), argocdApp(key)) })
	eventually(t, "the tenant's Application Synced and Healthy, its ConfigMap on cluster1", 2*time.Minute, "cluster1-argocd-application-controller.log", func() (bool, error) {
		sync, health, _ := hubState(hub, key)
		return sync == "Synced" && health == "Healthy" && configMapData(cluster1, sandbox.TenantNamespace, "tenant-views", "read") == "through the channel",
			fmt.Errorf("hub reads %s/%s; condition %q", sync, health, propagationError(hub, key))
	})
	name := key.Namespace + "/" + key.Name
	eventually(t, "argocd app resources listing the tenant's ConfigMap (the display tree)", time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		out, err := cli.run(time.Minute, "app", "resources", name)
		return err == nil && strings.Contains(out, "tenant-views"), fmt.Errorf("%v: %s", err, out)
	})

	platform := uiApp("platform-views", "tenantviews", "platform-views", false)
	platformName := deliverOnItsChannel(ctx, t, hub, cluster1, platform, "platform-views", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "platform-views", Name: "tenant-views"}})
	eventually(t, "argocd app get-resource answering with cluster1's ConfigMap for the platform's Application", 3*time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		out, err := cli.run(time.Minute, "app", "get-resource", platformName, "--kind", "ConfigMap", "--resource-name", "tenant-views", "-o", "yaml")
		return err == nil && strings.Contains(out, "through the channel") && strings.Contains(out, "uid:"), fmt.Errorf("%v: %s", err, out)
	})
	// The channel is up (the platform's Application was read through it), and the tenant's tree
	// stays the display tree: each ask is refused, for a while.
	for range 5 {
		out, err := cli.run(time.Minute, "app", "get-resource", name, "--kind", "ConfigMap", "--resource-name", "tenant-views", "-o", "yaml")
		if err == nil || !strings.Contains(out, "not found as part of application") {
			t.Fatalf("argocd app get-resource on the tenant's ConfigMap, with the channel up: %v\n%s\nwant Argo CD's own refusal, and no live manifest from cluster1", err, out)
		}
		t.Logf("argocd app get-resource %s: %s", name, strings.TrimSpace(out))
		time.Sleep(time.Second)
	}
}
