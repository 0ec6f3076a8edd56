package controller

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/argocd-pull/argocd-pull/api"
	gitopsv1beta1 "github.com/argocd-pull/argocd-pull/api/v1beta1"
	"github.com/argocd-pull/argocd-pull/internal/gitops"
	"github.com/argocd-pull/argocd-pull/internal/tenancy"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
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

// gitOpsCluster creates a GitOpsCluster in ns that writes into ns, as the documents' does.
func (h *harness) gitOpsCluster(ns, name, placement string) *gitopsv1beta1.GitOpsCluster {
	h.t.Helper()
	return h.gitOpsClusterInto(ns, name, placement, ns)
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
			h.g.Expect(h.c.List(context.Background(), secrets, client.MatchingLabels{api.ManagedByLabel: api.ManagedByValue})).To(Succeed())
			for _, s := range secrets.Items {
				h.g.Expect(gitops.HasClaim(&s, gitops.ClaimKey(h.ns, "gc"))).To(BeFalse(), "secret %s/%s written", s.Namespace, s.Name)
			}
		})
	}
}

// The namespace label apps.open-cluster-management.io/argocd-namespace=true no longer names an Argo
// CD namespace: whoever may label namespaces could otherwise open one, and argocd-pull holds RBAC
// only in the Argo CD namespaces the install names.
func TestNamespaceLabelDoesNotNameAnArgoCDNamespace(t *testing.T) {
	h := start(t)
	other := "argocd-labelled-" + h.ns[len(h.ns)-5:]
	h.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other, Labels: map[string]string{"apps.open-cluster-management.io/argocd-namespace": "true"}}})
	c := h.cluster()
	h.placement(h.ns, "p", c)
	h.gitOpsClusterInto(h.ns, "gc", "p", other)
	h.g.Eventually(h.ready(h.ns, "gc"), timeout, interval).Should(Equal("False/" + gitopsv1beta1.ReasonArgoNamespaceForbidden + "/failed"))
	h.g.Consistently(func() error { _, err := h.secret(other, c); return err }, 2*time.Second, 100*time.Millisecond).Should(Satisfy(apierrors.IsNotFound))
}

// gitOpsClusterInto creates a GitOpsCluster in ns that writes into Argo CD namespace argoNS.
func (h *harness) gitOpsClusterInto(ns, name, placement, argoNS string) *gitopsv1beta1.GitOpsCluster {
	h.t.Helper()
	gc := &gitopsv1beta1.GitOpsCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: gitopsv1beta1.GitOpsClusterSpec{
			ArgoServer:   gitopsv1beta1.ArgoServerSpec{Cluster: "notused", ArgoNamespace: argoNS},
			PlacementRef: &corev1.ObjectReference{Kind: "Placement", APIVersion: "cluster.open-cluster-management.io/v1beta1", Name: placement},
		},
	}
	h.create(gc)
	return gc
}

// claims returns the GitOpsClusters a cluster secret names as its claimants (none when it is gone).
func (h *harness) claims(ns, cluster string) []string {
	s, err := h.secret(ns, cluster)
	if err != nil {
		return nil
	}
	return strings.Split(s.Annotations[api.ClaimsAnnotation], ",")
}

// gitOpsClusterEvents returns "type/reason" of the events about a GitOpsCluster.
func (h *harness) gitOpsClusterEvents(ns, name string) []string {
	list := &corev1.EventList{}
	h.g.Expect(h.c.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "GitOpsCluster" && e.InvolvedObject.Name == name {
			out = append(out, e.Type+"/"+e.Reason)
		}
	}
	return out
}

// deleteGitOpsCluster deletes a GitOpsCluster and waits until its finalizer has run.
func (h *harness) deleteGitOpsCluster(gc *gitopsv1beta1.GitOpsCluster) {
	h.t.Helper()
	h.g.Expect(h.c.Delete(context.Background(), gc)).To(Succeed())
	h.g.Eventually(func() bool {
		return apierrors.IsNotFound(h.c.Get(context.Background(), client.ObjectKeyFromObject(gc), &gitopsv1beta1.GitOpsCluster{}))
	}, timeout, interval).Should(BeTrue(), "GitOpsCluster %s/%s finalized", gc.Namespace, gc.Name)
}

