package controller

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	gomegatypes "github.com/onsi/gomega/types"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/argocd-pull/argocd-pull/api"
	gitopsv1beta1 "github.com/argocd-pull/argocd-pull/api/v1beta1"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/assets"
	"github.com/argocd-pull/argocd-pull/internal/clusteraccess"
	"github.com/argocd-pull/argocd-pull/internal/gitops"
	"github.com/argocd-pull/argocd-pull/internal/tenancy"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

var installMSA sync.Once

// withManagedServiceAccountAPI installs managed-serviceaccount's CRD, from the release the lab
// builds (make addon-assets), into the tests' hub.
func withManagedServiceAccountAPI(t *testing.T) {
	t.Helper()
	var err error
	installMSA.Do(func() {
		var root, dir string
		if root, err = testenv.RepoRoot(); err != nil {
			return
		}
		if dir, err = assets.ManagedServiceAccountBinDir(root); err != nil {
			return
		}
		_, err = envtest.InstallCRDs(testenv.Get(t).Config, envtest.CRDInstallOptions{
			Paths: []string{filepath.Join(dir, "authentication.open-cluster-management.io_managedserviceaccounts.yaml")}})
	})
	if err != nil {
		t.Fatalf("installing managed-serviceaccount's CRD: %v", err)
	}
}

// addOn creates the ManagedClusterAddOn name in cluster, Available as its agent's lease makes it.
func (h *harness) addOn(cluster, name string, available bool) {
	h.t.Helper()
	a := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cluster}}
	h.create(a)
	status := metav1.ConditionFalse
	if available {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&a.Status.Conditions, metav1.Condition{Type: addonv1alpha1.ManagedClusterAddOnConditionAvailable, Status: status, Reason: "Lease"})
	a.Status.Namespace = clusteraccess.DefaultServiceAccountNamespace
	h.g.Expect(h.c.Status().Update(context.Background(), a)).To(Succeed())
}

func (h *harness) managedServiceAccount(cluster, name string) *unstructured.Unstructured {
	msa := &unstructured.Unstructured{}
	msa.SetGroupVersionKind(ManagedServiceAccountGVK)
	if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: cluster, Name: name}, msa); err != nil {
		return nil
	}
	return msa
}

// withAccount makes the GitOpsCluster name in the test's namespace, on a Placement "p" of
// clusters, with managedServiceAccountRef account.
func (h *harness) withAccount(name, account string, clusters ...string) *gitopsv1beta1.GitOpsCluster {
	h.t.Helper()
	h.placement(h.ns, "p", clusters...)
	gc := h.gitOpsCluster(h.ns, name, "p")
	h.setRef(gc, account)
	return gc
}

// setRef sets gc's managedServiceAccountRef to ref ("": none).
func (h *harness) setRef(gc *gitopsv1beta1.GitOpsCluster, ref string) {
	h.t.Helper()
	h.g.Expect(h.c.Get(context.Background(), client.ObjectKeyFromObject(gc), gc)).To(Succeed())
	patch := client.MergeFrom(gc.DeepCopy())
	gc.Spec.ManagedServiceAccountRef = ref
	h.g.Expect(h.c.Patch(context.Background(), gc, patch)).To(Succeed())
}

// accountMade waits for the ManagedServiceAccount name argocd-pull makes in cluster, and returns it.
func (h *harness) accountMade(cluster, name string) *unstructured.Unstructured {
	h.t.Helper()
	h.g.Eventually(func() *unstructured.Unstructured { return h.managedServiceAccount(cluster, name) }, timeout, interval).ShouldNot(BeNil())
	return h.managedServiceAccount(cluster, name)
}

// serviceAccountToken is a token of the ServiceAccount name in the add-on's namespace, as a
// cluster's apiserver issues it (the hub never checks its signature).
func serviceAccountToken(name string, expires time.Time) string {
	enc := base64.RawURLEncoding.EncodeToString
	claims, _ := json.Marshal(map[string]any{"sub": "system:serviceaccount:" + clusteraccess.DefaultServiceAccountNamespace + ":" + name, "exp": expires.Unix()})
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc(claims) + "." + enc([]byte("signature"))
}

