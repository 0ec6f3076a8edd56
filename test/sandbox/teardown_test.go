package sandbox_test

// The lab's last tests take clusters away (a stopped agent, a cluster leaving the placement, the
// ApplicationSet deleted): they run after every other file (go test runs files in name order).

import (
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/sandbox"
)

// 6. Stopping one cluster's work agent turns that cluster stale in the report once the hub asks
// something of it; restarting the agent brings it back.
func TestStoppedWorkAgentTurnsStale(t *testing.T) {
	requireLab(t)
	hub, _ := clients(t)
	if err := lab.Stop("cluster1-work-agent"); err != nil {
		t.Fatal(err)
	}
	// A hard refresh changes the ManifestWork: a running agent applies it within a second.
	patch := []byte(`{"metadata":{"annotations":{"argocd.argoproj.io/refresh":"hard"}}}`)
	if err := hub.Patch(ctx, argocdApp(appKey("cluster1")), client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "cluster1 stale in the report", staleAfter+time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		_, byCluster := report(hub)
		cc := byCluster["cluster1"]
		for _, c := range cc.Conditions {
			if c.Type == "StaleStatus" && cc.HealthStatus == "Unknown" {
				return true, nil
			}
		}
		return false, nil
	})
	if _, byCluster := report(hub); byCluster["cluster2"].HealthStatus != "Healthy" {
		t.Errorf("cluster2 is %s, want Healthy: only cluster1 stopped", byCluster["cluster2"].HealthStatus)
	}
	if err := lab.Restart("cluster1-work-agent"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "cluster1 back after its agent restarted", 2*time.Minute, "cluster1-work-agent.log", func() (bool, error) {
		_, byCluster := report(hub)
		return byCluster["cluster1"].HealthStatus == "Healthy", nil
	})
}

// 7. A cluster removed from the Placement loses its Application, ManifestWork and resources.
func TestClusterRemovedFromPlacement(t *testing.T) {
	requireLab(t)
	hub, spokes := clients(t)
	mc := &clusterv1.ManagedCluster{}
	if err := hub.Get(ctx, types.NamespacedName{Name: "cluster2"}, mc); err != nil {
		t.Fatal(err)
	}
	set := mc.Labels[clusterv1beta2.ClusterSetLabel]
	delete(mc.Labels, clusterv1beta2.ClusterSetLabel)
	if err := hub.Update(ctx, mc); err != nil {
		t.Fatal(err)
	}
	// A repeated run (go test -count) starts from a lab with both clusters again.
	t.Cleanup(func() {
		eventually(t, "cluster2 back in its set", 30*time.Second, "hub-apiserver.log", func() (bool, error) {
			got := &clusterv1.ManagedCluster{}
			if err := hub.Get(ctx, types.NamespacedName{Name: "cluster2"}, got); err != nil {
				return false, err
			}
			got.Labels[clusterv1beta2.ClusterSetLabel] = set
			return hub.Update(ctx, got) == nil, nil
		})
	})
	eventually(t, "the Application and its resources gone from cluster2", 2*time.Minute, "hub-argocd-applicationset-controller.log", func() (bool, error) {
		err := spokes["cluster2"].Get(ctx, appKey("cluster2"), argocd.NewApplication())
		return apierrors.IsNotFound(err) && greeting(spokes["cluster2"]) == "", nil
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
