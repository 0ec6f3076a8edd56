package controller

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/propagation"
)

func TestFeedbackReachesTheHubApplication(t *testing.T) {
	h := start(t)
	cluster := h.cluster()
	h.app("web", cluster)
	w := h.work("web", cluster)
	// Fields the status controller does not own must survive its writes.
	h.updateApp("web", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": "SharedResourceWarning", "message": "kept"}}, "status", "conditions")
	})

	h.report("web", cluster, w.Generation, map[string]string{
		propagation.FeedbackHealth:     "Degraded",
		propagation.FeedbackSync:       "Synced",
		propagation.FeedbackRevision:   "53e28ff20cc530b9ada2173fbbd64d48338583ba",
		propagation.FeedbackPhase:      "Failed",
		propagation.FeedbackStartedAt:  "2026-11-21T10:00:00Z",
		propagation.FeedbackFinishedAt: "2026-11-21T10:00:05Z",
		propagation.FeedbackMessage:    "one or more objects failed to apply",
	})
	h.g.Eventually(func() string { return statusField(h.getApp("web"), "health", "status") }, timeout, interval).Should(Equal("Degraded"))
	app := h.getApp("web")
	h.g.Expect(statusField(app, "sync", "status")).To(Equal("Synced"))
	h.g.Expect(statusField(app, "sync", "revision")).To(Equal("53e28ff20cc530b9ada2173fbbd64d48338583ba"))
	h.g.Expect(statusField(app, "operationState", "phase")).To(Equal("Failed"))
	h.g.Expect(statusField(app, "operationState", "startedAt")).To(Equal("2026-11-21T10:00:00Z"))
	h.g.Expect(statusField(app, "operationState", "finishedAt")).To(Equal("2026-11-21T10:00:05Z"))
	h.g.Expect(statusField(app, "operationState", "message")).To(Equal("one or more objects failed to apply"))
	conditions, _, _ := unstructured.NestedSlice(app.Object, "status", "conditions")
	h.g.Expect(conditions).To(ContainElement(HaveKeyWithValue("type", "SharedResourceWarning")))
	h.g.Expect(app.Object["spec"]).To(HaveKeyWithValue("project", "default"), "spec untouched")

	// A work status change that says nothing new about the Application writes nothing.
	before := h.getApp("web").GetResourceVersion()
	h.g.Eventually(func() error {
		got := &workv1.ManifestWork{}
		if err := h.c.Get(context.Background(), client.ObjectKeyFromObject(w), got); err != nil {
			return err
		}
		meta.SetStatusCondition(&got.Status.Conditions, metav1.Condition{Type: workv1.WorkAvailable, Status: metav1.ConditionTrue, Reason: "ResourcesAvailable", Message: "checked again", ObservedGeneration: got.Generation})
		return h.c.Status().Update(context.Background(), got)
	}, timeout, interval).Should(Succeed())
	h.g.Consistently(func() string { return h.getApp("web").GetResourceVersion() }, 2*time.Second, 100*time.Millisecond).Should(Equal(before))
}

func TestMissingFeedbackValuesDoNotCrash(t *testing.T) {
	h := start(t)
	cluster := h.cluster()
	h.app("web", cluster)
	w := h.work("web", cluster)
	h.report("web", cluster, w.Generation, nil)
	h.g.Eventually(func() string { return statusField(h.getApp("web"), "health", "status") }, timeout, interval).Should(Equal("Unknown"))
	h.report("web", cluster, w.Generation, map[string]string{propagation.FeedbackHealth: "Healthy"})
	h.g.Consistently(func() string { return statusField(h.getApp("web"), "sync", "status") }, time.Second, 100*time.Millisecond).Should(Equal("Unknown"))
	h.g.Expect(statusField(h.getApp("web"), "operationState", "phase")).To(BeEmpty())
}

// rollingSyncSeesHealthy is Argo CD v3.2's isApplicationHealthy: the test that moves an
// Application of a RollingSync step from Waiting or Progressing to Healthy.
func rollingSyncSeesHealthy(app *unstructured.Unstructured) bool {
	phase := statusField(app, "operationState", "phase")
	return statusField(app, "health", "status") == "Healthy" && statusField(app, "sync", "status") != "OutOfSync" &&
		(phase == "Succeeded" || phase == "")
}