// writeToken writes the token Secret of the ManagedServiceAccount msa as managed-serviceaccount's
// agent does: its label, owned by the account.
func (h *harness) writeToken(msa *unstructured.Unstructured, token string) {
	h.t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: msa.GetName(), Namespace: msa.GetNamespace()}}
	_, err := controllerutil.CreateOrUpdate(context.Background(), h.c, s, func() error {
		s.Labels = map[string]string{clusteraccess.IsManagedServiceAccountLabel: "true"}
		s.OwnerReferences = []metav1.OwnerReference{{APIVersion: ManagedServiceAccountGVK.GroupVersion().String(), Kind: "ManagedServiceAccount", Name: msa.GetName(), UID: msa.GetUID()}}
		s.Data = map[string][]byte{"token": []byte(token), "ca.crt": []byte("the cluster's CA")}
		return nil
	})
	h.g.Expect(err).NotTo(HaveOccurred())
}

// tokenReported writes the status of the ManagedServiceAccount name in cluster as
// managed-serviceaccount's agent does after each token it writes: the token Secret it refreshed,
// and when that token expires.
func (h *harness) tokenReported(cluster, name string, expires time.Time) {
	h.t.Helper()
	msa := h.managedServiceAccount(cluster, name)
	h.g.Expect(msa).NotTo(BeNil())
	h.g.Expect(unstructured.SetNestedMap(msa.Object, map[string]any{
		"tokenSecretRef":      map[string]any{"name": name, "lastRefreshTimestamp": time.Now().UTC().Format(time.RFC3339)},
		"expirationTimestamp": expires.UTC().Format(time.RFC3339),
	}, "status")).To(Succeed())
	h.g.Expect(h.c.Status().Update(context.Background(), msa)).To(Succeed())
}

func (h *harness) accessCondition(name string) func() string { return h.accessCondition2(h.ns, name) }

// accessCondition2 is the ClusterAccess condition of the GitOpsCluster namespace/name.
func (h *harness) accessCondition2(namespace, name string) func() string {
	return func() string {
		gc := &gitopsv1beta1.GitOpsCluster{}
		if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: name}, gc); err != nil {
			return err.Error()
		}
		c := meta.FindStatusCondition(gc.Status.Conditions, gitopsv1beta1.ClusterAccessCondition)
		if c == nil {
			return ""
		}
		return string(c.Status) + "/" + c.Reason + ": " + c.Message
	}
}

// secretAccess is what a cluster secret says of the hub's way to the cluster: its server, its
// bearer token ("" for none), and why it has none.
func (h *harness) secretAccess(cluster string) func() []string {
	return h.secretAccessIn(h.ns, cluster)
}

// secretAccessIn is secretAccess for the cluster secret in the Argo CD namespace ns.
func (h *harness) secretAccessIn(ns, cluster string) func() []string {
	return func() []string {
		s, err := h.secret(ns, cluster)
		if err != nil {
			return []string{err.Error()}
		}
		var config struct {
			BearerToken string `json:"bearerToken"`
			TLS         struct {
				CAData []byte `json:"caData"`
			} `json:"tlsClientConfig"`
		}
		if raw, ok := s.Data["config"]; ok {
			if err := json.Unmarshal(raw, &config); err != nil {
				return []string{"config: " + err.Error()}
			}
		}
		why, _, _ := strings.Cut(s.Annotations[gitops.AccessRefusedAnnotation], ":")
		return []string{string(s.Data["server"]), config.BearerToken, string(config.TLS.CAData), why}
	}
}

