package manifestwork

import (
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/test/workfixture"
)

func TestFinalWork(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	cascade := []string{argocd.ResourcesFinalizer}
	// held is a held work (its Application the hub's, with the resources finalizer), written at
	// written, applied at generation applied of gen.
	held := func(gen, applied int64, written time.Time, mutate ...func(*unstructured.Unstructured)) *workv1.ManifestWork {
		w := requestWork(t, gen, applied, Deliveries{}, mutate...)
		w.Annotations[api.WrittenAtAnnotation] = written.Format(time.RFC3339)
		return w
	}
	long := now.Add(-time.Hour)

	t.Run("no resources finalizer: deleted now, whatever runs", func(t *testing.T) {
		g := NewWithT(t)
		updated, wait, err := FinalWork(held(3, 3, long), nil, Reported{Phase: "Running"}, now)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(updated).To(BeNil())
		g.Expect(wait).To(BeZero())
	})
	t.Run("the finalizer added at deletion (argocd app delete --cascade): written first", func(t *testing.T) {
		g := NewWithT(t)
		noFinalizer := func(u *unstructured.Unstructured) { u.SetFinalizers(nil) }
		updated, _, err := FinalWork(held(3, 3, long, noFinalizer), cascade, Reported{Phase: "Succeeded"}, now)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(updated).NotTo(BeNil())
		payload := workfixture.Payload(t, updated, 0)
		g.Expect(payload.GetFinalizers()).To(Equal(cascade))
		g.Expect(terminateAttempt(payload.Object)).To(BeZero(), "nothing runs: nothing to terminate")
	})
	t.Run("an operation running: a request to terminate it, with the finalizer", func(t *testing.T) {
		g := NewWithT(t)
		updated, _, err := FinalWork(held(3, 3, long), cascade, Reported{Phase: "Running"}, now)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(updated).NotTo(BeNil())
		g.Expect(terminateAttempt(workfixture.Payload(t, updated, 0).Object)).To(Equal(1))
		g.Expect(updated.Annotations[api.SpecHashAnnotation]).NotTo(Equal(held(3, 3, long).Annotations[api.SpecHashAnnotation]))
	})
	terminated := func(gen, applied int64, written time.Time) *workv1.ManifestWork {
		w := held(gen, applied, written)
		payload := workfixture.Payload(t, w, 0)
		markTerminate(payload.Object, 1)
		w.Spec.Workload.Manifests[0].Raw, _ = json.Marshal(payload.Object)
		w.Annotations[api.FinalizingAnnotation] = "true"
		return w
	}
	t.Run("written, the operation still running: waits out the grace", func(t *testing.T) {
		g := NewWithT(t)
		updated, wait, err := FinalWork(terminated(4, 4, now.Add(-30*time.Second)), cascade, Reported{Phase: "Terminating"}, now)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(updated).To(BeNil())
		g.Expect(wait).To(Equal(FinalGrace - 30*time.Second))
	})
	t.Run("written a moment ago with what the deletion needs, not applied yet: marked, so that its status is watched", func(t *testing.T) {
		g := NewWithT(t)
		updated, _, err := FinalWork(held(4, 3, now.Add(-time.Second)), cascade, Reported{Phase: "Succeeded"}, now)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(updated).NotTo(BeNil())
		g.Expect(updated.Annotations).To(HaveKey(api.FinalizingAnnotation))
		g.Expect(updated.Spec).To(Equal(held(4, 3, now.Add(-time.Second)).Spec), "nothing else changes")
	})
	t.Run("written and not applied yet: waits", func(t *testing.T) {
		g := NewWithT(t)
		_, wait, _ := FinalWork(terminated(4, 3, now.Add(-10*time.Second)), cascade, Reported{Phase: "Failed"}, now)
		g.Expect(wait).To(Equal(FinalGrace - 10*time.Second))
	})
	t.Run("applied, and the operation reads Running again (Argo CD wrote over the attempt): a second attempt", func(t *testing.T) {
		g := NewWithT(t)
		updated, _, err := FinalWork(terminated(4, 4, now.Add(-10*time.Second)), cascade, Reported{Phase: "Running", TerminateDelivered: "1"}, now)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(updated).NotTo(BeNil())
		g.Expect(terminateAttempt(workfixture.Payload(t, updated, 0).Object)).To(Equal(2))
	})
	t.Run("applied, Terminating there (a running operation being stopped): waits", func(t *testing.T) {
		g := NewWithT(t)
		updated, wait, _ := FinalWork(terminated(4, 4, now.Add(-10*time.Second)), cascade, Reported{Phase: "Terminating", TerminateDelivered: "1"}, now)
		g.Expect(updated).To(BeNil())
		g.Expect(wait).To(Equal(FinalGrace - 10*time.Second))
	})
	t.Run("applied, Terminating over an operation that had finished: deleted", func(t *testing.T) {
		// The hub read Running a moment before the operation ended; the attempt's phase landed on
		// the finished operation state (its finishedAt stays). Argo CD acts on a phase only with an
		// .operation beside it, so this one stays Terminating for good: nothing runs to wait for.
		g := NewWithT(t)
		updated, wait, err := FinalWork(terminated(4, 4, now.Add(-10*time.Second)), cascade,
			Reported{Phase: "Terminating", TerminateDelivered: "1", FinishedAt: "2026-11-25T11:59:45Z"}, now)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(updated).To(BeNil())
		g.Expect(wait).To(BeZero())
	})
	t.Run("a Terminating phase over a finished operation before the deletion: no attempt, deleted", func(t *testing.T) {
		g := NewWithT(t)
		updated, wait, err := FinalWork(held(3, 3, long), cascade, Reported{Phase: "Terminating", FinishedAt: "2026-11-25T11:00:00Z"}, now)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(updated).To(BeNil())
		g.Expect(wait).To(BeZero())
	})
	t.Run("applied and the operation finished there: deleted", func(t *testing.T) {
		g := NewWithT(t)
		updated, wait, err := FinalWork(terminated(4, 4, now.Add(-10*time.Second)), cascade, Reported{Phase: "Failed"}, now)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(updated).To(BeNil())
		g.Expect(wait).To(BeZero())
	})
	t.Run("a cluster that never answers: deleted after the grace", func(t *testing.T) {
		g := NewWithT(t)
		updated, wait, _ := FinalWork(terminated(4, 3, now.Add(-FinalGrace)), cascade, Reported{Phase: "Running"}, now)
		g.Expect(updated).To(BeNil())
		g.Expect(wait).To(BeZero())
	})
	t.Run("a pending work (nothing of the hub's there): deleted now", func(t *testing.T) {
		g := NewWithT(t)
		w, err := DesiredWork(pullApp(), nil, Target{Cluster: "cluster1", AppNamespace: "openshift-gitops"}, Deliveries{})
		g.Expect(err).NotTo(HaveOccurred())
		updated, wait, _ := FinalWork(w, cascade, Reported{Phase: "Running"}, now)
		g.Expect(updated).To(BeNil())
		g.Expect(wait).To(BeZero())
	})
}