// Issue 22, row 9: a tenant creates a GitOpsCluster in its own namespace aimed at the platform's
// Argo CD namespace. It is refused and writes nothing there; the platform's GitOpsCluster registers
// the cluster itself, and deleting the tenant's GitOpsCluster leaves the platform's secret alone.
func TestTenantGitOpsClusterIsRefusedThePlatformsArgoCDNamespace(t *testing.T) {
	h := start(t) // h.ns is the platform's Argo CD namespace
	tenant := testenv.Get(t).Namespace(t)
	c := h.cluster()
	h.placement(tenant, "p", c)
	attack := h.gitOpsClusterInto(tenant, "gc", "p", h.ns)

	h.g.Eventually(h.ready(tenant, "gc"), timeout, interval).Should(Equal("False/" + gitopsv1beta1.ReasonArgoNamespaceNotGranted + "/failed"))
	got := &gitopsv1beta1.GitOpsCluster{}
	h.g.Expect(h.c.Get(context.Background(), client.ObjectKeyFromObject(attack), got)).To(Succeed())
	h.g.Expect(got.Status.Message).To(ContainSubstring("--grant-argocd-namespaces " + tenant + "=" + h.ns))
	h.g.Eventually(func() []string { return h.gitOpsClusterEvents(tenant, "gc") }, timeout, interval).
		Should(ContainElement("Warning/" + gitopsv1beta1.ReasonArgoNamespaceNotGranted))
	h.g.Consistently(func() error { _, err := h.secret(h.ns, c); return err }, 2*time.Second, 100*time.Millisecond).
		Should(Satisfy(apierrors.IsNotFound), "no cluster secret written into the platform's namespace")
	for _, o := range []client.Object{&corev1.ConfigMap{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}} {
		name := placementReaderRole
		if _, ok := o.(*corev1.ConfigMap); ok {
			name = gitops.PlacementGeneratorName
		}
		err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: name}, o)
		h.g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s written into the platform's namespace (%v)", o, name, err)
	}

	// The platform's own GitOpsCluster registers the cluster, as its own.
	h.placement(h.ns, "p", c)
	h.gitOpsCluster(h.ns, "platform", "p")
	h.g.Eventually(h.ready(h.ns, "platform"), timeout, interval).Should(Equal("True/Succeeded/successful"))
	h.g.Expect(h.claims(h.ns, c)).To(ConsistOf(h.ns + "/platform"))

	// Deleting the tenant's GitOpsCluster changes nothing in the platform's namespace.
	h.deleteGitOpsCluster(attack)
	h.g.Consistently(func() []string { return h.claims(h.ns, c) }, 3*time.Second, 100*time.Millisecond).Should(ConsistOf(h.ns + "/platform"))
	h.g.Expect(h.ready(h.ns, "platform")()).To(Equal("True/Succeeded/successful"))
}