// A GitOpsCluster with managedServiceAccountRef: the cluster with both add-ons gets its account,
// the account's read-only rights, and a secret that reaches it through cluster-proxy with the
// account's token; each cluster it cannot reach keeps a credential-free secret that says why, and
// the GitOpsCluster says which; nothing of a tenant's is changed, and a token the cluster (or a
// tenant) tampers with never reaches a secret.
func TestGitOpsClusterReachesItsClustersThroughOCMsChannel(t *testing.T) {
	withManagedServiceAccountAPI(t)
	ca := "-----BEGIN CERTIFICATE-----\ncluster-proxy's CA\n-----END CERTIFICATE-----\n"
	h := start(t, func(o *Options, _ string) {
		o.Channel = clusteraccess.Channel{URL: "https://cluster-proxy-addon-user.multicluster-engine.svc:9092", CA: []byte(ca), Accounts: []string{"argocd-pull"}, Recheck: time.Second}
	})
	ctx := context.Background()
	reached, noProxy, tenants := h.cluster(), h.cluster(), h.cluster()
	for _, c := range []string{reached, tenants} {
		h.addOn(c, clusteraccess.ClusterProxyAddOn, true)
		h.addOn(c, clusteraccess.ManagedServiceAccountAddOn, true)
	}
	h.addOn(noProxy, clusteraccess.ManagedServiceAccountAddOn, true)
	// A tenant's ManagedServiceAccount of the same name, in tenants' namespace.
	theirs := &unstructured.Unstructured{}
	theirs.SetGroupVersionKind(ManagedServiceAccountGVK)
	theirs.SetNamespace(tenants)
	theirs.SetName("argocd-pull")
	theirs.SetLabels(map[string]string{"team": "a"})
	h.g.Expect(unstructured.SetNestedField(theirs.Object, "8640h", "spec", "rotation", "validity")).To(Succeed())
	h.g.Expect(h.c.Create(ctx, theirs)).To(Succeed())
	theirs = h.managedServiceAccount(tenants, "argocd-pull")

	gc := h.withAccount("gc", "argocd-pull", reached, noProxy, tenants)

	// The account is created where managed-serviceaccount runs, and its rights delivered.
	msa := h.accountMade(reached, "argocd-pull")
	h.g.Expect(msa.GetLabels()).To(HaveKeyWithValue(api.ManagedByLabel, api.ManagedByValue))
	validity, _, _ := unstructured.NestedString(msa.Object, "spec", "rotation", "validity")
	h.g.Expect(validity).To(Equal("168h"))
	work := &workv1.ManifestWork{}
	h.g.Eventually(func() error {
		return h.c.Get(ctx, types.NamespacedName{Namespace: reached, Name: clusteraccess.AccessWorkName("argocd-pull")}, work)
	}, timeout, interval).Should(Succeed())
	var role rbacv1.ClusterRole
	h.g.Expect(json.Unmarshal(work.Spec.Workload.Manifests[0].Raw, &role)).To(Succeed())
	h.g.Expect(role.Rules).To(Equal(clusteraccess.ReadOnlyRules(nil)))
	h.g.Expect(work.Labels).NotTo(HaveKey(api.ManagedByLabel), "not one of the Application works")

	// Until the agent wrote the token, the secret is credential-free and says so.
	h.g.Eventually(h.secretAccess(reached), timeout, interval).Should(Equal([]string{gitops.Server(reached), "", "", clusteraccess.ReasonTokenMissing}))
	h.g.Eventually(h.ready(h.ns, "gc"), timeout, interval).Should(Equal("True/Succeeded/successful"), "delivery does not need the channel")

	// The agent writes the token: the secret reaches the cluster through cluster-proxy with it.
	good := serviceAccountToken("argocd-pull", time.Now().Add(time.Hour))
	h.writeToken(msa, good)
	h.g.Eventually(h.secretAccess(reached), timeout, interval).Should(Equal([]string{
		"https://cluster-proxy-addon-user.multicluster-engine.svc:9092/" + reached, good, ca, ""}))

	// The other two stay credential-free, each with its reason, and the GitOpsCluster names them.
	h.g.Eventually(h.secretAccess(noProxy), timeout, interval).Should(Equal([]string{gitops.Server(noProxy), "", "", clusteraccess.ReasonAddOnMissing}))
	h.g.Eventually(h.secretAccess(tenants), timeout, interval).Should(Equal([]string{gitops.Server(tenants), "", "", clusteraccess.ReasonAccountNotOurs}))
	h.g.Eventually(h.accessCondition("gc"), timeout, interval).Should(SatisfyAll(
		HavePrefix("False/"), ContainSubstring("2 of 3 cluster secrets are credential-free"),
		ContainSubstring(noProxy+": "+noProxy+" has no available ManagedClusterAddOn cluster-proxy"),
		ContainSubstring(tenants+": the ManagedServiceAccount "+tenants+"/argocd-pull was not created by argocd-pull")))
	h.g.Expect(h.ready(h.ns, "gc")()).To(Equal("True/Succeeded/successful"))
	// Nothing of the tenant's changed, and no rights were delivered for its account.
	now := h.managedServiceAccount(tenants, "argocd-pull")
	h.g.Expect(now.GetResourceVersion()).To(Equal(theirs.GetResourceVersion()))
	h.g.Expect(h.c.Get(ctx, types.NamespacedName{Namespace: tenants, Name: clusteraccess.AccessWorkName("argocd-pull")}, &workv1.ManifestWork{})).NotTo(Succeed())
	h.g.Expect(h.managedServiceAccount(noProxy, "argocd-pull")).NotTo(BeNil(), "made where managed-serviceaccount runs, for when cluster-proxy comes")

	// A token Secret the cluster or a tenant edits is refused at the next read, and the secret
	// loses the token it had: too big, another account's, or not managed-serviceaccount's.
	for _, bad := range []struct{ token, reason string }{
		{strings.Repeat("a", clusteraccess.MaxTokenBytes+1), clusteraccess.ReasonTokenRefused},
		{serviceAccountToken("cluster-admin", time.Now().Add(time.Hour)), clusteraccess.ReasonTokenRefused},
		{good + "\r\nX-Injected: 1", clusteraccess.ReasonTokenRefused},
		{serviceAccountToken("argocd-pull", time.Now().Add(-time.Minute)), clusteraccess.ReasonTokenExpired},
	} {
		h.writeToken(msa, bad.token)
		h.g.Eventually(h.secretAccess(reached), timeout, interval).Should(Equal([]string{gitops.Server(reached), "", "", bad.reason}), "token %.40q", bad.token)
	}
	h.writeToken(msa, good)
	h.g.Eventually(h.secretAccess(reached), timeout, interval).Should(HaveExactElements(HaveSuffix("/"+reached), good, ca, ""))

	// Without managedServiceAccountRef, the secrets are credential-free again, with no condition.
	h.setRef(gc, "")
	h.g.Eventually(h.secretAccess(reached), timeout, interval).Should(Equal([]string{gitops.Server(reached), "", "", ""}))
	h.g.Eventually(h.accessCondition("gc"), timeout, interval).Should(BeEmpty())
	// And the accounts argocd-pull made, with their rights, go: no GitOpsCluster asks for them.
	// The tenant's stays as it was.
	for _, c := range []string{reached, noProxy} {
		h.g.Eventually(func() *unstructured.Unstructured { return h.managedServiceAccount(c, "argocd-pull") }, timeout, interval).Should(BeNil(), c)
	}
	h.g.Eventually(func() error {
		return h.c.Get(ctx, types.NamespacedName{Namespace: reached, Name: clusteraccess.AccessWorkName("argocd-pull")}, &workv1.ManifestWork{})
	}, timeout, interval).Should(MatchError(ContainSubstring("not found")))
	h.g.Expect(h.managedServiceAccount(tenants, "argocd-pull").GetResourceVersion()).To(Equal(theirs.GetResourceVersion()))
}

