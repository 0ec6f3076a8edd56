package controller

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// What a cluster answered for an Application already delivered is served before the Applications
// created meanwhile; the cache's first list stays last, as the queue does for every watch.
func TestAnswersAreServedAheadOfNewApplications(t *testing.T) {
	g := NewWithT(t)
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	req := func(name string) reconcile.Request {
		return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "argocd", Name: name}}
	}
	work := func(app, rv string) *workv1.ManifestWork {
		return &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: app, ResourceVersion: rv}}
	}
	h := servedFirst(handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{req(o.GetName())}
	}))
	ctx := context.Background()

	h.Create(ctx, event.CreateEvent{Object: work("listed", "1"), IsInInitialList: true}, q)
	q.Add(req("new1"))
	q.Add(req("new2"))
	h.Update(ctx, event.UpdateEvent{ObjectOld: work("answered", "2"), ObjectNew: work("answered", "3")}, q)
	h.Update(ctx, event.UpdateEvent{ObjectOld: work("resynced", "4"), ObjectNew: work("resynced", "4")}, q)
	q.Add(req("new3"))
	h.Create(ctx, event.CreateEvent{Object: work("new2", "5")}, q) // already queued: raised

	var order []string
	for q.Len() > 0 || len(order) < 6 {
		item, _ := q.Get()
		order = append(order, item.Name)
		q.Done(item)
	}
	g.Expect(order).To(Equal([]string{"answered", "new2", "new1", "new3", "listed", "resynced"}))
}
