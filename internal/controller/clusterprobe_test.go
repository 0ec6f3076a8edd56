package controller

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A token the cluster revokes while nothing changes on the hub (in a cluster, its
// managed-serviceaccount agent down, so that no new token comes): the probe finds it within its
// period, and the Application takes the display tree with no change of its own, with one
// ClusterTreeNotRead that names the cluster's refusal. Its next read, once the backoff ends,
// finds the cluster still refusing.
func TestARevokedTokenIsFoundWithNoChangeOnTheHub(t *testing.T) {
	f := onItsChannel(t, 2*time.Second, func(o *Options) { o.ClusterProbeInterval = time.Second })
	h, rdb := f.h, f.rdb
	h.create(f.secret(f.token))
	f.deliverGuestbook(t)
	h.g.Eventually(func(g Gomega) []string { return lines(rawTree(g, rdb, "guestbook")) }, timeout, interval).Should(Equal(f.ownTree()),
		"the cluster's own tree")

	// Every token of the account is revoked with it (the apiserver believes a token it checked for
	// up to 10 s more: its token cache).
	h.g.Expect(f.cs.CoreV1().ServiceAccounts(f.guestbook).Delete(context.Background(), "argocd-pull", metav1.DeleteOptions{})).To(Succeed())
	h.g.Eventually(func(g Gomega) []string { return lines(rawTree(g, rdb, "guestbook")) }, 2*timeout, interval).Should(Equal(
		[]string{"Service/guestbook-ui  Healthy", "Deployment/guestbook-ui  Healthy"}), "the display tree, with no change of the Application")
	h.g.Eventually(func() []string { return h.eventsFor("guestbook") }, timeout, interval).Should(ContainElement(
		And(HavePrefix(ReasonClusterTreeNotRead+": "), ContainSubstring("Unauthorized"))), "the cluster's refusal, said")
	h.g.Consistently(func(g Gomega) []string { return lines(rawTree(g, rdb, "guestbook")) }, 4*time.Second, interval).Should(Equal(
		[]string{"Service/guestbook-ui  Healthy", "Deployment/guestbook-ui  Healthy"}), "still refused at the read after the backoff (2 s, and under 1 s of jitter)")
}

// A channel that drops one request now and then (cluster-proxy's tunnel reconnecting) keeps the
// cluster's own tree: each probe round's first request to the cluster fails, and the round asks
// it once more, which answers. Before the second request, one dropped probe turned the cluster's
// trees to the display tree for the backoff, with a ClusterTreeNotRead.
func TestADroppedProbeIsAskedAgainBeforeTheClusterIsMarkedDown(t *testing.T) {
	was := probeRetryAfter
	probeRetryAfter = 200 * time.Millisecond
	t.Cleanup(func() { probeRetryAfter = was })
	f := onItsChannel(t, time.Minute, func(o *Options) { o.ClusterProbeInterval = time.Second })
	h, rdb := f.h, f.rdb
	h.create(f.secret(f.token))
	f.deliverGuestbook(t)
	h.g.Eventually(func(g Gomega) []string { return lines(rawTree(g, rdb, "guestbook")) }, timeout, interval).Should(Equal(f.ownTree()),
		"the cluster's own tree")

	f.proxy.dropEveryOtherProbe.Store(true)
	before := f.proxy.probes.Load()
	h.g.Consistently(func(g Gomega) []string { return lines(rawTree(g, rdb, "guestbook")) }, 5*time.Second, interval).Should(Equal(f.ownTree()),
		"the cluster's own tree, with every other probe dropped")
	h.g.Expect(f.proxy.probes.Load()-before).To(BeNumerically(">=", 6), "at least three probe rounds, each with a dropped request and its second one")
	h.g.Expect(h.eventsFor("guestbook")).NotTo(ContainElement(HavePrefix(ReasonClusterTreeNotRead+": ")), "no ClusterTreeNotRead")
}