// startWithAChannel starts the controllers with OCM's channel (its tokens rechecked every hour),
// on a hub with one cluster that runs both add-ons.
func startWithAChannel(t *testing.T) (*harness, string) {
	withManagedServiceAccountAPI(t)
	h := start(t, func(o *Options, _ string) {
		o.Channel = clusteraccess.Channel{URL: "https://cluster-proxy-addon-user.multicluster-engine.svc:9092", CA: []byte("CA"), Accounts: []string{"argocd-pull"}, Recheck: time.Hour}
	})
	cluster := h.cluster()
	h.addOn(cluster, clusteraccess.ClusterProxyAddOn, true)
	h.addOn(cluster, clusteraccess.ManagedServiceAccountAddOn, true)
	return h, cluster
}

// A token the cluster refused is replaced by managed-serviceaccount's agent at once (it makes the
// ServiceAccount again and writes a new token, then the account's status): the new token reaches
// the cluster's secret when the account's status says so, not at the next recheck (an hour here),
// so the hub's Argo CD and the cluster's own trees stop asking the cluster with a token it refuses.
func TestANewTokenReachesTheSecretWhenItsAccountSaysSo(t *testing.T) {
	h, cluster := startWithAChannel(t)
	h.withAccount("gc", "argocd-pull", cluster)
	msa := h.accountMade(cluster, "argocd-pull")

	first := time.Now().Add(time.Hour)
	old := serviceAccountToken("argocd-pull", first)
	h.writeToken(msa, old)
	h.tokenReported(cluster, "argocd-pull", first)
	inUse := func(token string) gomegatypes.GomegaMatcher {
		return HaveExactElements(HaveSuffix("/"+cluster), token, "CA", "")
	}
	h.g.Eventually(h.secretAccess(cluster), timeout, interval).Should(inUse(old))
	// The reconciles that writing the secret set off have run.
	h.g.Consistently(h.secretAccess(cluster), 2*time.Second, interval).Should(inUse(old))

	// The cluster refuses old; the agent writes a new token, then the account's status. The
	// Secret alone is not watched (argocd-pull may read it by name only)...
	second := time.Now().Add(2 * time.Hour)
	renewed := serviceAccountToken("argocd-pull", second)
	h.writeToken(msa, renewed)
	h.g.Consistently(h.secretAccess(cluster), 2*time.Second, interval).Should(inUse(old))
	// ...the account's status is.
	h.tokenReported(cluster, "argocd-pull", second)
	h.g.Eventually(h.secretAccess(cluster), timeout, interval).Should(inUse(renewed))
}

