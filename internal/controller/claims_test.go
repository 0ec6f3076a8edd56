package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/propagation"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

// A new fleet's Applications of one cluster, created at once and reconciled by several workers at
// the same moment: the cluster's claim probe is created once and asks about them together, and
// each work is created once, held. Nothing is written twice because the cache had not caught up
// with another worker's write (a create refused AlreadyExists is a request to the apiserver too),
// nor because an Application was woken (by its probe's deletion) before the cache showed the work
// it had just created: before createdWorks.behind, that made a second create, refused, in several
// of 30 runs with the CPU busy (go test -race -count=30 beside three busy loops).
func TestAClustersNewApplicationsAreAskedAboutTogether(t *testing.T) {
	h := start(t)
	cluster := h.cluster()
	before, createdBefore := apiWrites(t), workCreates(t)
	const n = 12
	for i := range n {
		h.app(fmt.Sprintf("app-%02d", i), cluster)
	}
	for i := range n {
		h.g.Expect(manifestwork.Held(h.work(fmt.Sprintf("app-%02d", i), cluster))).To(BeTrue(), "created held")
	}
	h.g.Eventually(func() bool {
		return apierrors.IsNotFound(h.c.Get(context.Background(), types.NamespacedName{Namespace: cluster, Name: manifestwork.ProbeName}, &workv1.ManifestWork{}))
	}, timeout, interval).Should(BeTrue(), "the probe goes once all are delivered")
	after, createdAfter := apiWrites(t), workCreates(t)
	// Every create request made a work or a probe: none was refused (AlreadyExists). A probe
	// deleted once its first Applications were delivered may be created again for later ones.
	requested := after["create manifestworks"] - before["create manifestworks"]
	h.g.Expect(requested).To(Equal(createdAfter-createdBefore), "no create refused")
	h.g.Expect(requested).To(BeNumerically("<=", n+2), "%d works and the probe", n)
	h.g.Expect(after["update manifestworks"]-before["update manifestworks"]).To(BeNumerically("<", n), "the probe is written for several Applications at a time")
}

// workCreates is how many ManifestWorks the propagation controller created so far (probes too).
func workCreates(t testing.TB) float64 {
	total := 0.0
	for _, m := range metricSamples(t, "argocd_pull_manifestwork_writes_total") {
		if label(m, "operation") == "create" {
			total += counterValue(m)
		}
	}
	return total
}

// A tenant's Applications for a cluster its namespace is not bound to are refused, and never enter
// the cluster's claim probe: a tenant cannot fill the probe (at most manifestwork.MaxProbeEntries)
// and crowd out the Applications the cluster may receive. Only the asking Application's namespace
// is asked about with it.
func TestATenantsRefusedApplicationsAreNotAskedAbout(t *testing.T) {
	h := start(t, func(o *Options, _ string) { o.PullNamespaces = []string{"*"} })
	cluster := h.cluster()
	tenant := *h
	tenant.ns = testenv.Get(t).Namespace(t) // no binding to the cluster
	t.Cleanup(tenant.removeApplications)
	for i := range 3 {
		tenant.app(fmt.Sprintf("crowd-%d", i), cluster)
	}
	for i := range 3 {
		h.g.Eventually(func() string { return tenant.condition(fmt.Sprintf("crowd-%d", i)) }, timeout, interval).Should(HavePrefix(propagation.ReasonClusterNotBound))
	}
	h.app("web", cluster)
	h.work("web", cluster)
	// Had the tenant's entered the probe, they would wait in it still, and keep it.
	h.g.Eventually(func() bool {
		return apierrors.IsNotFound(h.c.Get(context.Background(), types.NamespacedName{Namespace: cluster, Name: manifestwork.ProbeName}, &workv1.ManifestWork{}))
	}, timeout, interval).Should(BeTrue(), "the probe asked about the platform's Application alone, and goes once it is delivered")
}

