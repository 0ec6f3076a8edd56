package controller

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/argocd-pull/argocd-pull/api"
	gitopsv1beta1 "github.com/argocd-pull/argocd-pull/api/v1beta1"
	"github.com/argocd-pull/argocd-pull/internal/gitops"
)

// placement creates a Placement and its decision, as OCM's placement controller would.
func (h *harness) placement(ns, name string, clusters ...string) {
	h.t.Helper()
	placement := &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	decision := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Name: name + "-decision-1", Namespace: ns,
		Labels: map[string]string{clusterv1beta1.PlacementLabel: name}}}
	h.create(placement)
	h.create(decision)
	// The blog's test uses a fixed namespace and name: a repeated run (go test -count) creates them again.
	h.t.Cleanup(func() {
		_ = h.c.Delete(context.Background(), decision)
		_ = h.c.Delete(context.Background(), placement)
	})
	h.decide(ns, name, clusters...)
}

func (h *harness) decide(ns, name string, clusters ...string) {
	h.t.Helper()
	h.g.Eventually(func() error {
		d := &clusterv1beta1.PlacementDecision{}
		if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name + "-decision-1"}, d); err != nil {
			return err
		}
		d.Status.Decisions = []clusterv1beta1.ClusterDecision{} // required, may be empty
		for _, c := range clusters {
			d.Status.Decisions = append(d.Status.Decisions, clusterv1beta1.ClusterDecision{ClusterName: c, Reason: "selected"})
		}
		return h.c.Status().Update(context.Background(), d)
	}, timeout, interval).Should(Succeed())
}

func (h *harness) gitOpsCluster(ns, name, placement string) *gitopsv1beta1.GitOpsCluster {
	h.t.Helper()
	gc := &gitopsv1beta1.GitOpsCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: gitopsv1beta1.GitOpsClusterSpec{
			ArgoServer:   gitopsv1beta1.ArgoServerSpec{Cluster: "notused", ArgoNamespace: ns},
			PlacementRef: &corev1.ObjectReference{Kind: "Placement", APIVersion: "cluster.open-cluster-management.io/v1beta1", Name: placement},
		},
	}
	h.create(gc)
	return gc
}

func (h *harness) ready(ns, name string) func() string {
	return func() string {
		gc := &gitopsv1beta1.GitOpsCluster{}
		if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, gc); err != nil {
			return err.Error()
		}
		c := meta.FindStatusCondition(gc.Status.Conditions, gitopsv1beta1.ReadyCondition)
		if c == nil {
			return ""
		}
		return string(c.Status) + "/" + c.Reason + "/" + gc.Status.Phase
	}
}

func (h *harness) secret(ns, cluster string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	return s, h.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: gitops.SecretName(cluster)}, s)
}

// The blog's GitOpsCluster, unchanged, on a hub with two ManagedClusters bound to its namespace.
func TestBlogGitOpsClusterRegistersTheClusters(t *testing.T) {
	const ns = "openshift-gitops"
	h := start(t, func(o *Options, _ string) { o.GitOpsNamespaces = []string{ns} })
	ensureNS(h, ns)
	c1, c2 := h.cluster(), h.cluster()
	h.labelCluster(c1, "env", "prod")
	h.placement(ns, "bgdk-app-placement", c1, c2)

	data, err := os.ReadFile("../../test/testdata/docs/gitopscluster.yaml")
	h.g.Expect(err).NotTo(HaveOccurred())
	gc := &gitopsv1beta1.GitOpsCluster{}
	h.g.Expect(yaml.UnmarshalStrict(data, gc)).To(Succeed())
	h.create(gc)
	t.Cleanup(func() { _ = h.c.Delete(context.Background(), gc) })

	h.g.Eventually(h.ready(ns, gc.Name), timeout, interval).Should(Equal("True/Succeeded/successful"))
	for _, c := range []string{c1, c2} {
		s, err := h.secret(ns, c)
		h.g.Expect(err).NotTo(HaveOccurred())
		h.g.Expect(s.Labels).To(HaveKeyWithValue("argocd.argoproj.io/secret-type", "cluster"))
		h.g.Expect(string(s.Data["name"])).To(Equal(c))
		h.g.Expect(s.Data).To(HaveKey("server"))
		h.g.Expect(s.Data).NotTo(HaveKey("config"), "no credentials in pull mode")
	}
	s1, _ := h.secret(ns, c1)
	h.g.Expect(s1.Labels).To(HaveKeyWithValue("env", "prod"), "the ManagedCluster's labels, for cluster generators")

	got := &gitopsv1beta1.GitOpsCluster{}
	h.g.Expect(h.c.Get(context.Background(), client.ObjectKeyFromObject(gc), got)).To(Succeed())
	h.g.Expect(got.Status.LastUpdateTime.IsZero()).To(BeFalse())
	h.g.Expect(got.Status.Message).To(Equal("2 cluster secrets in openshift-gitops"))
	h.g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, gitopsv1beta1.PlacementResolvedCondition)).To(BeTrue())
	h.g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, gitopsv1beta1.ClustersRegisteredCondition)).To(BeTrue())

	cm := &corev1.ConfigMap{}
	h.g.Expect(h.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "ocm-placement-generator"}, cm)).To(Succeed())
	h.g.Expect(cm.Data).To(Equal(map[string]string{"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "placementdecisions", "statusListKey": "decisions", "matchKey": "clusterName"}))
	rb := &rbacv1.RoleBinding{}
	h.g.Expect(h.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: placementReaderRole}, rb)).To(Succeed())
	h.g.Expect(rb.Subjects).To(ConsistOf(rbacv1.Subject{Kind: "ServiceAccount", Name: "argocd-applicationset-controller", Namespace: ns}))

	// Nothing changed: nothing written.
	rv := s1.ResourceVersion
	h.labelCluster(c2, "touched", "yes") // requeues every GitOpsCluster
	h.g.Consistently(func() string { s, _ := h.secret(ns, c1); return s.ResourceVersion }, 2*time.Second, 100*time.Millisecond).Should(Equal(rv))
}