// An account argocd-pull made for one GitOpsCluster is that one's alone: another GitOpsCluster (a
// tenant's, for its own Argo CD) naming the same account for the same cluster is refused with
// AccountInUse, its secret stays credential-free, and nothing of the first one's changes. Once the
// first stops asking, its account goes, and the other gets one of its own.
func TestAnAccountIsItsGitOpsClustersAlone(t *testing.T) {
	withManagedServiceAccountAPI(t)
	tenant := testenv.Get(t).Namespace(t) // with an Argo CD of its own, which the install names
	h := start(t, func(o *Options, _ string) {
		o.Channel = clusteraccess.Channel{URL: "https://cluster-proxy-addon-user.multicluster-engine.svc:9092", CA: []byte("CA"), Accounts: []string{"argocd-pull"}, Recheck: time.Second}
		o.GitOpsNamespaces = append(o.GitOpsNamespaces, tenant)
	})
	c := h.cluster()
	h.addOn(c, clusteraccess.ClusterProxyAddOn, true)
	h.addOn(c, clusteraccess.ManagedServiceAccountAddOn, true)
	owner := func() string {
		msa := h.managedServiceAccount(c, "argocd-pull")
		if msa == nil {
			return ""
		}
		return msa.GetAnnotations()[clusteraccess.AccountOwnerAnnotation]
	}

	h.placement(h.ns, "p", c)
	platform := h.gitOpsCluster(h.ns, "platform", "p")
	h.setRef(platform, "argocd-pull")
	h.g.Eventually(owner, timeout, interval).Should(Equal(h.ns + "/platform"))
	msa := h.managedServiceAccount(c, "argocd-pull")
	good := serviceAccountToken("argocd-pull", time.Now().Add(time.Hour))
	h.writeToken(msa, good)
	h.g.Eventually(h.secretAccess(c), timeout, interval).Should(HaveExactElements(HaveSuffix("/"+c), good, "CA", ""))
	msa = h.managedServiceAccount(c, "argocd-pull")

	// The tenant's GitOpsCluster, for its own Argo CD, names the same account for the same cluster,
	// which the platform bound to the tenant's namespace too.
	h.create(&clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: "set-" + c, Namespace: tenant},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "set-" + c}})
	h.placement(tenant, "p", c)
	theirs := h.gitOpsCluster(tenant, "gc", "p")
	h.setRef(theirs, "argocd-pull")
	h.g.Eventually(h.ready(tenant, "gc"), timeout, interval).Should(Equal("True/Succeeded/successful"))
	h.g.Eventually(h.accessCondition2(tenant, "gc"), timeout, interval).Should(SatisfyAll(
		HavePrefix("False/"+clusteraccess.ReasonAccountInUse+": "), ContainSubstring("is GitOpsCluster "+h.ns+"/platform's")))
	h.g.Eventually(func() []string { return h.secretAccessIn(tenant, c)() }, timeout, interval).
		Should(Equal([]string{gitops.Server(c), "", "", clusteraccess.ReasonAccountInUse}))
	h.g.Consistently(func() string { return h.managedServiceAccount(c, "argocd-pull").GetResourceVersion() }, 2*time.Second, 100*time.Millisecond).
		Should(Equal(msa.GetResourceVersion()), "the platform's account is left as it was")
	h.g.Expect(h.secretAccess(c)()).To(HaveExactElements(HaveSuffix("/"+c), good, "CA", ""), "the platform's secret keeps its token")

	// The platform stops asking: its account goes, and the tenant's GitOpsCluster makes its own.
	h.setRef(platform, "")
	h.g.Eventually(owner, timeout, interval).Should(Equal(tenant + "/gc"))
	h.g.Expect(h.managedServiceAccount(c, "argocd-pull").GetUID()).NotTo(Equal(msa.GetUID()))
	h.g.Eventually(h.secretAccess(c), timeout, interval).Should(Equal([]string{gitops.Server(c), "", "", ""}))

	// The cluster leaves the tenant's Placement: the tenant's account goes. It comes back with the
	// cluster, and goes with the GitOpsCluster when that is deleted.
	h.decide(tenant, "p")
	h.g.Eventually(owner, timeout, interval).Should(BeEmpty(), "the account of a cluster its GitOpsCluster no longer selects")
	h.decide(tenant, "p", c)
	h.g.Eventually(owner, timeout, interval).Should(Equal(tenant + "/gc"))
	h.deleteGitOpsCluster(theirs)
	h.g.Eventually(owner, timeout, interval).Should(BeEmpty(), "the account of a deleted GitOpsCluster")
}

