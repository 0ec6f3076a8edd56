package sandbox_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
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
	"sigs.k8s.io/yaml"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/sandbox"
	"github.com/argocd-pull/argocd-pull/internal/test/upstreamwork"
)

// takeoverApp is a hub Application delivered by an upstream controller before argocd-pull: the
// repository's takeover path into the namespace takeover, automated sync with prune, and Argo CD's
// resources finalizer (deleting it would take the ConfigMaps along).
func takeoverApp(name, cluster string) *unstructured.Unstructured {
	app := outageApp(name, cluster)
	app.SetFinalizers([]string{argocd.ResourcesFinalizer})
	spec := app.Object["spec"].(map[string]any)
	spec["source"].(map[string]any)["path"] = "takeover"
	spec["destination"].(map[string]any)["namespace"] = "takeover"
	spec["syncPolicy"] = map[string]any{"automated": map[string]any{"prune": true}, "syncOptions": []any{"CreateNamespace=true"}}
	return app
}

// uids are the UIDs of what one upstream-delivered Application is on its managed cluster.
type uids struct{ application, first, second string }

func managedUIDs(c client.Client, key types.NamespacedName) (uids, error) {
	var out uids
	app := argocd.NewApplication()
	if err := c.Get(ctx, key, app); err != nil {
		return out, err
	}
	if !app.GetDeletionTimestamp().IsZero() {
		return out, fmt.Errorf("the Application %s is being deleted", key)
	}
	out.application = string(app.GetUID())
	for name, into := range map[string]*string{"takeover-first": &out.first, "takeover-second": &out.second} {
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: "takeover", Name: name}, cm); err != nil {
			return out, err
		}
		if !cm.DeletionTimestamp.IsZero() {
			return out, fmt.Errorf("ConfigMap %s is being deleted", name)
		}
		*into = string(cm.UID)
	}
	return out, nil
}