func ensureNS(h *harness, name string) {
	if err := h.c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil && !apierrors.IsAlreadyExists(err) {
		h.t.Fatalf("creating namespace %s: %v", name, err)
	}
}

func TestClusterLeavingThePlacement(t *testing.T) {
	h := start(t, func(o *Options, _ string) { o.SecretGracePeriod = 2 * time.Second })
	stays, leaves, targeted := h.cluster(), h.cluster(), h.cluster()
	h.placement(h.ns, "p", stays, leaves, targeted)
	h.gitOpsCluster(h.ns, "gc", "p")
	h.g.Eventually(h.ready(h.ns, "gc"), timeout, interval).Should(Equal("True/Succeeded/successful"))
	h.app("still-there", targeted) // a pull-model Application targets this cluster

	h.decide(h.ns, "p", stays)
	// Within the grace period both are kept and marked; then the untargeted one goes.
	h.g.Eventually(func() map[string]string { s, _ := h.secret(h.ns, leaves); return s.Annotations }, timeout, interval).Should(HaveKey(api.UnselectedSinceAnnotation))
	h.g.Eventually(func() bool { _, err := h.secret(h.ns, leaves); return apierrors.IsNotFound(err) }, timeout, interval).Should(BeTrue())
	h.g.Consistently(func() error { _, err := h.secret(h.ns, targeted); return err }, 3*time.Second, 200*time.Millisecond).Should(Succeed(),
		"never while an Application targets the cluster")
	_, err := h.secret(h.ns, stays)
	h.g.Expect(err).NotTo(HaveOccurred())

	// Back in the placement: the mark goes.
	h.decide(h.ns, "p", stays, targeted)
	h.g.Eventually(func() map[string]string { s, _ := h.secret(h.ns, targeted); return s.Annotations }, timeout, interval).ShouldNot(HaveKey(api.UnselectedSinceAnnotation))
}

func TestSecretsNotOursAreLeftAloneAndReported(t *testing.T) {
	h := start(t)
	c1, c2 := h.cluster(), h.cluster()
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: gitops.SecretName(c1), Namespace: h.ns, Labels: map[string]string{"argocd.argoproj.io/secret-type": "cluster"}},
		StringData: map[string]string{"name": c1, "server": "https://hand-made", "config": `{"bearerToken":"x"}`}}
	h.create(foreign)
	h.placement(h.ns, "p", c1, c2)
	h.gitOpsCluster(h.ns, "gc", "p")

	h.g.Eventually(h.ready(h.ns, "gc"), timeout, interval).Should(Equal("False/SecretConflict/failed"))
	got, err := h.secret(h.ns, c1)
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(string(got.Data["server"])).To(Equal("https://hand-made"), "not modified")
	h.g.Expect(got.Labels).NotTo(HaveKey(api.ManagedByLabel))
	_, err = h.secret(h.ns, c2)
	h.g.Expect(err).NotTo(HaveOccurred(), "the other cluster is registered")
	gc := &gitopsv1beta1.GitOpsCluster{}
	h.g.Expect(h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: "gc"}, gc)).To(Succeed())
	h.g.Expect(gc.Status.Message).To(ContainSubstring(gitops.SecretName(c1)))

	// Deleting the GitOpsCluster removes its secrets and leaves the hand-made one.
	h.g.Expect(h.c.Delete(context.Background(), gc)).To(Succeed())
	h.g.Eventually(func() bool { _, err := h.secret(h.ns, c2); return apierrors.IsNotFound(err) }, timeout, interval).Should(BeTrue())
	_, err = h.secret(h.ns, c1)
	h.g.Expect(err).NotTo(HaveOccurred())
}

