package sandbox_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/internal/sandbox"
)

// The lab's clusters joined the hub as OCM's own do: the registration agent asked with the
// bootstrap service account, a CSR labelled with the cluster's name was approved and signed by the
// hub's kube-controller-manager, OCM's hub controller accepted the cluster and keeps its
// conditions, and the agent renews its lease.
func TestClustersJoinedThroughOCMRegistration(t *testing.T) {
	requireLab(t)
	hub, _ := clients(t)
	cs, err := kubernetes.NewForConfig(lab.Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range lab.Managed {
		mc := &clusterv1.ManagedCluster{}
		if err := hub.Get(ctx, types.NamespacedName{Name: c.Name}, mc); err != nil {
			t.Fatal(err)
		}
		// The reasons are OCM's: nothing in the lab writes these conditions.
		for typ, reason := range map[string]string{
			clusterv1.ManagedClusterConditionHubAccepted: "HubClusterAdminAccepted",
			clusterv1.ManagedClusterConditionJoined:      "ManagedClusterJoined",
			clusterv1.ManagedClusterConditionAvailable:   "ManagedClusterAvailable",
		} {
			if cond := meta.FindStatusCondition(mc.Status.Conditions, typ); cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != reason {
				t.Errorf("%s: condition %s = %+v, want True with OCM's reason %s", c.Name, typ, cond, reason)
			}
		}
		if mc.Labels["cloud"] != "AWS" || mc.Spec.LeaseDurationSeconds != sandbox.LeaseDurationSeconds {
			t.Errorf("%s: labels %v, lease %ds", c.Name, mc.Labels, mc.Spec.LeaseDurationSeconds)
		}
		if len(mc.Spec.ManagedClusterClientConfigs) == 0 || mc.Spec.ManagedClusterClientConfigs[0].URL != c.URL {
			t.Errorf("%s: client configs %+v, want its apiserver %s as the agent reported it", c.Name, mc.Spec.ManagedClusterClientConfigs, c.URL)
		}

		csrs, err := cs.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{LabelSelector: clusterv1.ClusterNameLabelKey + "=" + c.Name})
		if err != nil {
			t.Fatal(err)
		}
		signed := false
		for _, csr := range csrs.Items {
			signed = signed || csr.Spec.Username == "system:serviceaccount:"+sandbox.OCMHubNamespace+":"+sandbox.BootstrapServiceAccount &&
				csr.Spec.SignerName == certificatesv1.KubeAPIServerClientSignerName && len(csr.Status.Certificate) > 0
		}
		if !signed {
			t.Errorf("%s: no CSR of the bootstrap identity signed by the hub: %d CSRs", c.Name, len(csrs.Items))
		}

	}
	// The lease is renewed every LeaseDurationSeconds by the agents, not by the lab.
	first := map[string]time.Time{}
	for _, c := range lab.Managed {
		first[c.Name] = leaseRenewal(t, cs, c.Name)
	}
	eventually(t, "every cluster's lease renewed", 3*sandbox.LeaseDurationSeconds*time.Second, "cluster1-registration-agent.log", func() (bool, error) {
		for _, c := range lab.Managed {
			if !leaseRenewal(t, cs, c.Name).After(first[c.Name]) {
				return false, fmt.Errorf("%s's lease not renewed since %s", c.Name, first[c.Name])
			}
		}
		return true, nil
	})
}

func leaseRenewal(t *testing.T, cs kubernetes.Interface, cluster string) time.Time {
	t.Helper()
	lease, err := cs.CoordinationV1().Leases(cluster).Get(ctx, "managed-cluster-lease", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the lease of %s: %v", cluster, err)
	}
	return renewTime(lease)
}

func renewTime(l *coordinationv1.Lease) time.Time {
	if l.Spec.RenewTime == nil {
		return time.Time{}
	}
	return l.Spec.RenewTime.Time
}

