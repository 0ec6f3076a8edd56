package controller

import (
	"context"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/propagation"
	"github.com/argocd-pull/argocd-pull/internal/takeover"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
	"github.com/argocd-pull/argocd-pull/internal/test/upstreamwork"
)

// upstreamApp creates the hub Application name for cluster with the work writer wrote for it
// before argocd-pull saw it (the Application gets its pull label last, so argocd-pull first sees
// both at once), the work applied by the harness's agent. It returns the work's key.
func (h *harness) upstreamApp(writer upstreamwork.Writer, name, cluster string) types.NamespacedName {
	h.t.Helper()
	h.app(name, cluster, func(u *unstructured.Unstructured) { u.SetLabels(nil) })
	w, err := upstreamwork.Work(writer, h.getApp(name), nil, "")
	h.g.Expect(err).NotTo(HaveOccurred())
	h.create(w)
	key := client.ObjectKeyFromObject(w)
	h.agentAppliesUpstream(key, name)
	h.updateApp(name, func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{api.PullLabel: "true"}) })
	return key
}

// agentAppliesUpstream writes the status of the upstream work key as the work agent would once
// applied at its generation, with the feedback the upstream controllers ask for.
func (h *harness) agentAppliesUpstream(key types.NamespacedName, name string) {
	h.t.Helper()
	h.g.Eventually(func() error {
		w := &workv1.ManifestWork{}
		if err := h.c.Get(context.Background(), key, w); err != nil {
			return err
		}
		testenv.SetAgentStatus(w, w.Generation, h.ns, name, map[string]string{"healthStatus": "Healthy", "syncStatus": "Synced"})
		return h.c.Status().Update(context.Background(), w)
	}, timeout, interval).Should(Succeed())
}

func (h *harness) upstreamWork(key types.NamespacedName) *workv1.ManifestWork {
	h.t.Helper()
	w := &workv1.ManifestWork{}
	h.g.Expect(h.c.Get(context.Background(), key, w)).To(Succeed())
	return w
}

// The takeover, step by step, as the work agent reports: argocd-pull's work holds the Application
// first, the upstream work is released only once that is applied, and deleted only once the
// release is applied. At no step has the managed-cluster Application no owner.
func TestAnUpstreamWorkIsAdoptedWithoutAGap(t *testing.T) {
	for _, writer := range []upstreamwork.Writer{upstreamwork.RHACM, upstreamwork.OCMBasic} {
		t.Run(string(writer), func(t *testing.T) {
			h := start(t, func(o *Options, _ string) { o.AdoptUpstreamWorks = true })
			cluster := h.cluster()
			upstream := h.upstreamApp(writer, "guestbook", cluster)
			generation := h.upstreamWork(upstream).Generation

			ours := h.writtenWork("guestbook", cluster)
			h.g.Expect(manifestwork.Held(ours)).To(BeTrue(), "held at once: the upstream work names this hub Application")
			h.g.Expect(ours.Annotations).To(HaveKeyWithValue(api.AdoptingAnnotation, HavePrefix(upstream.Name+" ")))
			h.g.Consistently(func() int64 { return h.upstreamWork(upstream).Generation }, 2*time.Second, 200*time.Millisecond).
				Should(Equal(generation), "the upstream work is untouched until the agent applied argocd-pull's")

			h.agentWrites("guestbook", cluster, ours.Generation, map[string]string{"healthStatus": "Healthy", "syncStatus": "Synced"})
			h.g.Eventually(func() bool { return manifestwork.Released(h.upstreamWork(upstream)) }, timeout, interval).
				Should(BeTrue(), "released: CreateOnly, its Application orphaned")
			h.g.Consistently(func() error {
				return h.c.Get(context.Background(), upstream, &workv1.ManifestWork{})
			}, 2*time.Second, 200*time.Millisecond).Should(Succeed(), "not deleted before the agent applied the release")

			h.agentAppliesUpstream(upstream, "guestbook")
			h.g.Eventually(func() bool {
				return apierrors.IsNotFound(h.c.Get(context.Background(), upstream, &workv1.ManifestWork{}))
			}, timeout, interval).Should(BeTrue(), "deleted once released")
			h.g.Expect(h.worksOf("guestbook")).To(HaveLen(1), "argocd-pull's work alone delivers it")
			h.g.Eventually(func() map[string]string { return h.writtenWork("guestbook", cluster).Annotations }, timeout, interval).Should(And(
				HaveKeyWithValue(api.AdoptedAnnotation, HavePrefix(upstream.Name+" ")), Not(HaveKey(api.AdoptingAnnotation))), "the takeover is over: recorded as adopted")
			h.g.Expect(h.condition("guestbook")).To(BeEmpty())
			h.g.Eventually(func() []string { return h.eventsFor("guestbook") }, timeout, interval).Should(ContainElements(
				HavePrefix(ReasonAdopting+": Released ManifestWork "+upstream.String()),
				HavePrefix(ReasonAdopted+": Took the managed-cluster Application over"),
			))
		})
	}
}