// No channel in the install, or a name it does not allow: the secrets stay as they are today, and
// the GitOpsCluster says why, without reading any token.
func TestGitOpsClusterAsksForAChannelTheInstallDoesNotGive(t *testing.T) {
	for name, c := range map[string]struct {
		channel     clusteraccess.Channel
		ref, reason string
	}{
		"no channel":       {clusteraccess.Channel{Accounts: []string{"argocd-pull"}}, "argocd-pull", clusteraccess.ReasonChannelNotConfigured},
		"a name not given": {clusteraccess.Channel{URL: "https://proxy.example:9092", CA: []byte("CA"), Accounts: []string{"argocd-pull"}}, "application-manager", clusteraccess.ReasonAccountNotAllowed},
	} {
		t.Run(name, func(t *testing.T) {
			h := start(t, func(o *Options, _ string) { o.Channel = c.channel })
			cluster := h.cluster()
			h.withAccount("gc", c.ref, cluster)
			h.g.Eventually(h.accessCondition("gc"), timeout, interval).Should(HavePrefix("False/" + c.reason + ": 1 of 1 cluster secrets are credential-free"))
			h.g.Expect(h.secretAccess(cluster)()).To(Equal([]string{gitops.Server(cluster), "", "", c.reason}))
			h.g.Expect(h.ready(h.ns, "gc")()).To(Equal("True/Succeeded/successful"))
		})
	}
}

// Two GitOpsClusters register the same cluster in the same Argo CD namespace, one asking for OCM's
// channel and one not, and a third naming the first one's account: Argo CD has one cluster per
// name, so the secret carries one GitOpsCluster's access (the one whose access it carries
// already), the others say so, and the secret stays as it is. Before, each wrote the secret its
// own way in turn, each write waking the others: the writes never stopped.
func TestGitOpsClustersSharingASecretLeaveItsAccessToOne(t *testing.T) {
	h, cluster := startWithAChannel(t)
	with := h.withAccount("with", "argocd-pull", cluster)
	msa := h.accountMade(cluster, "argocd-pull")
	token := serviceAccountToken("argocd-pull", time.Now().Add(time.Hour))
	h.writeToken(msa, token)
	inUse := HaveExactElements(HaveSuffix("/"+cluster), token, "CA", "")
	h.g.Eventually(h.secretAccess(cluster), timeout, interval).Should(inUse)

	h.gitOpsCluster(h.ns, "without", "p")
	same := h.gitOpsCluster(h.ns, "same", "p")
	h.setRef(same, "argocd-pull")
	claims := func() []string {
		s, err := h.secret(h.ns, cluster)
		if err != nil {
			return []string{err.Error()}
		}
		return gitops.Claims(s)
	}
	h.g.Eventually(claims, timeout, interval).Should(Equal([]string{h.ns + "/same", h.ns + "/with", h.ns + "/without"}))
	// Settled: no more writes, and the channel stays.
	settles := func() {
		version := func() string {
			s, err := h.secret(h.ns, cluster)
			if err != nil {
				return err.Error()
			}
			return s.ResourceVersion
		}
		h.g.Eventually(func() bool { v := version(); time.Sleep(time.Second); return v == version() }, timeout, interval).Should(BeTrue(), "the secret's writes stop")
		h.g.Consistently(version, 3*time.Second, interval).Should(Equal(version()))
	}
	settles()
	h.g.Expect(h.secretAccess(cluster)()).To(inUse)
	// The others say whose access their cluster's secret carries.
	h.g.Eventually(h.ready(h.ns, "without"), timeout, interval).Should(Equal("True/Succeeded/successful"))
	h.g.Eventually(h.message(h.ns, "without"), timeout, interval).Should(ContainSubstring(cluster + ": its secret carries the access of GitOpsCluster " + h.ns + "/with"))
	h.g.Eventually(h.accessCondition("same"), timeout, interval).Should(ContainSubstring(cluster + ": its secret carries the access of GitOpsCluster " + h.ns + "/with"))
	h.g.Eventually(h.accessCondition("with"), timeout, interval).Should(HavePrefix("True/"))

	// The one whose access it carries stops asking: the secret is credential-free (the others
	// have no token to give it), and settles again.
	h.setRef(with, "")
	h.g.Eventually(h.secretAccess(cluster), timeout, interval).Should(Equal([]string{gitops.Server(cluster), "", "", ""}))
	settles()
}