// A cluster's probe goes once nothing it asked about waits any more: the agent reads every entry
// on each status sync, and keeps an AppliedManifestWork on the cluster for it. One entry still
// waiting (a foreign Application there) keeps it, until that hub Application goes.
func TestTheProbeGoesOnceNothingWaits(t *testing.T) {
	h := start(t)
	cluster := h.cluster()
	probeKey := types.NamespacedName{Namespace: cluster, Name: manifestwork.ProbeName}
	probeGone := func() bool {
		return apierrors.IsNotFound(h.c.Get(context.Background(), probeKey, &workv1.ManifestWork{}))
	}
	h.app("web", cluster)
	h.app("db", cluster)
	h.work("web", cluster)
	h.work("db", cluster)
	h.g.Eventually(probeGone, timeout, interval).Should(BeTrue(), "both delivered")

	h.onClusterHas(cluster, h.ns, "theirs", &testenv.OnCluster{UID: "theirs"})
	h.app("theirs", cluster)
	h.app("cache", cluster)
	h.work("cache", cluster)
	h.g.Eventually(func() string { return h.condition("theirs") }, timeout, interval).Should(HavePrefix(propagation.ReasonManagedAppExists))
	h.g.Consistently(probeGone, 2*time.Second, 100*time.Millisecond).Should(BeFalse(), "the foreign one still waits")
	h.g.Expect(h.c.Delete(context.Background(), h.getApp("theirs"))).To(Succeed())
	h.g.Eventually(probeGone, timeout, interval).Should(BeTrue(), "the one that waited is gone")
}

// A new Application whose cluster does not answer its claim probe says so, on the Application
// and in a Warning event, once --stale-after has passed since the probe asked, and at once when
// its ManagedCluster is not available; the answer delivers it and takes the condition away. While
// the answer is in time, nothing is said.
func TestANewApplicationSaysItsClusterDoesNotAnswer(t *testing.T) {
	h := start(t, func(o *Options, _ string) { o.StaleAfter = 3 * time.Second })
	waiting := func(name string) func() string {
		return func() string { return argocd.ConditionMessage(h.getApp(name), WaitingCondition) }
	}
	cluster := h.cluster()
	h.silence(cluster, true)
	h.app("web", cluster)
	h.g.Consistently(waiting("web"), 2*time.Second, 100*time.Millisecond).Should(BeEmpty(), "in time: nothing said")
	h.g.Eventually(waiting("web"), timeout, interval).Should(And(
		ContainSubstring("cluster %s must first say whether Application %s/web is already there", cluster, h.ns),
		ContainSubstring("ManifestWork %s/%s", cluster, manifestwork.ProbeName),
		ContainSubstring("its work agent has not applied the ManifestWork written then")))
	h.g.Eventually(func() []string { return h.warnings("web") }, timeout, interval).Should(ContainElement(ReasonClusterNotAnswering), "the event follows the condition")
	works := &workv1.ManifestWorkList{}
	h.g.Expect(h.c.List(context.Background(), works, client.InNamespace(cluster), client.HasLabels{api.ManagedByLabel})).To(Succeed())
	h.g.Expect(works.Items).To(BeEmpty(), "nothing delivered before the cluster answered")

	// The agent answers: delivered, and the condition goes.
	h.silence(cluster, false)
	h.work("web", cluster)
	h.g.Eventually(waiting("web"), timeout, interval).Should(BeEmpty())

	// A cluster that is not available is said at once.
	offline := h.cluster()
	h.silence(offline, true)
	mc := &clusterv1.ManagedCluster{}
	h.g.Expect(h.c.Get(context.Background(), types.NamespacedName{Name: offline}, mc)).To(Succeed())
	mc.Status.Conditions = []metav1.Condition{{Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionUnknown,
		Reason: "ManagedClusterLeaseUpdateStopped", Message: "lease not updated", LastTransitionTime: metav1.Now()}}
	h.g.Expect(h.c.Status().Update(context.Background(), mc)).To(Succeed())
	h.app("db", offline)
	h.g.Eventually(waiting("db"), timeout, interval).Should(ContainSubstring("the ManagedCluster is not available (ManagedClusterLeaseUpdateStopped)"))
}
