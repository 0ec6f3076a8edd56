package controller

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/test/workfixture"
)

// commitQueue is a controller's queue after a commit: each of 100 objects updated once (a new
// resource version each, as the apiserver writes them), queued by the controller's own watch
// (queued) and by the handler under test (raises). It returns the queue and an update function
// for what comes after.
func commitQueue(t *testing.T, queued, raises handler.TypedEventHandler[client.Object, reconcile.Request],
	commit func(i int) (old, updated client.Object)) (priorityqueue.PriorityQueue[reconcile.Request], func(old, updated client.Object)) {
	q := priorityqueue.New[reconcile.Request]("priority-test")
	t.Cleanup(q.ShutDown)
	update := func(old, updated client.Object) {
		e := event.TypedUpdateEvent[client.Object]{ObjectOld: old, ObjectNew: updated}
		queued.Update(t.Context(), e, q)
		raises.Update(t.Context(), e, q)
	}
	for i := range 100 {
		update(commit(i))
	}
	return q, update
}

// firstServed is the names of the first n requests the queue serves.
func firstServed(g Gomega, q priorityqueue.PriorityQueue[reconcile.Request], n int) []string {
	g.Eventually(q.Len).Should(BeNumerically(">=", n))
	var got []string
	for range n {
		req, _ := q.Get()
		got = append(got, req.Name)
		q.Done(req)
	}
	return got
}

// A request waits behind no spec change: with a commit's worth of Applications queued, the one
// asked to sync is served first, and the others keep their order.
func TestARequestJumpsTheQueueOfCommits(t *testing.T) {
	g := NewWithT(t)
	apps := make([]*unstructured.Unstructured, 100)
	q, update := commitQueue(t, &handler.EnqueueRequestForObject{}, requestsFirst(), func(i int) (client.Object, client.Object) {
		app := predicateApp()
		app.SetName(fmt.Sprintf("app%03d", i))
		apps[i] = app.DeepCopy()
		_ = unstructured.SetNestedField(apps[i].Object, "v2", "spec", "source", "targetRevision")
		apps[i].SetResourceVersion("2")
		return app, apps[i]
	})
	asked := apps[57].DeepCopy()
	asked.Object["operation"] = map[string]any{"sync": map[string]any{}}
	asked.SetResourceVersion("3")
	update(apps[57], asked)

	g.Expect(firstServed(g, q, 3)).To(Equal([]string{"app057", "app000", "app001"}))
}

// The answer a rollout waits on waits behind no commit's feedback: with every cluster's
// OutOfSync queued, the hub Application of the work whose sync ended is served first.
func TestAnAnswerJumpsTheQueueOfCommits(t *testing.T) {
	g := NewWithT(t)
	works := make([]*workv1.ManifestWork, 100)
	feedback := func(sync, phase string) map[string]string {
		return map[string]string{manifestwork.FeedbackHealth: "Healthy", manifestwork.FeedbackSync: sync, manifestwork.FeedbackPhase: phase}
	}
	q, update := commitQueue(t, handler.EnqueueRequestsFromMapFunc(requestForHubApplication), answersFirst(), func(i int) (client.Object, client.Object) {
		w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w%03d", i), Namespace: "cluster1", ResourceVersion: "1",
			Annotations: map[string]string{api.HubApplicationNamespaceAnnotation: "argocd", api.HubApplicationNameAnnotation: fmt.Sprintf("app%03d", i)}}}
		synced := workfixture.Reported(w, "there", feedback("Synced", "Succeeded"))
		works[i] = workfixture.Reported(w, "there", feedback("OutOfSync", "Succeeded"))
		works[i].ResourceVersion = "2"
		return synced, works[i]
	})
	running := workfixture.Reported(works[57], "there", feedback("OutOfSync", "Running"))
	running.ResourceVersion = "3"
	update(works[57], running)

	g.Expect(firstServed(g, q, 3)).To(Equal([]string{"app057", "app000", "app001"}))
}