// message is the status message of the GitOpsCluster ns/name.
func (h *harness) message(ns, name string) func() string {
	return func() string {
		gc := &gitopsv1beta1.GitOpsCluster{}
		if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, gc); err != nil {
			return err.Error()
		}
		return gc.Status.Message
	}
}

// The API groups the hub's account may read on a cluster come from what argocd-pull delivered
// there (its works' feedback, which the cluster's own Argo CD reports), not from a status anyone
// may write: Applications have no status subresource, so a tenant that writes status.resources on
// a pull-labelled Application annotated with the cluster (here one argocd-pull refuses, in a
// namespace it does not take Applications from) must not widen the account. A group whose GET opens
// more than reading (subresources.kubevirt.io: a virtual machine's console and VNC; Routes holding
// TLS keys) is never given, whoever lists it (the bound on the groups: TestReadOnlyRulesAreBounded).
// Before, the account got
// `*` read of every group any such status listed (issue 92, hole 3).
func TestTheAccountsGroupsComeFromWhatItsClusterWasDelivered(t *testing.T) {
	withManagedServiceAccountAPI(t)
	h := start(t, func(o *Options, _ string) {
		o.Channel = clusteraccess.Channel{URL: "https://cluster-proxy-addon-user.multicluster-engine.svc:9092", CA: []byte("-----BEGIN CERTIFICATE-----\nca\n-----END CERTIFICATE-----\n"), Accounts: []string{"argocd-pull"}, Recheck: time.Second}
	})
	ctx := context.Background()
	cluster := h.cluster()
	h.addOn(cluster, clusteraccess.ClusterProxyAddOn, true)
	h.addOn(cluster, clusteraccess.ManagedServiceAccountAddOn, true)

	// The tenant's: a namespace argocd-pull does not take Applications from, and a status it wrote.
	tenant := testenv.Get(t).Namespace(t)
	forged := argocd.NewApplication()
	forged.SetNamespace(tenant)
	forged.SetName("forged")
	forged.SetLabels(map[string]string{api.PullLabel: "true"})
	forged.SetAnnotations(map[string]string{api.ClusterAnnotation: cluster})
	forged.Object["spec"] = map[string]any{"project": "default", "destination": map[string]any{"server": argocd.LocalServer, "namespace": "x"},
		"source": map[string]any{"repoURL": "https://example.com/x.git", "path": "x"}}
	forged.Object["status"] = map[string]any{"resources": []any{
		map[string]any{"group": "subresources.kubevirt.io", "version": "v1", "kind": "VirtualMachineInstance", "namespace": "x", "name": "vm"},
		map[string]any{"group": "forged.example.com", "version": "v1", "kind": "Thing", "namespace": "x", "name": "t"},
	}}
	h.g.Expect(h.c.Create(ctx, forged)).To(Succeed())

	// What argocd-pull delivered there, as the cluster's Argo CD reports it.
	h.documentsApp("guestbook", cluster)
	h.report("guestbook", cluster, h.work("guestbook", cluster).Generation, managedMultiSourceFeedback(t, func(status map[string]any) {
		resources := status["resources"].([]any)
		resources = append(resources,
			map[string]any{"group": "delivered.example.com", "version": "v1", "kind": "Widget", "namespace": "guestbook", "name": "w"},
			map[string]any{"group": "subresources.kubevirt.io", "version": "v1", "kind": "VirtualMachineInstance", "namespace": "guestbook", "name": "vm"},
			map[string]any{"group": "route.openshift.io", "version": "v1", "kind": "Route", "namespace": "guestbook", "name": "r"})
		status["resources"] = resources
	}))

	h.withAccount("gc", "argocd-pull", cluster)
	groups := func() []string {
		work := &workv1.ManifestWork{}
		if err := h.c.Get(ctx, types.NamespacedName{Namespace: cluster, Name: clusteraccess.AccessWorkName("argocd-pull")}, work); err != nil {
			return []string{err.Error()}
		}
		var role rbacv1.ClusterRole
		if err := json.Unmarshal(work.Spec.Workload.Manifests[0].Raw, &role); err != nil {
			return []string{err.Error()}
		}
		return role.Rules[1].APIGroups
	}
	h.g.Eventually(groups, timeout, interval).Should(ContainElement("delivered.example.com"), "the delivered Application's group")
	got := groups()
	h.g.Expect(got).NotTo(ContainElement("forged.example.com"), "a group only a status anyone may write lists")
	h.g.Expect(got).NotTo(ContainElements("subresources.kubevirt.io", "route.openshift.io"), "groups whose GET opens more than reading")
}