// The agents act on the hub with the certificate OCM issued the cluster, and with OCM's rights
// only: their own cluster namespace's ManifestWorks, not another cluster's, not the hub's secrets.
// This is the identity the documents' flow converged with (TestDocumentsFlowConverges).
func TestAgentsHaveOnlyOCMsRightsOnTheHub(t *testing.T) {
	requireLab(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", lab.AgentHubKubeconfig("cluster1"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BearerToken != "" || (cfg.CertFile == "" && len(cfg.CertData) == 0) {
		t.Fatalf("the agents' hub kubeconfig holds no client certificate")
	}
	agent, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	review, err := agent.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	user := review.Status.UserInfo
	if !strings.HasPrefix(user.Username, "system:open-cluster-management:cluster1:") ||
		!slices.Contains(user.Groups, "system:open-cluster-management:cluster1") || !slices.Contains(user.Groups, "system:open-cluster-management:managed-clusters") {
		t.Fatalf("the agents are %s %v on the hub, want OCM's identity of cluster1", user.Username, user.Groups)
	}
	for _, c := range []struct {
		attrs authorizationv1.ResourceAttributes
		want  bool
	}{
		{authorizationv1.ResourceAttributes{Group: "work.open-cluster-management.io", Resource: "manifestworks", Namespace: "cluster1", Verb: "list"}, true},
		{authorizationv1.ResourceAttributes{Group: "work.open-cluster-management.io", Resource: "manifestworks", Subresource: "status", Namespace: "cluster1", Verb: "patch"}, true},
		{authorizationv1.ResourceAttributes{Group: "coordination.k8s.io", Resource: "leases", Namespace: "cluster1", Verb: "update", Name: "managed-cluster-lease"}, true},
		{authorizationv1.ResourceAttributes{Group: "work.open-cluster-management.io", Resource: "manifestworks", Namespace: "cluster2", Verb: "list"}, false},
		{authorizationv1.ResourceAttributes{Group: "work.open-cluster-management.io", Resource: "manifestworks", Subresource: "status", Namespace: "cluster2", Verb: "patch"}, false},
		{authorizationv1.ResourceAttributes{Resource: "secrets", Namespace: sandbox.ArgoNamespace, Verb: "get"}, false},
		{authorizationv1.ResourceAttributes{Group: "argoproj.io", Resource: "applications", Namespace: sandbox.ArgoNamespace, Verb: "list"}, false},
	} {
		got, err := agent.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
			&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &c.attrs}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Allowed != c.want {
			t.Errorf("cluster1's agents may %s %s/%s in %s: %v, want %v", c.attrs.Verb, c.attrs.Resource, c.attrs.Subresource, c.attrs.Namespace, got.Status.Allowed, c.want)
		}
	}
}

// clustersAvailableAgain waits until OCM's hub has read every lab cluster Available for two lease
// durations in a row. A test that takes the hub apiserver away for longer than the lease's grace
// period (5 durations) ends with it, so that the tests after it find the lab as it was: once the
// hub is back, OCM's hub lease controller marks the clusters unknown and, until its lease informer
// has caught up with the agents' renewals, turns each agent's Available back to unknown (one CI
// run saw this go on for 100 s; the registration test after it read the clusters unknown).
func clustersAvailableAgain(t *testing.T, hub client.Client) {
	t.Helper()
	started := time.Now()
	var since time.Time
	eventually(t, "every cluster available on the hub again", 5*time.Minute, "hub-registration-controller.log", func() (bool, error) {
		if err := everyClusterAvailable(hub); err != nil {
			since = time.Time{}
			return false, err
		}
		if since.IsZero() {
			since = time.Now()
		}
		return time.Since(since) >= 2*sandbox.LeaseDurationSeconds*time.Second, nil
	})
	t.Logf("every cluster available again and staying so after %s", time.Since(started).Round(time.Second))
}

// everyClusterAvailable says which lab cluster OCM's hub does not read Available, if any.
func everyClusterAvailable(hub client.Client) error {
	for _, c := range lab.Managed {
		mc, err := managedCluster(hub, c.Name)
		if err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable) {
			return fmt.Errorf("%s: %+v", c.Name, meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable))
		}
	}
	return nil
}

// managedCluster reads a ManagedCluster on the hub.
func managedCluster(hub client.Client, name string) (*clusterv1.ManagedCluster, error) {
	mc := &clusterv1.ManagedCluster{}
	if err := hub.Get(ctx, types.NamespacedName{Name: name}, mc); err != nil {
		return nil, fmt.Errorf("ManagedCluster %s: %w", name, err)
	}
	return mc, nil
}