// The switch from the upstream pull controllers, against the real work agent and Argo CD: works
// shaped as RHACM's (cluster1) and OCM's basic mode (cluster2) write them deliver an Application
// with two ConfigMaps; argocd-pull starts with --adopt-upstream-works and is killed once in the
// middle of the takeover. Afterwards only argocd-pull's works remain, every managed-cluster
// Application and ConfigMap has the UID it had before (and none was ever seen deleted or
// recreated), the hub Applications stay Synced and Healthy at the revision the upstream controllers
// last reported (never seen going backwards), and a new revision set on the hub
// reaches the clusters through argocd-pull's works. The upstream work of an Application argocd-pull
// refuses (a tenant landing in the Argo CD namespace) is left as it is, and the refusal says so.
// (A controller that deletes the upstream work before its own is applied fails here: the agent
// deletes the Application, Argo CD prunes the ConfigMaps, and both come back with new UIDs.)
func TestTakeoverFromTheUpstreamControllers(t *testing.T) {
	requireLab(t)
	hub, spokes := clients(t)
	first, err := lab.CommitFiles("takeover", map[string]string{
		"takeover/first.yaml":  configMap("takeover-first", nil, map[string]string{"version": "1"}),
		"takeover/second.yaml": configMap("takeover-second", nil, map[string]string{"version": "1"}),
	})
	if err != nil {
		t.Fatal(err)
	}

	// The hub as the upstream controllers left it: argocd-pull is not running.
	if err := lab.Stop("argocd-pull"); err != nil {
		t.Fatal(err)
	}
	started := false
	t.Cleanup(func() {
		if !started {
			_ = lab.Start(ctx, "argocd-pull")
		}
	})
	writers := map[string]upstreamwork.Writer{"cluster1": upstreamwork.RHACM, "cluster2": upstreamwork.OCMBasic}
	apps := map[string]types.NamespacedName{}
	upstream := map[string]types.NamespacedName{}
	for cluster, writer := range writers {
		app := takeoverApp("takeover-"+cluster, cluster)
		if err := hub.Create(ctx, app); err != nil {
			t.Fatal(err)
		}
		key := client.ObjectKeyFromObject(app)
		apps[cluster] = key
		t.Cleanup(func() { _ = hub.Delete(ctx, argocdApp(key)) })
		w, err := upstreamwork.Work(writer, app, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := hub.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		upstream[cluster] = client.ObjectKeyFromObject(w)
	}
	// A tenant's Application argocd-pull refuses (it lands in the managed Argo CD's namespace),
	// which an upstream controller delivered.
	refused := tenantApp("takeover-escape", "takeover-escape", func(u *unstructured.Unstructured) { // an empty path: it deploys nothing
		a := u.GetAnnotations()
		a[api.AppNamespaceAnnotation] = sandbox.ArgoNamespace
		u.SetAnnotations(a)
	})
	if err := hub.Create(ctx, refused); err != nil {
		t.Fatal(err)
	}
	refusedKey := client.ObjectKeyFromObject(refused)
	t.Cleanup(func() { _ = hub.Delete(ctx, argocdApp(refusedKey)) })
	refusedWork, err := upstreamwork.Work(upstreamwork.OCMBasic, refused, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := hub.Create(ctx, refusedWork); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hub.Delete(ctx, refusedWork) })

	before := map[string]uids{}
	for cluster, key := range apps {
		spoke := spokes[cluster]
		eventually(t, "the upstream work's Application synced on "+cluster, 3*time.Minute, cluster+"-argocd-application-controller.log", func() (bool, error) {
			onSpoke := argocd.NewApplication()
			if err := spoke.Get(ctx, key, onSpoke); err != nil {
				return false, err
			}
			sync, _, _ := unstructured.NestedString(onSpoke.Object, "status", "sync", "status")
			health, _, _ := unstructured.NestedString(onSpoke.Object, "status", "health", "status")
			u, err := managedUIDs(spoke, key)
			if err != nil || sync != "Synced" || health != "Healthy" {
				return false, fmt.Errorf("%s/%s: %v", sync, health, err)
			}
			before[cluster] = u
			return true, nil
		})
	}
	refusedBefore := &workv1.ManifestWork{}
	if err := hub.Get(ctx, client.ObjectKeyFromObject(refusedWork), refusedBefore); err != nil {
		t.Fatal(err)
	}
	// The hub status as the upstream controllers wrote it from their works' feedback.
	for _, key := range apps {
		status := []byte(`{"status":{"sync":{"status":"Synced","revision":"` + first + `"},"health":{"status":"Healthy"}}}`)
		if err := hub.Patch(ctx, argocdApp(key), client.RawPatch(types.MergePatchType, status)); err != nil {
			t.Fatal(err)
		}
	}

	// What the controller will do, as the operator sees it before starting it.
	plan, err := exec.Command(filepath.Join(labDir, "argocd-pull"), "takeover", "--dry-run", "--kubeconfig", lab.Hub.Kubeconfig,
		"-n", sandbox.ArgoNamespace, "--pull-namespaces", sandbox.ArgoNamespace+","+sandbox.TenantNamespace).CombinedOutput()
	if err != nil {
		t.Fatalf("takeover --dry-run: %v\n%s", err, plan)
	}
	t.Logf("argocd-pull takeover --dry-run:\n%s", plan)
	for _, want := range []string{
		`(?m)^cluster1\s+` + sandbox.ArgoNamespace + `/takeover-cluster1\s+\S+\s+RHACM\s+adopt\s`,
		`(?m)^cluster2\s+` + sandbox.ArgoNamespace + `/takeover-cluster2\s+\S+\s+OCM basic mode\s+adopt\s`,
		`(?m)^cluster1\s+` + sandbox.TenantNamespace + `/takeover-escape\s+\S+\s+OCM basic mode\s+blocked\s+ManagedNamespaceNotAllowed:`,
	} {
		if !regexp.MustCompile(want).Match(plan) {
			t.Errorf("takeover --dry-run lacks a line matching %s", want)
		}
	}

	// Watch the managed clusters through the whole takeover: any deletion or re-creation shows.
	stop := make(chan struct{})
	var mu sync.Mutex
	var seen []string
	var watching sync.WaitGroup
	watching.Add(1)
	go func() {
		defer watching.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			for cluster, key := range apps {
				// The hub status never goes backwards either.
				if sync, health, revision := hubState(hub, key); sync != "Synced" || health != "Healthy" || revision != first {
					mu.Lock()
					seen = append(seen, fmt.Sprintf("hub Application of %s at %s: %s/%s at %s", cluster, time.Now().Format(time.TimeOnly), sync, health, revision))
					mu.Unlock()
				}
				u, err := managedUIDs(spokes[cluster], key)
				if err == nil && u == before[cluster] {
					continue
				}
				mu.Lock()
				seen = append(seen, fmt.Sprintf("%s at %s: %+v (%v)", cluster, time.Now().Format(time.TimeOnly), u, err))
				mu.Unlock()
			}
		}
	}()
	stopWatching := func() { close(stop); watching.Wait() }

	started = true
	if err := lab.Start(ctx, "argocd-pull"); err != nil {
		t.Fatal(err)
	}
	// Killed in the middle: once the first upstream work is released.
	eventually(t, "an upstream work released", 2*time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		for _, key := range upstream {
			w := &workv1.ManifestWork{}
			if err := hub.Get(ctx, key, w); err == nil && manifestwork.Released(w) || apierrors.IsNotFound(err) {
				return true, nil
			}
		}
		return false, nil
	})
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

	for cluster, key := range upstream {
		eventually(t, "the upstream work on "+cluster+" deleted", 2*time.Minute, "hub-argocd-pull.log", func() (bool, error) {
			err := hub.Get(ctx, key, &workv1.ManifestWork{})
			return apierrors.IsNotFound(err), err
		})
	}
	for cluster, key := range apps {
		eventually(t, "the hub Application of "+cluster+" Synced and Healthy from argocd-pull's work", time.Minute, "hub-argocd-pull.log", func() (bool, error) {
			sync, health, revision := hubState(hub, key)
			return sync == "Synced" && health == "Healthy" && revision == first, fmt.Errorf("%s/%s at %s; condition %q", sync, health, revision, propagationError(hub, key))
		})
	}
	stopWatching()
	if len(seen) > 0 {
		t.Fatalf("the managed clusters changed during the takeover (%d observations, the first ones):\n%s", len(seen), strings.Join(seen[:min(len(seen), 12)], "\n"))
	}
	for cluster, key := range apps {
		works, err := worksOfHubApp(hub, key)
		if err != nil {
			t.Fatal(err)
		}
		if len(works) != 1 || works[0].Labels[api.ManagedByLabel] != api.ManagedByValue || works[0].Namespace != cluster {
			t.Errorf("the works of %s after the takeover: %v, want argocd-pull's alone", key, works)
		}
		t.Logf("%s: Application %s and ConfigMaps %s, %s kept their UIDs; now delivered by ManifestWork %s/%s",
			cluster, before[cluster].application, before[cluster].first, before[cluster].second, works[0].Namespace, works[0].Name)
	}

	// The refused Application's upstream work is as it was, and the refusal says so.
	eventually(t, "the tenant's Application refused", time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		msg := propagationError(hub, refusedKey)
		return strings.HasPrefix(msg, "ManagedNamespaceNotAllowed:"), fmt.Errorf("condition %q", msg)
	})
	refusedAfter := &workv1.ManifestWork{}
	if err := hub.Get(ctx, client.ObjectKeyFromObject(refusedWork), refusedAfter); err != nil {
		t.Fatalf("the refused Application's upstream work: %v", err)
	}
	if refusedAfter.Generation != refusedBefore.Generation || manifestwork.Released(refusedAfter) {
		t.Errorf("the refused Application's upstream work was changed (generation %d, was %d)", refusedAfter.Generation, refusedBefore.Generation)
	}

	// A new revision set on the hub reaches the clusters through argocd-pull's works.
	second, err := lab.CommitFiles("takeover v2", map[string]string{
		"takeover/first.yaml":  configMap("takeover-first", nil, map[string]string{"version": "2"}),
		"takeover/second.yaml": configMap("takeover-second", nil, map[string]string{"version": "2"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	for cluster, key := range apps {
		if err := hub.Patch(ctx, argocdApp(key), client.RawPatch(types.MergePatchType,
			[]byte(`{"spec":{"source":{"targetRevision":"`+second+`"}}}`))); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the new revision on "+cluster, 3*time.Minute, cluster+"-argocd-application-controller.log", func() (bool, error) {
			_, _, revision := hubState(hub, key)
			return revision == second && configMapData(spokes[cluster], "takeover", "takeover-second", "version") == "2", fmt.Errorf("hub at %s", revision)
		})
		if u, err := managedUIDs(spokes[cluster], key); err != nil || u != before[cluster] {
			t.Errorf("after the new revision on %s: %+v (%v), want the UIDs of before %+v", cluster, u, err, before[cluster])
		}
	}
}

// worksOfHubApp lists the ManifestWorks on the hub that point back to the hub Application key.
func worksOfHubApp(hub client.Client, key types.NamespacedName) ([]workv1.ManifestWork, error) {
	all := &workv1.ManifestWorkList{}
	if err := hub.List(ctx, all); err != nil {
		return nil, err
	}
	var out []workv1.ManifestWork
	for _, w := range all.Items {
		if w.Annotations[api.HubApplicationNamespaceAnnotation] == key.Namespace && w.Annotations[api.HubApplicationNameAnnotation] == key.Name {
			out = append(out, w)
		}
	}
	return out, nil
}

// dupAppSet generates one hub Application per Argo CD cluster with a cluster generator: two
// cluster secrets of one name would make two Applications of one name, which the ApplicationSet
// controller refuses. Its Applications are not pull-model ones: nothing is delivered.
const dupAppSet = `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata:
  name: one-per-cluster
  namespace: openshift-gitops
spec:
  goTemplate: true
  generators:
  - clusters:
      selector:
        matchLabels:
          argocd.argoproj.io/secret-type: cluster
  template:
    metadata:
      name: 'one-per-cluster-{{.name}}'
    spec:
      project: default
      source:
        repoURL: REPO
        path: takeover
        targetRevision: main
      destination:
        name: '{{.name}}'
        namespace: takeover
`

// RHACM's GitOpsCluster controller registers cluster1 with its own cluster secret: argocd-pull's
// secret for cluster1 goes, so the real ApplicationSet controller's cluster generator sees each
// cluster once and generates one Application per cluster; once RHACM's secret is gone,
// argocd-pull's comes back.
func TestRHACMClusterSecretIsNotDuplicated(t *testing.T) {
	requireLab(t)
	hub, _ := clients(t)
	ours := types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: "cluster1-cluster-secret"}
	if err := hub.Get(ctx, ours, &corev1.Secret{}); err != nil {
		t.Fatalf("argocd-pull's secret of cluster1: %v", err)
	}
	rhacm := &corev1.Secret{}
	rhacm.Namespace, rhacm.Name = sandbox.ArgoNamespace, "cluster1-application-manager-cluster-secret"
	rhacm.Labels = map[string]string{"argocd.argoproj.io/secret-type": "cluster", "apps.open-cluster-management.io/acm-cluster": "true",
		api.ClusterLabel: "cluster1", "apps.open-cluster-management.io/data-source": "blank"}
	rhacm.StringData = map[string]string{"name": "cluster1", "server": "https://cluster1-control-plane"}
	if err := hub.Create(ctx, rhacm); err != nil {
		t.Fatal(err)
	}
	removed := false
	t.Cleanup(func() {
		if !removed {
			_ = hub.Delete(ctx, rhacm)
		}
	})
	eventually(t, "argocd-pull's secret of cluster1 gone", time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		err := hub.Get(ctx, ours, &corev1.Secret{})
		return apierrors.IsNotFound(err), err
	})

	appSet := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(strings.ReplaceAll(dupAppSet, "REPO", lab.RepoURL)), &appSet.Object); err != nil {
		t.Fatal(err)
	}
	if err := hub.Create(ctx, appSet); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hub.Delete(ctx, appSet) })
	eventually(t, "one generated Application per cluster", time.Minute, "hub-argocd-applicationset-controller.log", func() (bool, error) {
		var names []string
		for _, c := range []string{"cluster1", "cluster2"} {
			if hub.Get(ctx, types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: "one-per-cluster-" + c}, argocd.NewApplication()) == nil {
				names = append(names, c)
			}
		}
		current := argocd.NewApplicationSet()
		_ = hub.Get(ctx, client.ObjectKeyFromObject(appSet), current)
		conditions, _, _ := unstructured.NestedSlice(current.Object, "status", "conditions")
		for _, c := range conditions {
			if m, ok := c.(map[string]any); ok && m["type"] == "ErrorOccurred" && m["status"] == "True" {
				return false, fmt.Errorf("ApplicationSet error: %v", m["message"])
			}
		}
		return len(names) == 2, fmt.Errorf("generated for %v", names)
	})

	if err := hub.Delete(ctx, rhacm); err != nil {
		t.Fatal(err)
	}
	removed = true
	eventually(t, "argocd-pull's secret of cluster1 back", time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		err := hub.Get(ctx, ours, &corev1.Secret{})
		return err == nil, err
	})
}