// Without --adopt-upstream-works an Application an upstream controller delivers is refused with
// what to do, and nothing is written: no work of argocd-pull's, the upstream work as it was.
func TestUpstreamWorksAreLeftAloneUnlessAdoptionIsOn(t *testing.T) {
	h := start(t)
	cluster := h.cluster()
	upstream := h.upstreamApp(upstreamwork.RHACM, "guestbook", cluster)
	before := h.upstreamWork(upstream)
	h.g.Eventually(func() string { return h.condition("guestbook") }, timeout, interval).Should(And(
		ContainSubstring("ManifestWork "+upstream.String()+" of RHACM"),
		ContainSubstring("--adopt-upstream-works"),
	))
	h.g.Consistently(func() []workv1.ManifestWork {
		return slices.DeleteFunc(h.worksOf("guestbook"), func(w workv1.ManifestWork) bool { return w.UID == before.UID })
	}, 2*time.Second, 200*time.Millisecond).Should(BeEmpty(), "argocd-pull writes no work of its own")
	after := h.upstreamWork(upstream)
	h.g.Expect(after.Generation).To(Equal(before.Generation))
	h.g.Expect(after.Annotations).To(Equal(before.Annotations))
}

// The upstream work of an Application argocd-pull refuses is never adopted, even with adoption
// on: a tenant's Application on an unbound cluster keeps the upstream's delivery, untouched.
func TestTheUpstreamWorkOfARefusedApplicationIsNotAdopted(t *testing.T) {
	h := start(t, func(o *Options, _ string) { o.AdoptUpstreamWorks = true })
	cluster := h.unboundCluster()
	upstream := h.upstreamApp(upstreamwork.OCMBasic, "guestbook", cluster)
	before := h.upstreamWork(upstream)
	h.g.Eventually(func() string { return h.condition("guestbook") }, timeout, interval).Should(ContainSubstring("is not bound to namespace"))
	h.g.Consistently(func() int64 { return h.upstreamWork(upstream).Generation }, 2*time.Second, 200*time.Millisecond).Should(Equal(before.Generation))
	h.g.Expect(h.worksOf("guestbook")).To(HaveLen(1), "only the upstream work")
}

