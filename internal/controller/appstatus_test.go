package controller

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/appstatus"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/report"
	"github.com/argocd-pull/argocd-pull/internal/test/workfixture"
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
		manifestwork.FeedbackHealth:     "Degraded",
		manifestwork.FeedbackSync:       "Synced",
		manifestwork.FeedbackRevision:   "53e28ff20cc530b9ada2173fbbd64d48338583ba",
		manifestwork.FeedbackPhase:      "Failed",
		manifestwork.FeedbackStartedAt:  "2026-11-21T10:00:00Z",
		manifestwork.FeedbackFinishedAt: "2026-11-21T10:00:05Z",
		manifestwork.FeedbackMessage:    "one or more objects failed to apply",
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
	h.report("web", cluster, w.Generation, map[string]string{manifestwork.FeedbackHealth: "Healthy"})
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
			manifestwork.FeedbackHealth:           health,
			manifestwork.FeedbackSync:             sync,
			manifestwork.FeedbackRevision:         "sha-of-" + compared,
			manifestwork.FeedbackComparedRepoURL:  "https://git.example/apps",
			manifestwork.FeedbackComparedPath:     "guestbook",
			manifestwork.FeedbackComparedRevision: compared,
		}
		if phase != "" {
			v[manifestwork.FeedbackPhase] = phase
			v[manifestwork.FeedbackStartedAt] = "2026-11-21T10:00:00Z"
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

// The delivery protocol against a real apiserver, with this test as the work agent and the managed
// Argo CD (test/e2e runs the real agent): a request stays in the work while the managed cluster
// runs it, is cleared from the hub only once finished, and the same request set again is a new
// delivery.
func TestSyncAndRefreshAreDeliveredOnceAndClearedWhenFinished(t *testing.T) {
	h := start(t)
	cluster := h.cluster()
	h.app("web", cluster)
	gen1 := h.work("web", cluster).Generation
	h.report("web", cluster, gen1, map[string]string{manifestwork.FeedbackHealth: "Healthy", manifestwork.FeedbackSync: "Synced",
		manifestwork.FeedbackPhase: "Succeeded", manifestwork.FeedbackStartedAt: "2026-11-21T09:00:00Z"})
	h.g.Eventually(func() string { return statusField(h.getApp("web"), "health", "status") }, timeout, interval).Should(Equal("Healthy"))

	op := map[string]any{"initiatedBy": map[string]any{"username": "admin"}, "sync": map[string]any{"revision": "v2"}}
	request := func(sync, refresh bool) {
		h.updateApp("web", func(u *unstructured.Unstructured) {
			if sync {
				u.Object["operation"] = op
			}
			if refresh {
				a := u.GetAnnotations()
				a[argocd.RefreshAnnotation] = "hard"
				u.SetAnnotations(a)
			}
		})
	}
	hubRequests := func() []bool {
		app := h.getApp("web")
		_, sync := app.Object["operation"]
		_, refresh := app.GetAnnotations()[argocd.RefreshAnnotation]
		return []bool{sync, refresh}
	}
	// carried waits for the work to carry a sync delivery other than previous and returns its ID.
	carried := func(previous string) (*workv1.ManifestWork, string) {
		var w *workv1.ManifestWork
		h.g.Eventually(func() string {
			w = h.work("web", cluster)
			return workfixture.Payload(t, w, 0).GetAnnotations()[api.SyncDeliveryAnnotation]
		}, timeout, interval).ShouldNot(BeElementOf("", previous))
		return w, workfixture.Payload(t, w, 0).GetAnnotations()[api.SyncDeliveryAnnotation]
	}
	// spoke is the managed Application's feedback: delivery annotations, .operation and the last
	// operation state.
	spoke := func(synced, held, started, phase string, refresh string, refreshPending bool) map[string]string {
		v := map[string]string{manifestwork.FeedbackHealth: "Healthy", manifestwork.FeedbackSync: "Synced",
			manifestwork.FeedbackSyncDelivered: synced, manifestwork.FeedbackSyncHeld: held,
			manifestwork.FeedbackRefreshDelivered: refresh, manifestwork.FeedbackPhase: phase, manifestwork.FeedbackStartedAt: "2026-11-21T09:00:00Z"}
		if started != "" {
			v[manifestwork.FeedbackSyncStarted] = started
			v[manifestwork.FeedbackStartedAt] = "2026-11-21T10:00:00Z"
		}
		if refreshPending {
			v[manifestwork.FeedbackRefreshPending] = "hard"
		}
		for k, val := range v {
			if val == "" {
				delete(v, k)
			}
		}
		return v
	}

	// 1. A sync and a hard refresh together: the payload carries both, each with its delivery ID.
	request(true, true)
	w, id1 := carried("")
	p := workfixture.Payload(t, w, 0)
	h.g.Expect(manifestwork.DeliveryID(p.Object["operation"].(map[string]any))).To(Equal(id1))
	h.g.Expect(p.GetAnnotations()).To(HaveKeyWithValue(argocd.RefreshAnnotation, "hard"))
	refreshID := p.GetAnnotations()[api.RefreshDeliveryAnnotation]
	h.g.Expect(refreshID).NotTo(BeEmpty())

	// Applied, waiting there: nothing is cleared.
	h.report("web", cluster, w.Generation, spoke(id1, id1, "", "Succeeded", refreshID, true))
	h.g.Consistently(hubRequests, time.Second, 100*time.Millisecond).Should(Equal([]bool{true, true}))
	// The hub does not read Healthy for what ran before the requested sync.
	h.g.Eventually(func() string { return statusField(h.getApp("web"), "health", "status") }, timeout, interval).Should(Equal("Progressing"))

	// Refreshed, and the sync running (a sync wave waits): the refresh is cleared, the sync stays
	// on the hub and in the work.
	h.report("web", cluster, w.Generation, spoke(id1, id1, id1, "Running", refreshID, false))
	h.g.Eventually(hubRequests, timeout, interval).Should(Equal([]bool{true, false}))
	h.g.Expect(h.getApp("web").GetAnnotations()).To(HaveKeyWithValue(api.RefreshDeliveredAnnotation, refreshID))
	h.g.Consistently(func() string {
		return manifestwork.DeliveryID(workfixture.Payload(t, h.work("web", cluster), 0).Object["operation"].(map[string]any))
	}, 2*time.Second, 100*time.Millisecond).Should(Equal(id1), "the running operation stays in the work")
	h.g.Expect(hubRequests()).To(Equal([]bool{true, false}))
	h.g.Expect(statusField(h.getApp("web"), "operationState", "phase")).To(Equal("Running"))

	// Finished: cleared from the hub in the write that records it.
	w = h.work("web", cluster)
	h.report("web", cluster, w.Generation, spoke(id1, "", id1, "Succeeded", refreshID, false))
	h.g.Eventually(hubRequests, timeout, interval).Should(Equal([]bool{false, false}))
	app := h.getApp("web")
	h.g.Expect(statusField(app, "operationState", "phase")).To(Equal("Succeeded"))
	opState, _, _ := unstructured.NestedMap(app.Object, "status", "operationState", "operation")
	h.g.Expect(manifestwork.DeliveryID(opState)).To(Equal(id1))
	h.g.Eventually(func() []string { return h.eventsFor("web") }, timeout, interval).Should(ContainElement(HavePrefix(ReasonDelivered)))
	// Both cleared, they leave the work at once: kept, its feedback would ask for reconciledAt at rest.
	h.g.Eventually(func() string { return h.work("web", cluster).Annotations[api.DeliveriesAnnotation] }, timeout, interval).Should(BeEmpty(),
		"the finished, cleared requests leave the work")

	// 2. The same sync again, right after: a new delivery, run and cleared again.
	request(true, false)
	w, id2 := carried(id1)
	h.report("web", cluster, w.Generation, spoke(id2, "", id2, "Succeeded", "", false))
	h.g.Eventually(hubRequests, timeout, interval).Should(Equal([]bool{false, false}))

	// 3. And once more: every request is a delivery of its own.
	request(true, false)
	_, id3 := carried(id2)
	h.g.Expect(id3).NotTo(Equal(id1))
}

// A sync the managed cluster finished while the hub still holds its request (its Argo CD has not
// compared the Application since): a change of the Application in that moment re-applies the
// payload, and a payload that still carried .operation would have the managed Argo CD run the
// sync a second time. The changed payload carries no operation, and it does not come back once the
// hub clears the request.
func TestAFinishedSyncIsNotCarriedAgainByAChangeBeforeTheHubClearsIt(t *testing.T) {
	h := start(t)
	cluster := h.cluster()
	h.app("web", cluster)
	w := h.work("web", cluster)
	h.report("web", cluster, w.Generation, map[string]string{manifestwork.FeedbackHealth: "Healthy", manifestwork.FeedbackSync: "Synced"})
	h.g.Eventually(func() string { return statusField(h.getApp("web"), "health", "status") }, timeout, interval).Should(Equal("Healthy"))

	h.updateApp("web", func(u *unstructured.Unstructured) {
		u.Object["operation"] = map[string]any{"initiatedBy": map[string]any{"username": "admin"}, "sync": map[string]any{}}
	})
	var id string
	h.g.Eventually(func() string {
		w = h.work("web", cluster)
		id = workfixture.Payload(t, w, 0).GetAnnotations()[api.SyncDeliveryAnnotation]
		return id
	}, timeout, interval).ShouldNot(BeEmpty())
	finished := func(syncStatus, reconciledAt string) map[string]string {
		return map[string]string{manifestwork.FeedbackHealth: "Healthy", manifestwork.FeedbackSync: syncStatus,
			manifestwork.FeedbackSyncDelivered: id, manifestwork.FeedbackSyncStarted: id, manifestwork.FeedbackPhase: "Succeeded",
			manifestwork.FeedbackStartedAt: "2026-11-26T10:00:00Z", manifestwork.FeedbackFinishedAt: "2026-11-26T10:00:05Z",
			manifestwork.FeedbackReconciledAt: reconciledAt}
	}
	// Finished, not compared since: the hub keeps the request and shows the operation Running.
	h.report("web", cluster, w.Generation, finished("OutOfSync", "2026-11-26T09:59:00Z"))
	h.g.Eventually(func() string { return statusField(h.getApp("web"), "operationState", "phase") }, timeout, interval).Should(Equal("Running"))
	h.g.Expect(h.getApp("web").Object).To(HaveKey("operation"))

	// A commit changes the Application meanwhile: the work changes, without the finished sync.
	h.updateApp("web", func(u *unstructured.Unstructured) {
		h.g.Expect(unstructured.SetNestedField(u.Object, "v3", "spec", "source", "targetRevision")).To(Succeed())
	})
	h.g.Eventually(func() string {
		w = h.work("web", cluster)
		revision, _, _ := unstructured.NestedString(workfixture.Payload(t, w, 0).Object, "spec", "source", "targetRevision")
		return revision
	}, timeout, interval).Should(Equal("v3"))
	h.g.Expect(workfixture.Payload(t, w, 0).Object).NotTo(HaveKey("operation"), "the managed cluster finished it: applied again, it would run again")
	h.g.Expect(h.getApp("web").Object).To(HaveKey("operation"), "the hub clears it once the cluster compared since")

	// Compared since: the hub clears the request, and the payload never carries it again.
	h.report("web", cluster, w.Generation, finished("Synced", "2026-11-26T10:00:06Z"))
	h.g.Eventually(func() map[string]any { return h.getApp("web").Object }, timeout, interval).ShouldNot(HaveKey("operation"))
	h.g.Expect(statusField(h.getApp("web"), "operationState", "phase")).To(Equal("Succeeded"))
	h.g.Consistently(func() map[string]any { return workfixture.Payload(t, h.work("web", cluster), 0).Object }, 2*time.Second, 100*time.Millisecond).ShouldNot(HaveKey("operation"))
}

// Two clusters of a RollingSync ApplicationSet: when the second one's Argo CD finds a new commit
// first, the first one must not read Synced at the old revision (its step would count as done and
// the second step would sync before it). It reads Synced again once it caught up.
func TestRollingSyncClusterBehindItsFleetIsNotSynced(t *testing.T) {
	h := start(t)
	set := h.appSet("rollout")
	h.updateAppSet(set, map[string]any{"type": "RollingSync"})
	c1, c2 := h.cluster(), h.cluster()
	h.app("step1", c1, ownedBy(set))
	h.app("step2", c2, ownedBy(set))
	hub := h.hubSync
	h.report("step1", c1, h.work("step1", c1).Generation, healthyAt("Synced", "r1"))
	h.report("step2", c2, h.work("step2", c2).Generation, healthyAt("Synced", "r1"))
	h.g.Eventually(func() []string { return hub("step1") }, timeout, interval).Should(Equal([]string{"Synced", "r1"}))

	// cluster2 finds r2 first.
	h.report("step2", c2, h.work("step2", c2).Generation, healthyAt("OutOfSync", "r2"))
	h.g.Eventually(func() []string { return hub("step2") }, timeout, interval).Should(Equal([]string{"OutOfSync", "r2"}))
	h.g.Expect(hub("step1")).To(Equal([]string{"OutOfSync", "r2"}),
		"written before cluster2's status, at the revision its fleet went ahead to (Argo CD 3.4+ waits only on a changed revision)")

	// cluster1 synced r2: Synced again, and cluster2 is not put behind by it.
	h.report("step1", c1, h.work("step1", c1).Generation, healthyAt("Synced", "r2"))
	h.g.Eventually(func() []string { return hub("step1") }, timeout, interval).Should(Equal([]string{"Synced", "r2"}))
	h.g.Consistently(func() []string { return hub("step1") }, time.Second, 100*time.Millisecond).Should(Equal([]string{"Synced", "r2"}))
}

// A RollingSync step whose cluster's delivery is paused: the ApplicationSet controller's new
// revision and sync request do not reach it, and while the cluster reports the revision it still
// runs, its hub Application never reads what the ApplicationSet controller counts as done; it
// and the report say it is paused. Resumed, the revision and the request are delivered.
func TestAPausedClusterHoldsItsRollingSyncStep(t *testing.T) {
	h := start(t)
	set := h.appSet("rollout")
	h.updateAppSet(set, map[string]any{"type": "RollingSync"})
	cluster := h.cluster()
	h.app("step1", cluster, ownedBy(set))
	runs := func(compared string) map[string]string {
		return map[string]string{manifestwork.FeedbackHealth: "Healthy", manifestwork.FeedbackSync: "Synced",
			manifestwork.FeedbackRevision: "sha-of-" + compared, manifestwork.FeedbackComparedRepoURL: "https://git.example/apps",
			manifestwork.FeedbackComparedPath: "guestbook", manifestwork.FeedbackComparedRevision: compared,
			manifestwork.FeedbackPhase: "Succeeded", manifestwork.FeedbackStartedAt: "2026-11-26T10:00:00Z"}
	}
	h.report("step1", cluster, h.work("step1", cluster).Generation, runs("main"))
	h.g.Eventually(func() bool { return rollingSyncSeesHealthy(h.getApp("step1")) }, timeout, interval).Should(BeTrue())

	h.updateApp("step1", func(u *unstructured.Unstructured) { setAnnotation(u, api.PausedAnnotation, "incident-7") })
	var paused *workv1.ManifestWork
	h.g.Eventually(func() bool {
		paused = h.writtenWork("step1", cluster)
		return manifestwork.Paused(paused)
	}, timeout, interval).Should(BeTrue())

	// The ApplicationSet controller's step: the new revision, and a sync request.
	h.updateApp("step1", func(u *unstructured.Unstructured) {
		h.g.Expect(unstructured.SetNestedField(u.Object, "v2", "spec", "source", "targetRevision")).To(Succeed())
		u.Object["operation"] = map[string]any{"initiatedBy": map[string]any{"username": "applicationset-controller", "automated": true}, "sync": map[string]any{}}
	})
	h.report("step1", cluster, paused.Generation, runs("main"))
	h.g.Eventually(func() string { return statusField(h.getApp("step1"), "sync", "status") }, timeout, interval).Should(Equal("OutOfSync"))
	h.g.Consistently(func() bool { return rollingSyncSeesHealthy(h.getApp("step1")) }, 2*time.Second, 100*time.Millisecond).
		Should(BeFalse(), "never done at v2 while the cluster runs main")
	h.g.Expect(h.writtenWork("step1", cluster).Generation).To(Equal(paused.Generation), "nothing delivered while paused")
	h.g.Eventually(func() string { return pausedMessage(h.getApp("step1")) }, timeout, interval).Should(HavePrefix("delivery paused by the Application (incident-7)"))
	h.g.Eventually(func() []string { return h.conditionsOf("rollout", "") }, timeout, interval).Should(ContainElement(report.ConditionPaused))

	// Resumed: the step's revision and request reach the cluster.
	h.updateApp("step1", func(u *unstructured.Unstructured) { setAnnotation(u, api.PausedAnnotation, "false") })
	h.g.Eventually(func() string {
		revision, _, _ := unstructured.NestedString(workfixture.Payload(t, h.writtenWork("step1", cluster), 0).Object, "spec", "source", "targetRevision")
		return revision
	}, timeout, interval).Should(Equal("v2"))
	h.g.Expect(workfixture.Payload(t, h.writtenWork("step1", cluster), 0).Object).To(HaveKey("operation"), "the sync requested meanwhile")
	pin, _, _ := unstructured.NestedString(workfixture.Payload(t, h.writtenWork("step1", cluster), 0).Object, "operation", "sync", "revision")
	h.g.Expect(pin).To(BeEmpty(), "not pinned to the revision of the source it replaces (sha-of-main): the latest of v2")
}

// The cluster that put its fleet behind leaves it: its Application is deleted, or wants another
// source. The siblings it put behind read Synced again at once, without waiting for a change of
// their own (before, nothing wrote them until their clusters reported something new).
func TestTheClusterThatPutItsFleetBehindLeavingFreesIt(t *testing.T) {
	h := start(t)
	set := h.appSet("rollout")
	h.updateAppSet(set, map[string]any{"type": "RollingSync"})
	c1, c2, c3 := h.cluster(), h.cluster(), h.cluster()
	hub := h.hubSync
	for name, cluster := range map[string]string{"step1": c1, "step2": c2, "step3": c3} {
		h.app(name, cluster, ownedBy(set))
		h.report(name, cluster, h.work(name, cluster).Generation, healthyAt("Synced", "r1"))
	}
	h.g.Eventually(func() []string { return hub("step1") }, timeout, interval).Should(Equal([]string{"Synced", "r1"}))

	// step3's cluster goes ahead, then its Application wants another source.
	h.report("step3", c3, h.work("step3", c3).Generation, healthyAt("OutOfSync", "r2"))
	h.g.Eventually(func() []string { return hub("step1") }, timeout, interval).Should(Equal([]string{"OutOfSync", "r2"}))
	h.updateApp("step3", func(app *unstructured.Unstructured) {
		app.Object["spec"].(map[string]any)["source"].(map[string]any)["targetRevision"] = "release-2"
	})
	h.g.Eventually(func() []string { return hub("step1") }, timeout, interval).Should(Equal([]string{"Synced", "r1"}), "step3 is no sibling any more")

	// step2's cluster goes ahead, then its Application is deleted.
	h.report("step2", c2, h.work("step2", c2).Generation, healthyAt("OutOfSync", "r2"))
	h.g.Eventually(func() []string { return hub("step1") }, timeout, interval).Should(Equal([]string{"OutOfSync", "r2"}))
	h.g.Expect(h.c.Delete(context.Background(), h.getApp("step2"))).To(Succeed())
	h.g.Eventually(func() []string { return hub("step1") }, timeout, interval).Should(Equal([]string{"Synced", "r1"}), "step2 is gone")
}

// An ApplicationSet that stops rolling out with RollingSync (another strategy, or none) has no
// barrier any more: the clusters it marked behind read what they report, at once (before, they
// stayed OutOfSync until their clusters reported something new).
func TestAnApplicationSetLeavingRollingSyncFreesItsFleet(t *testing.T) {
	h := start(t)
	set := h.appSet("rollout")
	h.updateAppSet(set, map[string]any{"type": "RollingSync"})
	c1, c2 := h.cluster(), h.cluster()
	hub := h.hubSync
	h.app("step1", c1, ownedBy(set))
	h.app("step2", c2, ownedBy(set))
	h.report("step1", c1, h.work("step1", c1).Generation, healthyAt("Synced", "r1"))
	h.report("step2", c2, h.work("step2", c2).Generation, healthyAt("Synced", "r1"))
	h.g.Eventually(func() []string { return hub("step1") }, timeout, interval).Should(Equal([]string{"Synced", "r1"}))
	h.report("step2", c2, h.work("step2", c2).Generation, healthyAt("OutOfSync", "r2"))
	h.g.Eventually(func() []string { return hub("step1") }, timeout, interval).Should(Equal([]string{"OutOfSync", "r2"}))

	h.updateAppSet(set, nil)
	h.g.Eventually(func() []string { return hub("step1") }, timeout, interval).Should(Equal([]string{"Synced", "r1"}), "no barrier without RollingSync")
	h.g.Eventually(func() []string { return hub("step2") }, timeout, interval).Should(Equal([]string{"OutOfSync", "r2"}), "what its own cluster reports")
}

// The hub Application says when what its cluster reports is not current, as the report does:
// its ManagedCluster is not available, or its work agent has not applied the current work in
// time. The health and sync status stay the last reported; the condition goes once it is current.
func TestTheHubApplicationSaysWhenItsClusterStatusIsStale(t *testing.T) {
	h := start(t, func(o *Options, _ string) { o.StaleAfter = 2 * time.Second })
	stale := func(name string) string {
		return argocd.ConditionMessage(h.getApp(name), appstatus.StaleCondition)
	}
	state := func(name string) []string {
		app := h.getApp(name)
		return []string{statusField(app, "health", "status"), statusField(app, "sync", "status")}
	}
	lost, quiet, silent := h.cluster(), h.cluster(), h.cluster()
	h.app("lost", lost)
	h.report("lost", lost, h.work("lost", lost).Generation, feedback("Healthy", "Synced"))
	h.app("quiet", quiet)
	h.report("quiet", quiet, h.work("quiet", quiet).Generation, feedback("Healthy", "Synced"))
	h.g.Eventually(func() []string { return state("quiet") }, timeout, interval).Should(Equal([]string{"Healthy", "Synced"}))

	// lost's ManagedCluster turns unavailable.
	since := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
	setAvailable := func(cluster string, status metav1.ConditionStatus, reason string) {
		mc := &clusterv1.ManagedCluster{}
		h.g.Expect(h.c.Get(context.Background(), types.NamespacedName{Name: cluster}, mc)).To(Succeed())
		mc.Status.Conditions = []metav1.Condition{{Type: clusterv1.ManagedClusterConditionAvailable, Status: status, Reason: reason, Message: reason, LastTransitionTime: since}}
		h.g.Expect(h.c.Status().Update(context.Background(), mc)).To(Succeed())
	}
	setAvailable(lost, metav1.ConditionUnknown, "ManagedClusterLeaseUpdateStopped")
	h.g.Eventually(func() string { return stale("lost") }, timeout, interval).Should(Equal(fmt.Sprintf(
		"no status from %s since %s: the ManagedCluster is not available (ManagedClusterLeaseUpdateStopped); the health and sync status shown are the last it reported",
		lost, since.UTC().Format(time.RFC3339))))
	h.g.Expect(state("lost")).To(Equal([]string{"Healthy", "Synced"}))
	setAvailable(lost, metav1.ConditionTrue, "ManagedClusterAvailable")
	h.g.Eventually(func() string { return stale("lost") }, timeout, interval).Should(BeEmpty())

	// quiet's hub Application changes; its work agent never applies the new work.
	h.updateApp("quiet", func(app *unstructured.Unstructured) {
		app.Object["spec"].(map[string]any)["source"].(map[string]any)["targetRevision"] = "release-2"
	})
	h.g.Eventually(func() string { return stale("quiet") }, timeout, interval).Should(ContainSubstring(
		"no status from " + quiet + " since "))
	h.g.Expect(stale("quiet")).To(ContainSubstring("its work agent has not applied the ManifestWork written then"))
	h.g.Expect(state("quiet")).To(Equal([]string{"Progressing", "OutOfSync"}), "a RollingSync step does not count it done")
	h.report("quiet", quiet, h.writtenWork("quiet", quiet).Generation, feedback("Healthy", "Synced"))
	h.g.Eventually(func() string { return stale("quiet") }, timeout, interval).Should(BeEmpty())

	// silent's work agent never answers at all: Unknown, and why.
	h.app("silent", silent)
	h.g.Eventually(func() string { return stale("silent") }, timeout, interval).Should(ContainSubstring("its work agent has not applied the ManifestWork"))
	h.g.Expect(state("silent")).To(Equal([]string{"Unknown", "Unknown"}))
}

func (h *harness) updateAppSet(set *unstructured.Unstructured, strategy map[string]any) {
	h.t.Helper()
	h.g.Eventually(func() error {
		got := set.DeepCopy()
		if err := h.c.Get(context.Background(), client.ObjectKeyFromObject(set), got); err != nil {
			return err
		}
		got.Object["spec"].(map[string]any)["strategy"] = strategy
		return h.c.Update(context.Background(), got)
	}, timeout, interval).Should(Succeed())
}

// argocd app get --refresh and argocd app sync on the hub: the request changes nothing in the hub
// status until the managed cluster answers it (before, the new generation read OutOfSync and
// Progressing until applied), and the answer writes status.reconciledAt, which the CLI waits for
// (reconciledAt >= operationState.finishedAt).
func TestARequestChangesNothingUntilAnsweredAndTheAnswerCarriesReconciledAt(t *testing.T) {
	h := start(t)
	cluster := h.cluster()
	h.app("web", cluster)
	gen := h.work("web", cluster).Generation
	atRest := map[string]string{manifestwork.FeedbackHealth: "Healthy", manifestwork.FeedbackSync: "Synced"}
	h.report("web", cluster, gen, atRest)
	h.g.Eventually(func() string { return statusField(h.getApp("web"), "health", "status") }, timeout, interval).Should(Equal("Healthy"))
	h.g.Expect(h.getApp("web").Object["status"]).NotTo(HaveKey("reconciledAt"), "nothing at rest")

	h.updateApp("web", func(u *unstructured.Unstructured) {
		a := u.GetAnnotations()
		a[argocd.RefreshAnnotation] = "normal"
		u.SetAnnotations(a)
	})
	var w *workv1.ManifestWork
	h.g.Eventually(func() int64 { w = h.work("web", cluster); return w.Generation }, timeout, interval).Should(BeNumerically(">", gen))
	refreshID := workfixture.Payload(t, w, 0).GetAnnotations()[api.RefreshDeliveryAnnotation]
	h.g.Expect(refreshID).NotTo(BeEmpty())
	h.g.Expect(w.Annotations).To(HaveKeyWithValue(api.RequestsOnlyAnnotation, fmt.Sprintf("%d/%d", gen, w.Generation)))
	// The agent has not applied the new generation: the hub keeps what the cluster reported.
	h.report("web", cluster, gen, atRest)
	h.g.Consistently(func() []string {
		app := h.getApp("web")
		return []string{statusField(app, "sync", "status"), statusField(app, "health", "status")}
	}, 2*time.Second, 100*time.Millisecond).Should(Equal([]string{"Synced", "Healthy"}))

	// Answered: the refresh cleared, with the time the cluster's Argo CD compared.
	answered := maps.Clone(atRest)
	answered[manifestwork.FeedbackRefreshDelivered] = refreshID
	answered[manifestwork.FeedbackReconciledAt] = "2026-11-25T10:00:05Z"
	h.report("web", cluster, w.Generation, answered)
	h.g.Eventually(func() string { return statusField(h.getApp("web"), "reconciledAt") }, timeout, interval).Should(Equal("2026-11-25T10:00:05Z"))
	h.g.Expect(h.getApp("web").GetAnnotations()).NotTo(HaveKey(argocd.RefreshAnnotation))
}

// argocd app terminate-op sets the hub's operation phase Terminating: the work carries the same
// phase to the managed Application beside the request's .operation, again when Argo CD wrote its
// Running over an attempt, and the hub keeps showing Terminating until the cluster reports the
// operation finished; the request to terminate leaves the work with the request.
func TestTerminateOpIsCarriedToTheManagedCluster(t *testing.T) {
	h := start(t)
	cluster := h.cluster()
	h.app("web", cluster)
	h.updateApp("web", func(u *unstructured.Unstructured) {
		u.Object["operation"] = map[string]any{"initiatedBy": map[string]any{"username": "admin"}, "sync": map[string]any{}}
	})
	var id string
	h.g.Eventually(func() string {
		id = workfixture.Payload(t, h.work("web", cluster), 0).GetAnnotations()[api.SyncDeliveryAnnotation]
		return id
	}, timeout, interval).ShouldNot(BeEmpty())
	running := func(extra map[string]string) map[string]string {
		v := map[string]string{manifestwork.FeedbackHealth: "Progressing", manifestwork.FeedbackSync: "OutOfSync",
			manifestwork.FeedbackSyncDelivered: id, manifestwork.FeedbackSyncHeld: id, manifestwork.FeedbackSyncStarted: id,
			manifestwork.FeedbackPhase: "Running", manifestwork.FeedbackStartedAt: "2026-11-25T10:00:00Z"}
		maps.Copy(v, extra)
		return v
	}
	h.report("web", cluster, h.work("web", cluster).Generation, running(nil))
	h.g.Eventually(func() string { return statusField(h.getApp("web"), "operationState", "phase") }, timeout, interval).Should(Equal("Running"))

	// As Argo CD's API server does: the phase of the operation the hub shows, by an update.
	h.updateApp("web", func(u *unstructured.Unstructured) {
		h.g.Expect(unstructured.SetNestedField(u.Object, manifestwork.PhaseTerminating, "status", "operationState", "phase")).To(Succeed())
	})
	attempt := func() string {
		p := workfixture.Payload(t, h.work("web", cluster), 0)
		phase, _, _ := unstructured.NestedString(p.Object, "status", "operationState", "phase")
		return phase + " " + p.GetAnnotations()[api.TerminateDeliveryAnnotation]
	}
	h.g.Eventually(attempt, timeout, interval).Should(Equal("Terminating 1"))
	h.g.Expect(workfixture.Payload(t, h.work("web", cluster), 0).Object).To(HaveKey("operation"), "carried beside the request it stops")
	h.g.Consistently(func() string { return statusField(h.getApp("web"), "operationState", "phase") }, time.Second, 100*time.Millisecond).
		Should(Equal(manifestwork.PhaseTerminating), "the hub keeps showing the request to terminate")

	// Applied, and Argo CD's controller wrote Running over it: a second attempt.
	h.report("web", cluster, h.work("web", cluster).Generation, running(map[string]string{manifestwork.FeedbackTerminateDelivered: "1"}))
	h.g.Eventually(attempt, timeout, interval).Should(Equal("Terminating 2"))

	// Terminated there: the hub shows it, clears the request, and the work carries neither.
	h.report("web", cluster, h.work("web", cluster).Generation, running(map[string]string{manifestwork.FeedbackTerminateDelivered: "2",
		manifestwork.FeedbackSyncHeld: "", manifestwork.FeedbackPhase: "Failed", manifestwork.FeedbackMessage: "Operation terminated",
		manifestwork.FeedbackFinishedAt: "2026-11-25T10:01:00Z", manifestwork.FeedbackReconciledAt: "2026-11-25T10:01:00Z"}))
	h.g.Eventually(func() string { return statusField(h.getApp("web"), "operationState", "message") }, timeout, interval).Should(Equal("Operation terminated"))
	h.g.Expect(statusField(h.getApp("web"), "operationState", "phase")).To(Equal("Failed"))
	h.g.Expect(h.getApp("web").Object).NotTo(HaveKey("operation"))
	h.g.Eventually(func() map[string]any { return workfixture.Payload(t, h.work("web", cluster), 0).Object }, timeout, interval).
		ShouldNot(Or(HaveKey("operation"), HaveKey("status")))
}

// argocd app terminate-op on an operation the managed cluster started itself (an automated sync
// there, no request of the hub's) is not carried: a Warning event says why and what to do, the
// hub shows the operation running again, and the work carries no request to terminate.
func TestTerminateOpOfAnOperationTheHubDidNotDeliverIsExplained(t *testing.T) {
	h := start(t)
	cluster := h.cluster()
	h.app("web", cluster)
	running := map[string]string{manifestwork.FeedbackHealth: "Progressing", manifestwork.FeedbackSync: "OutOfSync",
		manifestwork.FeedbackPhase: "Running", manifestwork.FeedbackStartedAt: "2026-11-25T10:00:00Z"}
	h.report("web", cluster, h.work("web", cluster).Generation, running)
	h.g.Eventually(func() string { return statusField(h.getApp("web"), "operationState", "phase") }, timeout, interval).Should(Equal("Running"))

	h.updateApp("web", func(u *unstructured.Unstructured) {
		h.g.Expect(unstructured.SetNestedField(u.Object, manifestwork.PhaseTerminating, "status", "operationState", "phase")).To(Succeed())
	})
	h.g.Eventually(func() []corev1.Event { return h.events("web") }, timeout, interval).Should(ContainElement(And(
		HaveField("Type", corev1.EventTypeWarning),
		HaveField("Reason", ReasonTerminateNotDelivered),
		HaveField("Message", And(ContainSubstring("The operation running on cluster "+cluster+" was not requested from the hub"),
			ContainSubstring("Terminate it on the managed cluster"))),
	)))
	h.g.Eventually(func() string { return statusField(h.getApp("web"), "operationState", "phase") }, timeout, interval).
		Should(Equal("Running"), "the hub shows what the cluster runs")
	h.g.Consistently(func() map[string]string { return workfixture.Payload(t, h.work("web", cluster), 0).GetAnnotations() }, 2*time.Second, 200*time.Millisecond).
		ShouldNot(HaveKey(api.TerminateDeliveryAnnotation), "nothing to terminate is carried")
}

// A managed cluster writes its works' status, so it can report any revision as the one it went
// ahead to. Alone, its word holds its RollingSync siblings behind for a bounded window only (the
// barrier still protects a commit one cluster finds first), and after it no forged revision it
// reports, however often it changes it, holds them again or writes them: the ApplicationSet
// controller's rollout is not stalled by one cluster. Here cluster1's work status is forged as
// its compromised agent would write it.
func TestOneClusterCannotHoldItsRollingSyncSiblings(t *testing.T) {
	// Long enough for the real commit's window below to be seen under -race on two busy cores.
	const hold = 8 * time.Second
	h := start(t, func(o *Options, _ string) { o.RollingSyncUnconfirmedHold = hold })
	set := h.appSet("rollout")
	h.updateAppSet(set, map[string]any{"type": "RollingSync"})
	attacker, honest := h.cluster(), h.cluster()
	h.app("step1", attacker, ownedBy(set))
	h.app("step2", honest, ownedBy(set))
	hub := h.hubSync
	h.report("step1", attacker, h.work("step1", attacker).Generation, healthyAt("Synced", "r1"))
	h.report("step2", honest, h.work("step2", honest).Generation, healthyAt("Synced", "r1"))
	h.g.Eventually(func() []string { return hub("step2") }, timeout, interval).Should(Equal([]string{"Synced", "r1"}))

	// The first forged revision holds the honest cluster, as a real commit found first would...
	h.report("step1", attacker, h.work("step1", attacker).Generation, healthyAt("OutOfSync", "forged-0"))
	h.g.Eventually(func() []string { return hub("step2") }, timeout, interval).Should(Equal([]string{"OutOfSync", "forged-0"}))
	// ...for the window only, though the attacker keeps reporting it.
	h.g.Eventually(func() []string { return hub("step2") }, hold+timeout, interval).Should(Equal([]string{"Synced", "r1"}),
		"no other cluster reports forged-0: after the window its word alone holds nobody")

	// Other forged revisions, again and again: the honest cluster reads what it reports, and is
	// not written at all.
	rv := h.getApp("step2").GetResourceVersion()
	for i := 1; i <= 5; i++ {
		h.report("step1", attacker, h.work("step1", attacker).Generation, healthyAt("OutOfSync", fmt.Sprint("forged-", i)))
		h.g.Eventually(func() []string { return hub("step1") }, timeout, interval).Should(Equal([]string{"OutOfSync", fmt.Sprint("forged-", i)}))
		h.g.Consistently(func() []string { return hub("step2") }, 500*time.Millisecond, 50*time.Millisecond).Should(Equal([]string{"Synced", "r1"}))
	}
	h.g.Expect(h.getApp("step2").GetResourceVersion()).To(Equal(rv), "the forged reports caused no write of the honest cluster's Application")

	// A real commit: the honest cluster finds r2 first. The attacker cannot have it undone: r2 is
	// the honest cluster's word, held against the attacker until the attacker reports it too.
	h.report("step2", honest, h.work("step2", honest).Generation, healthyAt("OutOfSync", "r2"))
	h.g.Eventually(func() []string { return hub("step2") }, timeout, interval).Should(Equal([]string{"OutOfSync", "r2"}))
	// The barrier itself: the attacker now says it is Synced at r1, as a cluster that has not
	// compared against r2 would; the hub shows it behind, OutOfSync at r2, so that no step counts
	// it done on r1's health. Without the barrier the hub would show it Synced at r1.
	h.report("step1", attacker, h.work("step1", attacker).Generation, healthyAt("Synced", "r1"))
	h.g.Eventually(func() []string { return hub("step1") }, hold, interval).Should(Equal([]string{"OutOfSync", "r2"}),
		"the attacker held behind the honest cluster's commit, within that cluster's window")
}

// healthyAt is the feedback of a Healthy Application at sync and revision.
func healthyAt(sync, revision string) map[string]string {
	return map[string]string{manifestwork.FeedbackHealth: "Healthy", manifestwork.FeedbackSync: sync, manifestwork.FeedbackRevision: revision}
}

// hubSync is the sync status and revision the hub Application name shows.
func (h *harness) hubSync(name string) []string {
	app := h.getApp(name)
	return []string{statusField(app, "sync", "status"), statusField(app, "sync", "revision")}
}
