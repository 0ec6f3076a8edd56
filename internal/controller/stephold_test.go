package controller

import (
	"context"
	"maps"
	"slices"
	"sync/atomic"
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
	h.setSteps(set, []string{app}, status, since)
}

// setSteps is setStep for several Applications, all in the same status since the same time.
func (h *harness) setSteps(set *unstructured.Unstructured, apps []string, status string, since time.Time) {
	h.t.Helper()
	h.g.Eventually(func() error {
		got := argocd.NewApplicationSet()
		if err := h.c.Get(context.Background(), client.ObjectKeyFromObject(set), got); err != nil {
			return err
		}
		var entries []any
		for _, app := range apps {
			entries = append(entries, map[string]any{"application": app, "status": status, "step": "1", "message": "set by the test", "targetRevisions": []any{"main"},
				"lastTransitionTime": since.UTC().Format(time.RFC3339)})
		}
		if err := unstructured.SetNestedSlice(got.Object, entries, "status", "applicationStatus"); err != nil {
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

	// A later reconcile, which began reading the step Pending, writes the request once more after
	// the status that counts it Healthy (argo-cd#21502): a late repeat, not delivered, and dropped
	// from the hub with an event. Delivered, it would run a second sync.
	h.updateApp("step", func(u *unstructured.Unstructured) {
		u.Object["operation"] = map[string]any{"initiatedBy": map[string]any{"username": manifestwork.RollingSyncUser, "automated": true},
			"sync": map[string]any{"syncOptions": []any{"CreateNamespace=true"}}}
	})
	h.g.Eventually(func(g Gomega) {
		g.Expect(h.getApp("step").Object).NotTo(HaveKey("operation"), "dropped from the hub")
		g.Expect(h.eventsFor("step")).To(ContainElement(HavePrefix(ReasonRepeatedStepSync + ": ApplicationSet steps asked for a sync of this Application's RollingSync step while its status read Healthy")))
	}, timeout, interval).Should(Succeed(), func() string { return h.explainApps([]string{"step"}) })
	h.g.Consistently(func() int {
		app, _ := fleet.App(work)
		return len(app.Starts)
	}, time.Second, interval).Should(Equal(1), "the repeat never reached the cluster")

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

// slowProjectReads is a client whose reads of an AppProject each take the time it holds longer
// (none when zero): reconciles that take longer than they plan for, as on a hub short of CPU.
type slowProjectReads struct {
	client.Client
	by *atomic.Int64 // a time.Duration
}

func (c slowProjectReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if u, ok := obj.(*unstructured.Unstructured); ok && u.GroupVersionKind() == argocd.AppProjectGVK {
		time.Sleep(time.Duration(c.by.Load()))
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// A RollingSync step's request waits for the second after the step began
// (manifestwork.StepDeliverAt); the reconcile that held it asks to run again then. When that
// reconcile ends after that time (here its read of the AppProject, after it read the step, is
// slow), it runs again at once and delivers the request. (A delay of zero or less asks
// controller-runtime for nothing: the request waited on the hub, with its rollout, for an event
// that did not come.)
func TestAHeldStepRequestIsDeliveredAfterASlowReconcile(t *testing.T) {
	slow := &atomic.Int64{}
	wrapClient = func(c client.Client) client.Client { return slowProjectReads{Client: c, by: slow} }
	h := start(t)
	wrapClient = nil
	set := h.appSet("steps")
	h.updateAppSet(set, map[string]any{"type": "RollingSync"})
	cluster := h.cluster()
	names := []string{"step-a", "step-b", "step-c", "step-d"}
	for _, name := range names {
		h.app(name, cluster, ownedBy(set))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fleet := h.simulate(ctx, simagent.Behaviour{SyncDuration: 100 * time.Millisecond}, cluster)
	for _, name := range names {
		h.g.Eventually(func() string { return statusField(h.getApp(name), "sync", "status") }, timeout, interval).Should(Equal("OutOfSync"))
	}

	// The step begins early in a second and its requests come a fifth of a second later. Each
	// reconcile now takes 500 ms more than it planned for. The one after a request's event holds
	// it; the next, when both watches of the Application queued it, starts before the second is
	// over and ends after it: the race the rollout lost, for some of the four.
	for time.Since(time.Now().Truncate(time.Second)) > 100*time.Millisecond {
		time.Sleep(10 * time.Millisecond)
	}
	h.setSteps(set, names, argocd.StepPending, time.Now().Truncate(time.Second))
	time.Sleep(100 * time.Millisecond) // the ApplicationSet's own event is handled, at full speed
	slow.Store(int64(500 * time.Millisecond))
	for _, name := range names {
		h.updateApp(name, func(u *unstructured.Unstructured) {
			u.Object["operation"] = map[string]any{"initiatedBy": map[string]any{"username": manifestwork.RollingSyncUser, "automated": true},
				"sync": map[string]any{"syncOptions": []any{"CreateNamespace=true"}}}
		})
	}
	started := func(name string) int {
		app, _ := fleet.App(client.ObjectKeyFromObject(h.work(name, cluster)))
		return len(app.Starts)
	}
	for _, name := range names {
		h.g.Eventually(func() int { return started(name) }, 5*time.Second, interval).Should(Equal(1), func() string {
			return "the request of " + name + " reached its cluster once: " + h.explainApps([]string{name})
		})
	}
	slow.Store(0)
}
