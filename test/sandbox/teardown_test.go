package sandbox_test

// The lab's last flow tests take clusters away (agents stopped, the lab restarted, a cluster
// leaving the placement, the ApplicationSet deleted); go test runs files in name order, and only
// tenant_test.go, which brings its own Applications, comes after.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/sandbox"
)

// 6. A cluster cut off from the hub (its agents stopped) turns stale once OCM's hub sees its lease
// run out: the report and status stop claiming it Synced and Healthy, the summary stops counting
// it, although its own Argo CD keeps syncing the new commit it can still fetch. A new Application
// for it says, at once, that it waits for the cluster. Its agents back, the entry is current again
// and the new Application is delivered.
func TestCutOffClusterTurnsStaleAndComesBack(t *testing.T) {
	requireLab(t)
	hub, spokes := clients(t)
	stopped := time.Now()
	if err := lab.Stop("cluster2-agents"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lab.Start(ctx, "cluster2-agents") })
	sha, err := lab.Commit("while cluster2 is cut off")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := lab.Commit("hello from the pull model"); err != nil {
			t.Error(err)
		}
	})
	window := 5*sandbox.LeaseDurationSeconds*time.Second + time.Minute
	var unavailable time.Duration
	eventually(t, "cluster2 not available on the hub", window, "hub-registration-controller.log", func() (bool, error) {
		mc, err := managedCluster(hub, "cluster2")
		if err != nil {
			return false, err
		}
		unavailable = time.Since(stopped)
		return !meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable), nil
	})
	var stale time.Duration
	eventually(t, "cluster2 stale in the report", time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		_, byCluster := report(hub)
		cc := byCluster["cluster2"]
		stale = time.Since(stopped)
		return len(cc.Conditions) > 0 && cc.Conditions[0].Type == "StaleStatus" && strings.Contains(cc.Conditions[0].Message, "not available") &&
			cc.SyncStatus == "Unknown" && cc.HealthStatus == "Unknown", nil
	})
	t.Logf("agents stopped -> ManagedCluster not available: %s; -> report entry stale: %s (lease %ds)", unavailable.Round(time.Second), stale.Round(time.Second), sandbox.LeaseDurationSeconds)
	// A new Application for the cut-off cluster waits for its claim probe's answer and says why,
	// at once: the cluster is not available. Delivered once the agents are back (below).
	newApp := outageApp("cut-off-new", "cluster2")
	if err := hub.Create(ctx, newApp); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hub.Delete(context.Background(), newApp) })
	newKey := client.ObjectKeyFromObject(newApp)
	eventually(t, "the new Application for cluster2 saying it waits for the cluster", time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		app := argocd.NewApplication()
		if err := hub.Get(ctx, newKey, app); err != nil {
			return false, err
		}
		msg := argocd.ConditionMessage(app, api.WaitingCondition)
		return strings.Contains(msg, "cluster cluster2 must first say whether Application") && strings.Contains(msg, "the ManagedCluster is not available"), fmt.Errorf("%s: %q", api.WaitingCondition, msg)
	})
	// What the hub cannot see: cluster2's Argo CD synced the commit; the hub does not claim it.
	eventually(t, "cluster2's own Argo CD syncing the new commit", 2*time.Minute, "cluster2-argocd-application-controller.log", func() (bool, error) {
		return greeting(spokes["cluster2"]) == "while cluster2 is cut off", nil
	})
	eventually(t, "cluster1 at the new commit and the summary not counting cluster2", time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		r, byCluster := report(hub)
		s := r.Statuses.Summary
		return byCluster["cluster1"].SyncRevision == sha && byCluster["cluster1"].HealthStatus == "Healthy" &&
			s.Clusters == "2" && s.Synced == "1" && s.Healthy == "1", fmt.Errorf("summary %+v", s)
	})
	table, err := exec.Command(filepath.Join(labDir, "argocd-pull"), "status", sandbox.ApplicationSetName, "-n", sandbox.ArgoNamespace,
		"--kubeconfig", lab.Hub.Kubeconfig).CombinedOutput()
	if err != nil {
		t.Fatalf("status: %v\n%s", err, table)
	}
	if !regexp.MustCompile(`(?m)^cluster2\s+Unknown\s+Unknown\s+\S+\s+\S+\s+StaleStatus: no status from`).Match(table) ||
		!strings.Contains(string(table), "2 clusters: 1 synced, 1 healthy") {
		t.Errorf("status does not mark cluster2 stale:\n%s", table)
	}

	started := time.Now()
	if err := lab.Start(ctx, "cluster2-agents"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "cluster2 current again at the new commit", 2*time.Minute, "cluster2-registration-agent.log", func() (bool, error) {
		_, byCluster := report(hub)
		cc := byCluster["cluster2"]
		return cc.SyncRevision == sha && cc.SyncStatus == "Synced" && cc.HealthStatus == "Healthy" && len(cc.Conditions) == 0, nil
	})
	t.Logf("agents started -> report entry current: %s", time.Since(started).Round(time.Second))
	eventually(t, "the new Application delivered to cluster2 and its condition gone", 2*time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		app := argocd.NewApplication()
		if err := hub.Get(ctx, newKey, app); err != nil {
			return false, err
		}
		work := &workv1.ManifestWork{}
		err := hub.Get(ctx, types.NamespacedName{Namespace: "cluster2", Name: manifestwork.WorkName(newKey.Namespace, newKey.Name)}, work)
		msg := argocd.ConditionMessage(app, api.WaitingCondition)
		return err == nil && msg == "", fmt.Errorf("work: %v; %s: %q", err, api.WaitingCondition, msg)
	})
}