func TestHubStatusIsHonestForProgressiveSync(t *testing.T) {
	h := start(t)
	cluster := h.cluster()
	h.app("web", cluster)
	spoke := func(health, sync, compared, phase string) map[string]string {
		v := map[string]string{
			propagation.FeedbackHealth:           health,
			propagation.FeedbackSync:             sync,
			propagation.FeedbackRevision:         "sha-of-" + compared,
			propagation.FeedbackComparedRepoURL:  "https://git.example/apps",
			propagation.FeedbackComparedPath:     "guestbook",
			propagation.FeedbackComparedRevision: compared,
		}
		if phase != "" {
			v[propagation.FeedbackPhase] = phase
			v[propagation.FeedbackStartedAt] = "2026-11-21T10:00:00Z"
		}
		return v
	}
	seen := func() (bool, string) {
		app := h.getApp("web")
		return rollingSyncSeesHealthy(app), statusField(app, "sync", "revision")
	}

	gen1 := h.work("web", cluster).Generation
	h.report("web", cluster, gen1, spoke("Healthy", "Synced", "main", "Succeeded"))
	h.g.Eventually(func() bool { ok, _ := seen(); return ok }, timeout, interval).Should(BeTrue(), "step 0: healthy at main")

	h.updateApp("web", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "v2", "spec", "source", "targetRevision")
	})
	h.g.Eventually(func() int64 { return h.work("web", cluster).Generation }, timeout, interval).Should(BeNumerically(">", gen1))
	gen2 := h.work("web", cluster).Generation

	// The managed cluster has not applied v2: its Healthy is about main.
	h.g.Eventually(func() string { return statusField(h.getApp("web"), "sync", "status") }, timeout, interval).Should(Equal("OutOfSync"))
	h.g.Expect(rollingSyncSeesHealthy(h.getApp("web"))).To(BeFalse())

	// Applied, but its Argo CD has not compared against v2 yet.
	h.report("web", cluster, gen2, spoke("Healthy", "Synced", "main", "Succeeded"))
	h.g.Consistently(func() bool { ok, _ := seen(); return ok }, 2*time.Second, 100*time.Millisecond).Should(BeFalse())

	// Syncing v2.
	h.report("web", cluster, gen2, spoke("Progressing", "Synced", "v2", "Running"))
	// (The stale state above also reads Progressing: wait for the new revision with it.)
	h.g.Eventually(func() []string {
		app := h.getApp("web")
		return []string{statusField(app, "health", "status"), statusField(app, "sync", "status"), statusField(app, "sync", "revision")}
	}, timeout, interval).Should(Equal([]string{"Progressing", "Synced", "sha-of-v2"}))
	h.g.Expect(rollingSyncSeesHealthy(h.getApp("web"))).To(BeFalse())

	// Healthy at v2: now, and only now, the step may advance.
	h.report("web", cluster, gen2, spoke("Healthy", "Synced", "v2", "Succeeded"))
	h.g.Eventually(func() bool { ok, _ := seen(); return ok }, timeout, interval).Should(BeTrue())
	_, rev := seen()
	h.g.Expect(rev).To(Equal("sha-of-v2"))
}

func TestManualSyncAndRefreshAreClearedOnceTheClusterActedOnThem(t *testing.T) {
	h := start(t)
	cluster := h.cluster()
	h.app("web", cluster)
	gen1 := h.work("web", cluster).Generation
	before := map[string]string{propagation.FeedbackPhase: "Succeeded", propagation.FeedbackStartedAt: "2026-11-21T09:00:00Z", propagation.FeedbackReconciledAt: "2026-11-21T09:00:01Z"}
	h.report("web", cluster, gen1, before)
	h.g.Eventually(func() string { return statusField(h.getApp("web"), "operationState", "startedAt") }, timeout, interval).Should(Equal("2026-11-21T09:00:00Z"))

	// A manual sync and a hard refresh requested on the hub.
	h.updateApp("web", func(u *unstructured.Unstructured) {
		u.Object["operation"] = map[string]any{"initiatedBy": map[string]any{"username": "admin"}, "sync": map[string]any{"revision": "v2"}}
		a := u.GetAnnotations()
		a[argocd.RefreshAnnotation] = "hard"
		u.SetAnnotations(a)
	})
	var carrying *workv1.ManifestWork
	h.g.Eventually(func() bool {
		carrying = h.work("web", cluster)
		_, ok := payload(t, carrying, 0).Object["operation"]
		return ok
	}, timeout, interval).Should(BeTrue(), "the work carries the operation")
	h.g.Expect(payload(t, carrying, 0).GetAnnotations()).To(HaveKeyWithValue(argocd.RefreshAnnotation, "hard"))
	h.g.Expect(carrying.Annotations).To(HaveKeyWithValue(propagation.DeliveryBaselineAnnotation, "2026-11-21T09:00:00Z|2026-11-21T09:00:01Z"))

	hubRequests := func() propagation.Requests { return propagation.RequestsOf(h.getApp("web")) }
	// Applied, but the managed Argo CD has not acted yet: the work keeps carrying both.
	h.report("web", cluster, carrying.Generation, before)
	h.g.Consistently(hubRequests, 2*time.Second, 100*time.Millisecond).Should(Equal(propagation.Requests{Sync: true, Refresh: true}))

	// It reconciled (the refresh), then started the sync: each is cleared on its own signal.
	refreshed := map[string]string{propagation.FeedbackPhase: "Succeeded", propagation.FeedbackStartedAt: "2026-11-21T09:00:00Z", propagation.FeedbackReconciledAt: "2026-11-21T10:00:00Z"}
	h.report("web", cluster, carrying.Generation, refreshed)
	h.g.Eventually(hubRequests, timeout, interval).Should(Equal(propagation.Requests{Sync: true}))
	synced := map[string]string{propagation.FeedbackPhase: "Running", propagation.FeedbackStartedAt: "2026-11-21T10:00:02Z", propagation.FeedbackReconciledAt: "2026-11-21T10:00:00Z"}
	// The hub rewrites the work without the refresh; the agent reports that newest generation.
	var current *workv1.ManifestWork
	h.g.Eventually(func() bool {
		current = h.work("web", cluster)
		return propagation.RequestsOf(payload(t, current, 0)).Refresh
	}, timeout, interval).Should(BeFalse(), "the work stops carrying the refresh")
	h.report("web", cluster, current.Generation, synced)
	h.g.Eventually(hubRequests, timeout, interval).Should(Equal(propagation.Requests{}))
	h.g.Eventually(func() []string { return h.eventsFor("web") }, timeout, interval).Should(ContainElement(HavePrefix(ReasonDelivered)))
	h.g.Eventually(func() bool {
		w := h.work("web", cluster)
		_, carried := w.Annotations[propagation.DeliveryBaselineAnnotation]
		return propagation.RequestsOf(payload(t, w, 0)).Any() || carried
	}, timeout, interval).Should(BeFalse(), "the next work carries neither")
}