// The way back (docs/migration.md): argocd-pull paused for the whole fleet, the other controller
// writes its work, argocd-pull's work is deleted: the managed cluster keeps its Application and
// what it deployed, with their UIDs. Resumed, argocd-pull takes the Application over again.
func TestTheWayBackToAnUpstreamController(t *testing.T) {
	requireLab(t)
	hub, spokes := clients(t)
	cluster1 := spokes["cluster1"]
	if _, err := lab.CommitFiles("takeover", map[string]string{
		"takeover/first.yaml":  configMap("takeover-first", nil, map[string]string{"version": "1"}),
		"takeover/second.yaml": configMap("takeover-second", nil, map[string]string{"version": "1"}),
	}); err != nil {
		t.Fatal(err)
	}
	app := takeoverApp("way-back", "cluster1")
	if err := hub.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(app)
	t.Cleanup(func() { _ = hub.Delete(ctx, argocdApp(key)) })
	var before uids
	eventually(t, "delivered by argocd-pull and synced", 3*time.Minute, "cluster1-argocd-application-controller.log", func() (bool, error) {
		sync, health, _ := hubState(hub, key)
		u, err := managedUIDs(cluster1, key)
		before = u
		return err == nil && sync == "Synced" && health == "Healthy", fmt.Errorf("%s/%s: %v", sync, health, err)
	})
	ours, err := worksOfHubApp(hub, key)
	if err != nil || len(ours) != 1 {
		t.Fatalf("argocd-pull's work: %v %v", ours, err)
	}

	// 1. Pause argocd-pull for the whole fleet.
	pause := &corev1.ConfigMap{}
	pause.Namespace, pause.Name = sandbox.ArgoNamespace, api.PauseConfigMap
	pause.Data = map[string]string{api.PauseKey: "handing back"}
	if err := hub.Create(ctx, pause); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hub.Delete(ctx, pause) })
	eventually(t, "argocd-pull's work paused", time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		w := &workv1.ManifestWork{}
		err := hub.Get(ctx, client.ObjectKeyFromObject(&ours[0]), w)
		return err == nil && manifestwork.Paused(w), err
	})
	// 2. The other controller writes its work; the agent applies it.
	hubApp := argocd.NewApplication()
	if err := hub.Get(ctx, key, hubApp); err != nil {
		t.Fatal(err)
	}
	theirs, err := upstreamwork.Work(upstreamwork.OCMBasic, hubApp, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := hub.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the other controller's work applied", time.Minute, "cluster1-work-agent.log", func() (bool, error) {
		w := &workv1.ManifestWork{}
		err := hub.Get(ctx, client.ObjectKeyFromObject(theirs), w)
		return err == nil && manifestwork.AppliedAtGeneration(w), err
	})
	// 3. Delete argocd-pull's work.
	if err := hub.Delete(ctx, &ours[0]); err != nil {
		t.Fatal(err)
	}
	eventually(t, "argocd-pull's work gone", time.Minute, "cluster1-work-agent.log", func() (bool, error) {
		err := hub.Get(ctx, client.ObjectKeyFromObject(&ours[0]), &workv1.ManifestWork{})
		return apierrors.IsNotFound(err), err
	})
	for range 10 { // what a deletion would start shows within seconds: the finalizer, then the prune
		if u, err := managedUIDs(cluster1, key); err != nil || u != before {
			t.Fatalf("the managed cluster changed on the way back: %+v (%v), before %+v", u, err, before)
		}
		time.Sleep(500 * time.Millisecond)
	}

	// Resumed, argocd-pull adopts the Application again, from the work it handed it to.
	if err := hub.Delete(ctx, pause); err != nil {
		t.Fatal(err)
	}
	eventually(t, "adopted again", 2*time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		err := hub.Get(ctx, client.ObjectKeyFromObject(theirs), &workv1.ManifestWork{})
		return apierrors.IsNotFound(err), fmt.Errorf("the other work: %v; condition %q", err, propagationError(hub, key))
	})
	if u, err := managedUIDs(cluster1, key); err != nil || u != before {
		t.Errorf("after the round trip: %+v (%v), want %+v", u, err, before)
	}
}