func TestGitOpsClusterBadInput(t *testing.T) {
	tests := map[string]struct {
		setup  func(h *harness) *gitopsv1beta1.GitOpsCluster
		reason string
		msg    string
	}{
		"placement not found": {
			setup:  func(h *harness) *gitopsv1beta1.GitOpsCluster { return h.gitOpsCluster(h.ns, "gc", "nope") },
			reason: gitopsv1beta1.ReasonPlacementNotFound, msg: "Placement nope not found in namespace",
		},
		"no clusters selected": {
			setup: func(h *harness) *gitopsv1beta1.GitOpsCluster {
				h.placement(h.ns, "p")
				return h.gitOpsCluster(h.ns, "gc", "p")
			},
			reason: gitopsv1beta1.ReasonNoClustersSelected, msg: "Placement p selects no cluster",
		},
		"Argo CD namespace not allowed": {
			setup: func(h *harness) *gitopsv1beta1.GitOpsCluster {
				h.placement(h.ns, "p", h.cluster())
				gc := &gitopsv1beta1.GitOpsCluster{ObjectMeta: metav1.ObjectMeta{Name: "gc", Namespace: h.ns}, Spec: gitopsv1beta1.GitOpsClusterSpec{
					ArgoServer: gitopsv1beta1.ArgoServerSpec{ArgoNamespace: "kube-system"}, PlacementRef: &corev1.ObjectReference{Kind: "Placement", Name: "p"}}}
				h.create(gc)
				return gc
			},
			reason: gitopsv1beta1.ReasonArgoNamespaceForbidden, msg: "Argo CD namespace kube-system is not allowed",
		},
		"placement in another namespace": {
			setup: func(h *harness) *gitopsv1beta1.GitOpsCluster {
				gc := &gitopsv1beta1.GitOpsCluster{ObjectMeta: metav1.ObjectMeta{Name: "gc", Namespace: h.ns}, Spec: gitopsv1beta1.GitOpsClusterSpec{
					ArgoServer: gitopsv1beta1.ArgoServerSpec{ArgoNamespace: h.ns}, PlacementRef: &corev1.ObjectReference{Kind: "Placement", Name: "p", Namespace: "team-b"}}}
				h.create(gc)
				return gc
			},
			reason: gitopsv1beta1.ReasonPlacementNotAllowed, msg: "may only use Placements of its own namespace",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			h := start(t)
			gc := tt.setup(h)
			h.g.Eventually(h.ready(h.ns, gc.Name), timeout, interval).Should(Equal("False/" + tt.reason + "/failed"))
			got := &gitopsv1beta1.GitOpsCluster{}
			h.g.Expect(h.c.Get(context.Background(), client.ObjectKeyFromObject(gc), got)).To(Succeed())
			h.g.Expect(got.Status.Message).To(ContainSubstring(tt.msg))
			secrets := &corev1.SecretList{}
			h.g.Expect(h.c.List(context.Background(), secrets, client.MatchingLabels{api.OwnerLabel: gitops.OwnerValue(h.ns, "gc")})).To(Succeed())
			h.g.Expect(secrets.Items).To(BeEmpty())
		})
	}
}

func TestNamespaceLabelAllowsAnArgoCDNamespace(t *testing.T) {
	h := start(t)
	other := "argocd-labelled-" + h.ns[len(h.ns)-5:]
	h.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other, Labels: map[string]string{api.AllowedNamespaceLabel: "true"}}})
	c := h.cluster()
	h.placement(h.ns, "p", c)
	gc := &gitopsv1beta1.GitOpsCluster{ObjectMeta: metav1.ObjectMeta{Name: "gc", Namespace: h.ns}, Spec: gitopsv1beta1.GitOpsClusterSpec{
		ArgoServer: gitopsv1beta1.ArgoServerSpec{ArgoNamespace: other}, PlacementRef: &corev1.ObjectReference{Kind: "Placement", Name: "p"}}}
	h.create(gc)
	h.g.Eventually(h.ready(h.ns, "gc"), timeout, interval).Should(Equal("True/Succeeded/successful"))
	_, err := h.secret(other, c)
	h.g.Expect(err).NotTo(HaveOccurred())
}