// OCM's channel is the install's: its account reads the whole cluster, and its token goes into a
// cluster secret that the Argo CD namespace's push-model Applications and clusters generators may
// use. A tenant's GitOpsCluster in a namespace the install does not name as an Argo CD namespace
// (here granted the platform's for its secrets) that asks for it gets no account made for it and
// no token, and cannot take the account's name before the platform (AccountInUse); the platform's
// own GitOpsCluster gets it for the clusters bound to its namespace only, never for the hub,
// whatever its PlacementDecisions name. Before, a
// GitOpsCluster got an account, its rights and its token for every cluster its decisions named
// (issue 92, hole 4).
func TestOnlyThePlatformsGitOpsClustersGetTheChannelToTheirBoundClusters(t *testing.T) {
	withManagedServiceAccountAPI(t)
	tenant := testenv.Get(t).Namespace(t)
	h := start(t, func(o *Options, ns string) {
		o.ArgoCDNamespaceGrants = tenancy.Grants{tenant: {ns}}
		o.Channel = clusteraccess.Channel{URL: "https://cluster-proxy-addon-user.multicluster-engine.svc:9092", CA: []byte("-----BEGIN CERTIFICATE-----\nca\n-----END CERTIFICATE-----\n"), Accounts: []string{"argocd-pull"}, Recheck: time.Second}
	})
	bound, unbound, hub := h.cluster(), h.unboundCluster(), h.cluster()
	h.labelCluster(hub, tenancy.LocalClusterLabel, "true")
	for _, c := range []string{bound, unbound, hub} {
		h.addOn(c, clusteraccess.ClusterProxyAddOn, true)
		h.addOn(c, clusteraccess.ManagedServiceAccountAddOn, true)
	}

	// The tenant's asks first.
	h.placement(tenant, "p", bound)
	tgc := h.gitOpsClusterInto(tenant, "gc", "p", h.ns)
	h.setRef(tgc, "argocd-pull")
	h.g.Eventually(h.accessCondition2(tenant, "gc"), timeout, interval).Should(And(HavePrefix("False/"), ContainSubstring("managedServiceAccountRef is honoured only for GitOpsClusters in the Argo CD namespaces the install names ("+h.ns+")")))
	h.g.Consistently(func() *unstructured.Unstructured { return h.managedServiceAccount(bound, "argocd-pull") }, 2*time.Second, 100*time.Millisecond).Should(BeNil(),
		"no account made for the tenant's GitOpsCluster")

	// The platform's: the bound cluster only.
	h.withAccount("gc", "argocd-pull", bound, unbound, hub)
	msa := h.accountMade(bound, "argocd-pull")
	h.g.Expect(msa.GetAnnotations()).To(HaveKeyWithValue(clusteraccess.AccountOwnerAnnotation, h.ns+"/gc"), "the platform's, not the tenant's")
	h.g.Eventually(h.accessCondition("gc"), timeout, interval).Should(And(
		ContainSubstring(unbound+": no ManagedClusterSet bound to namespace "+h.ns+" holds "+unbound),
		ContainSubstring(hub+": "+hub+" is the hub itself")))
	for _, c := range []string{unbound, hub} {
		h.g.Expect(h.managedServiceAccount(c, "argocd-pull")).To(BeNil(), "no account on %s", c)
		h.g.Expect(h.c.Get(context.Background(), types.NamespacedName{Namespace: c, Name: clusteraccess.AccessWorkName("argocd-pull")}, &workv1.ManifestWork{})).NotTo(Succeed(), "no rights on %s", c)
	}

	// The grant is judged again: the bound cluster's binding revoked, its account and rights go.
	binding := &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: "set-" + bound, Namespace: h.ns}}
	h.g.Expect(h.c.Delete(context.Background(), binding)).To(Succeed())
	h.g.Eventually(func() *unstructured.Unstructured { return h.managedServiceAccount(bound, "argocd-pull") }, timeout, interval).Should(BeNil(), "the account of a cluster no longer bound")
	h.g.Eventually(func() error {
		return h.c.Get(context.Background(), types.NamespacedName{Namespace: bound, Name: clusteraccess.AccessWorkName("argocd-pull")}, &workv1.ManifestWork{})
	}, timeout, interval).ShouldNot(Succeed(), "its rights")
}