// 6b. Only a cluster's work agent stops; its registration agent keeps the lease, so the cluster is
// available. The hub cannot tell a stopped work agent from one with nothing to do: with nothing
// asked of it, the entry stays as last reported. Once the hub writes a change (here a hard
// refresh) that is not applied within --stale-after, the entry is stale.
func TestStoppedWorkAgentShowsOnlyOnceTheHubAsks(t *testing.T) {
	requireLab(t)
	hub, _ := clients(t)
	if err := lab.Stop("cluster1-work-agent"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lab.Start(ctx, "cluster1-work-agent") })
	time.Sleep(staleAfter + 5*time.Second)
	mc, err := managedCluster(hub, "cluster1")
	if err != nil {
		t.Fatal(err)
	}
	if !meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable) {
		t.Errorf("cluster1 is not available with its registration agent running: %+v", mc.Status.Conditions)
	}
	if _, byCluster := report(hub); byCluster["cluster1"].HealthStatus != "Healthy" || len(byCluster["cluster1"].Conditions) != 0 {
		t.Errorf("cluster1 with nothing asked of it: %+v, want its last report (the hub cannot see the stopped agent)", byCluster["cluster1"])
	}
	// A hard refresh changes the ManifestWork: a running agent applies it within a second.
	patch := []byte(`{"metadata":{"annotations":{"argocd.argoproj.io/refresh":"hard"}}}`)
	if err := hub.Patch(ctx, argocdApp(appKey("cluster1")), client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "cluster1 stale in the report", staleAfter+time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		_, byCluster := report(hub)
		cc := byCluster["cluster1"]
		return len(cc.Conditions) > 0 && cc.Conditions[0].Type == "StaleStatus" && strings.Contains(cc.Conditions[0].Message, "has not applied") && cc.HealthStatus == "Unknown", nil
	})
	if _, byCluster := report(hub); byCluster["cluster2"].HealthStatus != "Healthy" {
		t.Errorf("cluster2 is %s, want Healthy: only cluster1's work agent stopped", byCluster["cluster2"].HealthStatus)
	}
	if err := lab.Start(ctx, "cluster1-work-agent"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "cluster1 back after its work agent started", 2*time.Minute, "cluster1-work-agent.log", func() (bool, error) {
		_, byCluster := report(hub)
		return byCluster["cluster1"].HealthStatus == "Healthy", nil
	})
}