// An upstream controller that still runs puts its work back after the release: argocd-pull stops,
// pauses its own work (its agent only reports: no fight over the managed-cluster Application),
// and says how to stop the other controller. The upstream work is not deleted.
func TestARunningUpstreamControllerStopsTheTakeover(t *testing.T) {
	h := start(t, func(o *Options, _ string) { o.AdoptUpstreamWorks = true })
	cluster := h.cluster()
	upstream := h.upstreamApp(upstreamwork.OCMBasic, "guestbook", cluster)
	original := h.upstreamWork(upstream).Spec
	ours := h.writtenWork("guestbook", cluster)
	h.agentWrites("guestbook", cluster, ours.Generation, map[string]string{"healthStatus": "Healthy"})
	h.g.Eventually(func() bool { return manifestwork.Released(h.upstreamWork(upstream)) }, timeout, interval).Should(BeTrue())

	// The upstream controller reconciles its Application: its work as it writes it.
	h.g.Eventually(func() error {
		w := h.upstreamWork(upstream)
		w.Spec = original
		return h.c.Update(context.Background(), w)
	}, timeout, interval).Should(Succeed())
	h.g.Eventually(func() string { return h.condition("guestbook") }, timeout, interval).Should(And(
		HavePrefix(propagation.ReasonUpstreamRunning+": "),
		ContainSubstring("still writes ManifestWork "+upstream.String()),
		ContainSubstring("scale the argocd-pull-integration Deployment"),
	))
	h.g.Eventually(func() bool { return manifestwork.Paused(h.writtenWork("guestbook", cluster)) }, timeout, interval).Should(BeTrue())
	h.agentAppliesUpstream(upstream, "guestbook")
	h.g.Consistently(func() error {
		return h.c.Get(context.Background(), upstream, &workv1.ManifestWork{})
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed(), "argocd-pull keeps its hands off it")
}

// A hub Application deleted while adopted takes its upstream work along: the managed cluster
// loses it as it would have with the upstream controller.
func TestADeletedApplicationTakesItsUpstreamWorkAlong(t *testing.T) {
	h := start(t, func(o *Options, _ string) { o.AdoptUpstreamWorks = true })
	cluster := h.cluster()
	upstream := h.upstreamApp(upstreamwork.RHACM, "guestbook", cluster)
	h.writtenWork("guestbook", cluster)
	h.g.Expect(h.c.Delete(context.Background(), h.getApp("guestbook"))).To(Succeed())
	h.g.Eventually(func() bool {
		return apierrors.IsNotFound(h.c.Get(context.Background(), upstream, &workv1.ManifestWork{}))
	}, timeout, interval).Should(BeTrue())
	h.workGone("guestbook", cluster)
}

// An upstream work already being deleted when argocd-pull takes over (the agent has not finished:
// its finalizer holds it) is not written to: argocd-pull's work is held at once, so that the agent
// finds a second owner of the Application if it applies it first, and the record turns adopted
// once the upstream work is gone.
func TestAnUpstreamWorkBeingDeletedIsLeftToFinish(t *testing.T) {
	h := start(t, func(o *Options, _ string) { o.AdoptUpstreamWorks = true })
	cluster := h.cluster()
	h.app("guestbook", cluster, func(u *unstructured.Unstructured) { u.SetLabels(nil) })
	w, err := upstreamwork.Work(upstreamwork.OCMBasic, h.getApp("guestbook"), nil, "")
	h.g.Expect(err).NotTo(HaveOccurred())
	w.Finalizers = []string{"cluster.open-cluster-management.io/manifest-work-cleanup"} // the agent's
	h.create(w)
	upstream := client.ObjectKeyFromObject(w)
	h.agentAppliesUpstream(upstream, "guestbook")
	h.g.Expect(h.c.Delete(context.Background(), w)).To(Succeed())
	generation := h.upstreamWork(upstream).Generation
	h.updateApp("guestbook", func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{api.PullLabel: "true"}) })

	ours := h.writtenWork("guestbook", cluster)
	h.g.Expect(manifestwork.Held(ours)).To(BeTrue())
	h.agentWrites("guestbook", cluster, ours.Generation, map[string]string{"healthStatus": "Healthy", "syncStatus": "Synced"})
	h.g.Consistently(func() int64 { return h.upstreamWork(upstream).Generation }, 2*time.Second, 200*time.Millisecond).
		Should(Equal(generation), "not released: it is being deleted")

	// The agent finishes the deletion.
	h.g.Eventually(func() error {
		got := h.upstreamWork(upstream)
		got.Finalizers = nil
		return h.c.Update(context.Background(), got)
	}, timeout, interval).Should(Succeed())
	h.g.Eventually(func() map[string]string { return h.writtenWork("guestbook", cluster).Annotations }, timeout, interval).
		Should(HaveKey(api.AdoptedAnnotation))
	h.g.Expect(h.condition("guestbook")).To(BeEmpty())
}

// argocd-pull takeover --dry-run says what the controller does because it reads what the
// controller reads: an upstream Application whose work name another Application's work holds is
// refused by the controller (ManifestWorkNameTaken), and the dry-run lists it blocked for that
// reason, not as one to adopt.
func TestTheDryRunSeesWhatTheControllerSees(t *testing.T) {
	var opts Options
	h := start(t, func(o *Options, _ string) { o.AdoptUpstreamWorks = true; opts = *o })
	cluster := h.cluster()
	payroll := h.newApp("payroll", cluster)
	work, err := manifestwork.DesiredWork(payroll, nil, manifestwork.Target{Cluster: cluster, AppNamespace: h.ns}, manifestwork.Deliveries{})
	h.g.Expect(err).NotTo(HaveOccurred())
	work.Name = manifestwork.WorkName(h.ns, "guestbook") // the name guestbook's work would take
	h.create(work)
	h.create(payroll)
	h.g.Eventually(func() string { return h.condition("payroll") }, timeout, interval).Should(BeEmpty())
	upstream := h.upstreamApp(upstreamwork.RHACM, "guestbook", cluster)
	h.g.Eventually(func() string { return h.condition("guestbook") }, timeout, interval).Should(HavePrefix(propagation.ReasonWorkNameTaken + ": "))

	entries, err := takeover.List(context.Background(), h.c, opts.policy())
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(entries).To(ContainElement(And(
		HaveField("Work", upstream.Name),
		HaveField("Plan", takeover.PlanBlocked),
		HaveField("Detail", HavePrefix(propagation.ReasonWorkNameTaken+": ")),
	)), "the dry-run's plan is the controller's refusal")
}