// With the operator's grant the tenant's GitOpsCluster registers its clusters in the platform's
// Argo CD namespace. A cluster both register is claimed by both: the tenant leaving deletes only
// what it alone registered, and the platform's GitOpsCluster counts and keeps its own secrets.
func TestGrantedTenantSharesTheArgoCDNamespace(t *testing.T) {
	tenant := testenv.Get(t).Namespace(t)
	h := start(t, func(o *Options, ns string) { o.ArgoCDNamespaceGrants = tenancy.Grants{tenant: {ns}} })
	shared, tenantOnly, platformOnly := h.cluster(), h.cluster(), h.cluster()
	h.placement(tenant, "p", shared, tenantOnly)
	granted := h.gitOpsClusterInto(tenant, "gc", "p", h.ns)
	h.g.Eventually(h.ready(tenant, "gc"), timeout, interval).Should(Equal("True/Succeeded/successful"))

	// The tenant registered the shared cluster first; the platform's GitOpsCluster claims it too.
	h.placement(h.ns, "p", shared, platformOnly)
	h.gitOpsCluster(h.ns, "platform", "p")
	h.g.Eventually(h.ready(h.ns, "platform"), timeout, interval).Should(Equal("True/Succeeded/successful"))
	h.g.Expect(h.claims(h.ns, shared)).To(ConsistOf(h.ns+"/platform", tenant+"/gc"))
	h.g.Expect(h.claims(h.ns, tenantOnly)).To(ConsistOf(tenant + "/gc"))

	// The shared cluster leaves the platform's placement: the platform drops its claim, the
	// tenant's secret stays as it was (no unselected mark, no grace period running).
	h.decide(h.ns, "p", platformOnly)
	h.g.Eventually(func() []string { return h.claims(h.ns, shared) }, timeout, interval).Should(ConsistOf(tenant + "/gc"))
	s, err := h.secret(h.ns, shared)
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(s.Annotations).NotTo(HaveKey(api.UnselectedSinceAnnotation))
	h.decide(h.ns, "p", shared, platformOnly)
	h.g.Eventually(func() []string { return h.claims(h.ns, shared) }, timeout, interval).Should(ConsistOf(h.ns+"/platform", tenant+"/gc"))

	// The tenant leaves: what it alone registered goes; the shared secret stays, with the platform.
	h.deleteGitOpsCluster(granted)
	h.g.Eventually(func() error { _, err := h.secret(h.ns, tenantOnly); return err }, timeout, interval).Should(Satisfy(apierrors.IsNotFound))
	h.g.Consistently(func() error { _, err := h.secret(h.ns, shared); return err }, 3*time.Second, 100*time.Millisecond).
		Should(Succeed(), "the platform's secret survives the tenant's GitOpsCluster")
	h.g.Expect(h.claims(h.ns, shared)).To(ConsistOf(h.ns + "/platform"))
	h.g.Expect(h.claims(h.ns, platformOnly)).To(ConsistOf(h.ns + "/platform"))
	h.g.Expect(h.ready(h.ns, "platform")()).To(Equal("True/Succeeded/successful"))

	// The platform's status reflects its own secrets: one deleted behind its back is registered again.
	s, err = h.secret(h.ns, shared)
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(h.c.Delete(context.Background(), s)).To(Succeed())
	h.g.Eventually(func() []string { return h.claims(h.ns, shared) }, timeout, interval).Should(ConsistOf(h.ns + "/platform"))
}

// Two GitOpsClusters of one namespace created together, registering the same clusters: whichever
// creates a secret first, both end Ready with both claims on it (the second one's create may fail
// as already existing before its cache has the secret).
func TestTwoGitOpsClustersRegisterTheSameClustersAtOnce(t *testing.T) {
	h := start(t)
	clusters := []string{h.cluster(), h.cluster(), h.cluster()}
	h.placement(h.ns, "p", clusters...)
	h.gitOpsCluster(h.ns, "one", "p")
	h.gitOpsCluster(h.ns, "two", "p")
	for _, gc := range []string{"one", "two"} {
		h.g.Eventually(h.ready(h.ns, gc), timeout, interval).Should(Equal("True/Succeeded/successful"))
	}
	for _, c := range clusters {
		h.g.Eventually(func() []string { return h.claims(h.ns, c) }, timeout, interval).Should(ConsistOf(h.ns+"/one", h.ns+"/two"))
	}
}