// 6c. The lab restarted in its directory is the same hub and clusters: same addresses, the agents'
// certificates still valid (no new CSR), the same hub hash in every AppliedManifestWork, and the
// report converges again. TestClusterRemovedFromPlacement then runs on the restarted lab.
func TestRestartedLabKeepsItsIdentity(t *testing.T) {
	requireLab(t)
	hub, _ := clients(t)
	urls := map[string]string{"hub": lab.Hub.URL}
	for _, c := range lab.Managed {
		urls[c.Name] = c.URL
	}
	hashes := appliedHubHashes(t)
	csrs := csrCount(t, hub)

	if _, err := sandbox.Down(labDir); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	var err error
	if lab, err = sandbox.Up(ctx, labOptions); err != nil {
		upErr = err
		t.Fatalf("the lab did not come back: %v\nprogress:\n%s", err, progress.String())
	}
	t.Logf("lab restarted in %s", time.Since(began).Round(100*time.Millisecond))
	if lab.Hub.URL != urls["hub"] {
		t.Errorf("hub at %s after the restart, was %s", lab.Hub.URL, urls["hub"])
	}
	for _, c := range lab.Managed {
		if c.URL != urls[c.Name] {
			t.Errorf("%s at %s after the restart, was %s", c.Name, c.URL, urls[c.Name])
		}
	}
	if _, err := lab.WaitForReport(ctx, &progress, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	hub, _ = clients(t)
	if got := csrCount(t, hub); got != csrs {
		t.Errorf("%d CSRs after the restart, %d before: an agent registered again", got, csrs)
	}
	for cluster, after := range appliedHubHashes(t) {
		if len(after) != 1 || len(hashes[cluster]) != 1 || after[0] != hashes[cluster][0] {
			t.Errorf("%s: AppliedManifestWorks of hub hashes %v after the restart, %v before", cluster, after, hashes[cluster])
		}
	}
	eachRepoServerServesItsOwnAskPass(t)
}

// eachRepoServerServesItsOwnAskPass checks that every repo-server of the lab (the hub's and each
// cluster's), started together, listens for git's credential requests on a socket of its own. On
// Argo CD's one default path a restarted lab lost a cluster's repo-server ("listen unix
// /tmp/reposerver-ask-pass.sock: bind: address already in use"), and that cluster's Applications
// stayed Unknown.
func eachRepoServerServesItsOwnAskPass(t *testing.T) {
	t.Helper()
	installs := []string{"hub"}
	for _, c := range lab.Managed {
		installs = append(installs, c.Name)
	}
	seen := map[string]string{}
	for _, install := range installs {
		socket := sandbox.AskPassSocket(labDir, install)
		if other, ok := seen[socket]; ok {
			t.Errorf("the repo-servers of %s and %s share the ask-pass socket %s", other, install, socket)
		}
		seen[socket] = install
		conn, err := net.DialTimeout("unix", socket, 5*time.Second)
		if err != nil {
			t.Errorf("%s's repo-server does not listen on its ask-pass socket: %v", install, err)
			continue
		}
		_ = conn.Close()
	}
}

// appliedHubHashes lists, per managed cluster, the hub hashes its AppliedManifestWorks carry,
// leaving out those of the add-ons' own works (addon-framework names them addon-<add-on>-deploy-<n>):
// they deliver the add-ons' agents, whatever a Placement selects.
func appliedHubHashes(t *testing.T) map[string][]string {
	t.Helper()
	_, spokes := clients(t)
	out := map[string][]string{}
	for name, spoke := range spokes {
		list := &workv1.AppliedManifestWorkList{}
		if err := spoke.List(ctx, list); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, w := range list.Items {
			if strings.HasPrefix(w.Spec.ManifestWorkName, "addon-") {
				continue
			}
			if !seen[w.Spec.HubHash] {
				seen[w.Spec.HubHash] = true
				out[name] = append(out[name], w.Spec.HubHash)
			}
		}
	}
	return out
}

func csrCount(t *testing.T, hub client.Client) int {
	t.Helper()
	list := &certificatesv1.CertificateSigningRequestList{}
	if err := hub.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

// 7. A cluster removed from the Placement loses its Application, ManifestWork and resources.
func TestClusterRemovedFromPlacement(t *testing.T) {
	requireLab(t)
	hub, spokes := clients(t)
	// A merge patch: OCM's agent and hub controller write the ManagedCluster too. OCM puts a
	// cluster without a set into its default set, which the Argo CD namespace is not bound to.
	setLabel := func(value any) error {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{clusterv1beta2.ClusterSetLabel: value}}})
		return hub.Patch(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster2"}}, client.RawPatch(types.MergePatchType, patch))
	}
	removed := time.Now()
	if err := setLabel(nil); err != nil {
		t.Fatal(err)
	}
	// A repeated run (go test -count) starts from a lab with both clusters again.
	t.Cleanup(func() {
		if err := setLabel(sandbox.ClusterSetName); err != nil {
			t.Error(err)
		}
	})
	eventually(t, "the Application and its resources gone from cluster2", time.Minute, "hub-argocd-applicationset-controller.log", func() (bool, error) {
		err := spokes["cluster2"].Get(ctx, appKey("cluster2"), argocd.NewApplication())
		return apierrors.IsNotFound(err) && greeting(spokes["cluster2"]) == "", nil
	})
	t.Logf("cluster2 out of its set -> its Application and resources gone: %s", time.Since(removed).Round(100*time.Millisecond))
	// The work agent removes the AppliedManifestWork once what it applied is gone; none of an
	// earlier run of the lab is left to keep the Application alive.
	eventually(t, "no AppliedManifestWork left on cluster2", 30*time.Second, "cluster2-work-agent.log", func() (bool, error) {
		hashes := appliedHubHashes(t)["cluster2"]
		return len(hashes) == 0, fmt.Errorf("AppliedManifestWorks of hub hashes %v", hashes)
	})
	eventually(t, "the report without cluster2", time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		r, byCluster := report(hub)
		_, has := byCluster["cluster2"]
		return !has && r.Statuses.Summary.Clusters == "1", nil
	})
	if greeting(spokes["cluster1"]) == "" {
		t.Error("cluster1 lost its app too")
	}
}

