package propagation

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/tenancy"
)

// FuzzLadder: whatever the markers, cluster, labels and bindings, a work is only ever written to an
// existing, bound ManagedCluster that is not the hub, with a namespace on the hub, for an
// Application of an allowed namespace; and every refusal says why.
func FuzzLadder(f *testing.F) {
	f.Add("cluster1", "", "argocd", "gitops", "gitops", false, true)
	f.Add("local-cluster", "", "argocd", "gitops", "gitops", false, true)
	f.Add("cluster1", "", "argocd", "gitops", "gitops", true, true)
	f.Add("cluster1", "kube-system", "team-a", "gitops", "gitops", false, true)
	f.Add("cluster1", "", "argocd", "gitops", "other", false, true)
	f.Add("cluster1", "", "argocd", "gitops", "gitops", false, false)
	f.Add("cluster1", "", "elsewhere", "gitops", "gitops", false, true)
	f.Fuzz(func(t *testing.T, cluster, appNamespace, namespace, clusterSet, boundSet string, hubLabel, clusterNamespace bool) {
		app := pullApp()
		app.SetNamespace(namespace)
		setAnn(app, api.ClusterAnnotation, cluster)
		setAnn(app, api.AppNamespaceAnnotation, appNamespace)
		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: strings.TrimSpace(cluster), Labels: map[string]string{clusterv1beta2.ClusterSetLabel: clusterSet}}}
		if hubLabel {
			mc.Labels[tenancy.LocalClusterLabel] = "true"
		}
		facts := Facts{
			App:              app,
			Policy:           Policy{ArgoCDNamespace: "argocd", PullNamespaces: []string{"argocd", "team-a"}},
			Cluster:          mc,
			Bindings:         tenancy.Bindings{Sets: []clusterv1beta2.ManagedClusterSet{{ObjectMeta: metav1.ObjectMeta{Name: boundSet}}}},
			ClusterNamespace: clusterNamespace,
			NewDeliveryID:    func() string { return "d1" },
		}
		v, err := ladder(facts) // the cluster answered that the name is free
		if err != nil {
			if !errors.Is(err, manifestwork.ErrPayloadTooLarge) {
				t.Fatalf("unexpected error: %v", err)
			}
			return
		}
		if (v.Work == nil) == (v.Refusal == nil) {
			t.Fatalf("verdict must be a work or a refusal, got %+v", v)
		}
		if v.Refusal != nil {
			if v.Refusal.Reason == "" || v.Refusal.Message == "" {
				t.Fatalf("refusal without a reason or message: %+v", v.Refusal)
			}
			return
		}
		switch {
		case tenancy.IsHub(mc.Name, mc):
			t.Fatalf("delivered to the hub itself (%q)", cluster)
		case clusterSet != boundSet:
			t.Fatalf("delivered to cluster of set %q, only %q is bound", clusterSet, boundSet)
		case !clusterNamespace:
			t.Fatal("delivered to a cluster without a namespace on the hub")
		case !facts.Policy.Allows(namespace):
			t.Fatalf("delivered from namespace %q", namespace)
		case v.Work.Namespace != mc.Name:
			t.Fatalf("work in namespace %q for cluster %q", v.Work.Namespace, mc.Name)
		}
	})
}
