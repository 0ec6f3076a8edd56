package controller

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/test/simagent"
)

// setStep writes the RollingSync status the ApplicationSet controller keeps for app: status since
// the given time (to the second, as it stores it).
func (h *harness) setStep(set *unstructured.Unstructured, app, status string, since time.Time) {
	h.t.Helper()
	h.g.Eventually(func() error {
		got := argocd.NewApplicationSet()
		if err := h.c.Get(context.Background(), client.ObjectKeyFromObject(set), got); err != nil {
			return err
		}
		entry := map[string]any{"application": app, "status": status, "step": "1", "message": "set by the test", "targetRevisions": []any{"main"},
			"lastTransitionTime": since.UTC().Format(time.RFC3339)}
		if err := unstructured.SetNestedSlice(got.Object, []any{entry}, "status", "applicationStatus"); err != nil {
			return err
		}
		return h.c.Status().Update(context.Background(), got)
	}, timeout, interval).Should(Succeed())
}

// Argo CD 3.4 and later's ApplicationSet controller moves a RollingSync step's Pending Application
// on once its sync started, and it was compared, after the step began; in that same reconcile it
// writes the sync request again from the status it read before (argo-cd#21502), which is a second
// sync on the cluster if the hub had cleared the first request. So the hub keeps a step's finished
// request, showing it still running with the cluster's Synced, health and comparison since, until a
// later reconcile than the one that moved it on counted it Healthy; then it clears the request at
// once, and the cluster ran the sync once.
func TestARollingSyncStepKeepsItsFinishedRequestUntilItsStepMovesOn(t *testing.T) {
	h := start(t)
	set := h.appSet("steps")
	h.updateAppSet(set, map[string]any{"type": "RollingSync"})
	cluster := h.cluster()
	h.app("step", cluster, ownedBy(set))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fleet := h.simulate(ctx, simagent.Behaviour{SyncDuration: 300 * time.Millisecond, Compare: 100 * time.Millisecond}, cluster)
	h.g.Eventually(func() string { return statusField(h.getApp("step"), "sync", "status") }, timeout, interval).Should(Equal("OutOfSync"))

	// The step begins: Pending since this second, and its sync requested at once. The request
	// reaches the cluster in a later second (manifestwork.StepDeliverAt).
	began := time.Now().Truncate(time.Second)
	h.setStep(set, "step", argocd.StepPending, began)
	h.updateApp("step", func(u *unstructured.Unstructured) {
		u.Object["operation"] = map[string]any{"initiatedBy": map[string]any{"username": manifestwork.RollingSyncUser, "automated": true},
			"sync": map[string]any{"syncOptions": []any{"CreateNamespace=true"}}}
	})
	work := client.ObjectKeyFromObject(h.work("step", cluster))
	finished := func() bool {
		app, ok := fleet.App(work)
		return ok && len(app.Finished) > 0
	}
	h.g.Eventually(finished, timeout, interval).Should(BeTrue(), "the cluster finished the sync")

	// What moves the step on, with the request kept.
	held := func(g Gomega) {
		app := h.getApp("step")
		g.Expect(app.Object).To(HaveKey("operation"), "the request stays while its step reads Pending")
		g.Expect(statusField(app, "operationState", "phase")).To(Equal("Running"))
		g.Expect(statusField(app, "sync", "status")).To(Equal("Synced"))
		g.Expect(statusField(app, "health", "status")).To(Equal("Healthy"), "the health its cluster reports after the sync: what counts the step done")
		started, err := time.Parse(time.RFC3339, statusField(app, "operationState", "startedAt"))
		g.Expect(err).NotTo(HaveOccurred())
		reconciled, err := time.Parse(time.RFC3339, statusField(app, "reconciledAt"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(started.After(began)).To(BeTrue(), "the sync started after the step began")
		g.Expect(reconciled.After(began)).To(BeTrue(), "compared after the step began")
	}
	h.g.Eventually(held, timeout, interval).Should(Succeed(), func() string { return h.explainApps([]string{"step"}) })
	h.g.Consistently(held, 2*time.Second, interval).Should(Succeed())

	// The ApplicationSet controller moved it on from Pending in a reconcile that saw the sync's end,
	// and writes the request again in that very reconcile: the request stays until a later one
	// counts the Application Healthy; then it leaves, in the write that shows the end.
	h.setStep(set, "step", argocd.StepProgressing, time.Now())
	h.g.Consistently(held, time.Second, interval).Should(Succeed())
	h.setStep(set, "step", "Healthy", time.Now())
	h.g.Eventually(func(g Gomega) {
		app := h.getApp("step")
		g.Expect(app.Object).NotTo(HaveKey("operation"))
		g.Expect(statusField(app, "operationState", "phase")).To(Equal("Succeeded"))
		g.Expect(statusField(app, "health", "status")).To(Equal("Healthy"))
	}, 5*time.Second, interval).Should(Succeed(), func() string { return h.explainApps([]string{"step"}) })
	app, _ := fleet.App(work)
	starts := 0
	for _, n := range app.Starts {
		starts += n
	}
	h.g.Expect(starts).To(Equal(1), "the cluster ran one sync (per delivery: %v)", app.Starts)

	// A request the ApplicationSet controller did not make (argocd app sync) is cleared as soon as
	// it finished, whatever the ApplicationSet reads.
	h.setStep(set, "step", argocd.StepPending, time.Now().Add(-time.Minute))
	h.updateApp("step", func(u *unstructured.Unstructured) {
		u.Object["operation"] = map[string]any{"initiatedBy": map[string]any{"username": "admin"}, "sync": map[string]any{}}
	})
	h.g.Eventually(func(g Gomega) {
		app := h.getApp("step")
		g.Expect(app.Object).NotTo(HaveKey("operation"))
		g.Expect(statusField(app, "operationState", "phase")).To(Equal("Succeeded"))
		g.Expect(statusField(app, "operationState", "operation", "initiatedBy", "username")).To(Equal("admin"))
	}, timeout, interval).Should(Succeed(), func() string { return h.explainApps([]string{"step"}) })
	app, _ = fleet.App(work)
	h.g.Expect(slices.Collect(maps.Values(app.Starts))).To(Equal([]int{1, 1}), "each request ran once")
}