// A cluster that a cluster secret of RHACM's GitOpsCluster controller registers gets no second one
// (Argo CD would see two clusters of one name): the GitOpsCluster is Ready and says so, RHACM's
// secret is untouched, and once it is gone argocd-pull registers the cluster itself. A secret
// argocd-pull had for such a cluster is removed.
func TestRHACMClusterSecretsRegisterTheirClusters(t *testing.T) {
	h := start(t)
	c1, c2 := h.cluster(), h.cluster()
	rhacm := func(cluster string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: cluster + "-application-manager-cluster-secret", Namespace: h.ns, Labels: map[string]string{
			gitops.SecretTypeLabel: "cluster", gitops.UpstreamSecretLabel: "true", api.ClusterLabel: cluster,
			"apps.open-cluster-management.io/data-source": "blank",
		}}, StringData: map[string]string{"name": cluster, "server": "https://" + cluster + "-control-plane"}}
	}
	h.create(rhacm(c1))
	h.placement(h.ns, "p", c1, c2)
	h.gitOpsCluster(h.ns, "gc", "p")

	h.g.Eventually(h.ready(h.ns, "gc"), timeout, interval).Should(Equal("True/Succeeded/successful"))
	_, err := h.secret(h.ns, c2)
	h.g.Expect(err).NotTo(HaveOccurred(), "the other cluster is registered by argocd-pull")
	h.g.Consistently(func() bool { _, err := h.secret(h.ns, c1); return apierrors.IsNotFound(err) }, 2*time.Second, 200*time.Millisecond).
		Should(BeTrue(), "no second secret for the cluster RHACM's registers")
	gc := &gitopsv1beta1.GitOpsCluster{}
	h.g.Expect(h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: "gc"}, gc)).To(Succeed())
	h.g.Expect(gc.Status.Message).To(ContainSubstring("RHACM's secrets register " + c1))
	clusterNames := func() []string {
		list := &corev1.SecretList{}
		h.g.Expect(h.c.List(context.Background(), list, client.InNamespace(h.ns), client.MatchingLabels{gitops.SecretTypeLabel: "cluster"})).To(Succeed())
		var names []string
		for _, s := range list.Items {
			names = append(names, string(s.Data["name"]))
		}
		return names
	}
	h.g.Expect(clusterNames()).To(ConsistOf(c1, c2), "Argo CD sees each cluster once")

	// RHACM's secret goes (its controller uninstalled): argocd-pull registers the cluster.
	h.g.Expect(h.c.Delete(context.Background(), rhacm(c1))).To(Succeed())
	h.g.Eventually(func() error { _, err := h.secret(h.ns, c1); return err }, timeout, interval).Should(Succeed())
	h.g.Eventually(h.ready(h.ns, "gc"), timeout, interval).Should(Equal("True/Succeeded/successful"))

	// RHACM's controller writes its secret again: argocd-pull's goes, once.
	h.create(rhacm(c1))
	h.g.Eventually(func() bool { _, err := h.secret(h.ns, c1); return apierrors.IsNotFound(err) }, timeout, interval).Should(BeTrue())
	h.g.Expect(clusterNames()).To(ConsistOf(c1, c2))
}

// A cluster's client config URL is the cluster's own word (its registration agent may update its
// ManagedCluster): the cluster secret never names the hub, whatever the URL says, so neither
// destination.name nor a cluster generator can turn the cluster into the hub's in-cluster
// cluster. test/sandbox's TestAClusterCannotAimItsClusterSecretAtTheHub makes the same attack as
// the cluster's agent, against the real Argo CD.
func TestAClusterURLNamingTheHubNeverReachesItsSecret(t *testing.T) {
	h := start(t)
	c1 := h.cluster()
	h.placement(h.ns, "p", c1)
	h.gitOpsCluster(h.ns, "gc", "p")
	h.g.Eventually(h.ready(h.ns, "gc"), timeout, interval).Should(Equal("True/Succeeded/successful"))
	want := "https://" + c1 + ".pull-model.invalid"
	for i, forged := range []string{"https://kubernetes.default.svc", "https://kubernetes.default.svc.cluster.local:443",
		testenv.Get(t).Config.Host, "https://127.0.0.1:6443", "https://[::1]", "https://169.254.169.254", "https://api.cluster1.example:6443"} {
		mc := &clusterv1.ManagedCluster{}
		h.g.Expect(h.c.Get(context.Background(), types.NamespacedName{Name: c1}, mc)).To(Succeed())
		mc.Spec.ManagedClusterClientConfigs = []clusterv1.ClientConfig{{URL: forged}}
		mc.Labels["probe"] = fmt.Sprint(i)
		h.g.Expect(h.c.Update(context.Background(), mc)).To(Succeed())
		h.g.Eventually(func() string { s, _ := h.secret(h.ns, c1); return s.Labels["probe"] }, timeout, interval).Should(Equal(fmt.Sprint(i)))
		s, err := h.secret(h.ns, c1)
		h.g.Expect(err).NotTo(HaveOccurred())
		h.g.Expect(string(s.Data["server"])).To(Equal(want), "the cluster wrote %s into its client config", forged)
	}
}
