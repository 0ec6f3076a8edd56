package controller

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/propagation"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

// A new fleet's Applications of one cluster, created at once and reconciled by several workers at
// the same moment: the cluster's claim probe is created once and asks about them together, and
// each work is created once, held. Nothing is written twice because the cache had not caught up
// with another worker's write (a create refused AlreadyExists is a request to the apiserver too).
func TestAClustersNewApplicationsAreAskedAboutTogether(t *testing.T) {
	h := start(t)
	cluster := h.cluster()
	before := apiWrites(t)
	const n = 12
	for i := range n {
		h.app(fmt.Sprintf("app-%02d", i), cluster)
	}
	for i := range n {
		h.g.Expect(manifestwork.Held(h.work(fmt.Sprintf("app-%02d", i), cluster))).To(BeTrue(), "created held")
	}
	after := apiWrites(t)
	h.g.Expect(after["create manifestworks"]-before["create manifestworks"]).To(Equal(float64(n+1)), "%d works and one probe", n)
	probe := &workv1.ManifestWork{}
	h.g.Expect(h.c.Get(context.Background(), types.NamespacedName{Namespace: cluster, Name: manifestwork.ProbeName}, probe)).To(Succeed())
	h.g.Expect(after["update manifestworks"]-before["update manifestworks"]).To(BeNumerically("<", n),
		"the probe is written for several Applications at a time (%d entries now)", len(manifestwork.ProbeEntries(probe)))
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
	probe := &workv1.ManifestWork{}
	h.g.Expect(h.c.Get(context.Background(), types.NamespacedName{Namespace: cluster, Name: manifestwork.ProbeName}, probe)).To(Succeed())
	h.g.Expect(manifestwork.ProbeEntries(probe)).To(Equal([]manifestwork.ProbeEntry{{Namespace: h.ns, Name: "web", Hub: types.NamespacedName{Namespace: h.ns, Name: "web"}}}))
}