// 8. Deleting the ApplicationSet removes everything it caused, on every cluster, and its report.
func TestDeletingTheApplicationSetRemovesEverything(t *testing.T) {
	requireLab(t)
	hub, spokes := clients(t)
	appSet := &unstructured.Unstructured{}
	appSet.SetGroupVersionKind(argocd.ApplicationSetGVK)
	appSet.SetNamespace(sandbox.ArgoNamespace)
	appSet.SetName(sandbox.ApplicationSetName)
	if err := hub.Delete(ctx, appSet); err != nil {
		t.Fatal(err)
	}
	// A repeated run (go test -count) starts from the documents' ApplicationSet again.
	t.Cleanup(func() {
		eventually(t, "the documents' ApplicationSet created again", time.Minute, "hub-apiserver.log", func() (bool, error) {
			err := lab.ApplyDocumentsApplicationSet(ctx)
			return err == nil, err
		})
	})
	eventually(t, "the Applications and resources gone from every cluster", 2*time.Minute, "cluster1-argocd-application-controller.log", func() (bool, error) {
		for name, spoke := range spokes {
			if !apierrors.IsNotFound(spoke.Get(ctx, appKey(name), argocd.NewApplication())) || greeting(spoke) != "" {
				return false, nil
			}
		}
		return true, nil
	})
	eventually(t, "the report gone", time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		err := hub.Get(ctx, types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: sandbox.ApplicationSetName}, &v1alpha1.MulticlusterApplicationSetReport{})
		return apierrors.IsNotFound(err), nil
	})
}
