// What both controllers serve first. Their queues otherwise serve in the order things changed, and
// a commit to an ApplicationSet of 1,000 Applications is 1,000 spec changes, 1,000 work updates
// and 1,000 answers from the clusters: a RollingSync step's sync requests, an argocd app sync, and
// the feedback saying a sync ended waited behind all of them (docs/benchmarks.md, ten concurrent
// rollouts).

package controller

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/argocd-pull/argocd-pull/internal/appstatus"
)

// requestPriority is the queue priority of what someone waits on; everything else is queued at
// the default, 0 (or controller-runtime's LowPriority for a resync).
const requestPriority = 10

// requestsFirst raises, in the propagation queue, an Application whose update is a request
// someone waits on (asksTheClusterNow).
func requestsFirst() handler.TypedEventHandler[client.Object, reconcile.Request] {
	return first(asksTheClusterNow, func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(o)}}
	})
}

// answersFirst raises, in the status queue, the hub Application of a work whose feedback answers
// what a rollout waits on (appstatus.Answers).
func answersFirst() handler.TypedEventHandler[client.Object, reconcile.Request] {
	return first(appstatus.Answers, requestForHubApplication)
}

// first raises to requestPriority the requests of the updates want passes. The controller's
// other watch of the same kind has queued them already at the default priority (the queue raises
// an item's priority, never lowers it); raising is all this adds.
func first[T client.Object](want func(oldObj, newObj T) bool, requests handler.MapFunc) handler.TypedEventHandler[client.Object, reconcile.Request] {
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			oldObj, okOld := e.ObjectOld.(T)
			newObj, okNew := e.ObjectNew.(T)
			if !okOld || !okNew || !want(oldObj, newObj) {
				return
			}
			reqs := requests(ctx, newObj)
			if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
				pq.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(requestPriority)}, reqs...)
				return
			}
			for _, req := range reqs {
				q.Add(req)
			}
		},
	}
}
