package controller

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// deliveredFirst is the queue priority of what a managed cluster answered for an Application
// already delivered (its claim answered, a sync request to carry or clear): above the default of
// new Applications, so that a burst of creates (a new ApplicationSet on a large fleet) does not
// hold back the clusters that already have theirs. Events of the cache's first list keep the
// queue's low priority.
const deliveredFirst = 10

// servedFirst enqueues h's requests at deliveredFirst.
func servedFirst(h handler.EventHandler) handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Create(ctx, e, raised(q))
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(ctx, e, raised(q))
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Delete(ctx, e, raised(q))
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Generic(ctx, e, raised(q))
		},
	}
}

// raised is q adding at deliveredFirst (q unchanged when it is not a priority queue).
func raised(q workqueue.TypedRateLimitingInterface[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request])
	if !ok {
		return q
	}
	return raisedQueue{pq}
}

// raisedQueue adds at deliveredFirst unless told a priority (the first list's low one).
type raisedQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
}

func (q raisedQueue) Add(item reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{}, item)
}

func (q raisedQueue) AddAfter(item reconcile.Request, after time.Duration) {
	q.AddWithOpts(priorityqueue.AddOpts{After: after}, item)
}

func (q raisedQueue) AddRateLimited(item reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, item)
}

func (q raisedQueue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	if o.Priority == nil {
		p := deliveredFirst
		o.Priority = &p
	}
	q.PriorityQueue.AddWithOpts(o, items...)
}
