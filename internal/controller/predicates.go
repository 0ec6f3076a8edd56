package controller

import (
	"maps"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/metrics"
)

// workChangedForPropagation passes the ManifestWork events that concern the work's own
// Application: its creation (unless justCreated: this process wrote it, unchanged since), its
// deletion, changes to what it wrote (drift), feedback on a work carrying a sync or refresh
// request (their delivery) or rewritten for its Application's deletion (manifestwork.FinalWork:
// deleted once the operation there finished), telling whose its Application is
// (manifestwork.ClaimOf: pending, free, foreign), or released (manifestwork.Release: deleted once
// applied). Other feedback-only changes, the bulk of the traffic, are the status controller's;
// what a work's creation or application means for other Applications (a collision, a refusal to
// lift) is appsWaitingOn's.
func workChangedForPropagation(justCreated func(client.Object) bool) predicate.Funcs {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return !justCreated(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldWork, okOld := e.ObjectOld.(*workv1.ManifestWork)
			newWork, okNew := e.ObjectNew.(*workv1.ManifestWork)
			if !okOld || !okNew {
				return true
			}
			_, delivering := newWork.Annotations[api.DeliveriesAnnotation]
			_, finalizing := newWork.Annotations[api.FinalizingAnnotation]
			delivering = delivering || finalizing
			// An adopting work applied: the upstream work's next step (see takeover.go).
			_, adopting := newWork.Annotations[api.AdoptingAnnotation]
			return delivering || adopting && manifestwork.AppliedAtGeneration(oldWork) != manifestwork.AppliedAtGeneration(newWork) || manifestwork.ClaimOf(oldWork) != manifestwork.ClaimOf(newWork) || manifestwork.Released(newWork) || oldWork.Generation != newWork.Generation ||
				!newWork.DeletionTimestamp.IsZero() ||
				!maps.Equal(oldWork.Labels, newWork.Labels) ||
				!maps.Equal(oldWork.Annotations, newWork.Annotations)
		},
	}
}

// workCameWentOrApplied passes a ManifestWork's creation and deletion and the agent applying a
// new generation: what the Applications refused because of another Application's work wait for.
// Feedback, the bulk of the traffic, is not passed.
func workCameWentOrApplied() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldWork, okOld := e.ObjectOld.(*workv1.ManifestWork)
			newWork, okNew := e.ObjectNew.(*workv1.ManifestWork)
			return !okOld || !okNew || manifestwork.AppliedAtGeneration(oldWork) != manifestwork.AppliedAtGeneration(newWork)
		},
	}
}

func equalLabels(a, b client.Object) bool {
	return maps.Equal(a.GetLabels(), b.GetLabels())
}

// observeChanges passes every event and records, per object, when the first change not yet acted
// on was seen: the start of the propagation latency.
func observeChanges(changed *metrics.Since[types.NamespacedName]) predicate.Funcs {
	seen := func(o client.Object) bool {
		changed.Observe(client.ObjectKeyFromObject(o), time.Now())
		return true
	}
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return seen(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return seen(e.ObjectNew) },
		DeleteFunc:  func(e event.DeleteEvent) bool { return seen(e.Object) },
		GenericFunc: func(e event.GenericEvent) bool { return seen(e.Object) },
	}
}

// beyondStatus passes Application updates that change something other than the status,
// argocd-pull's own conditions in it, or a request to terminate the operation (argocd app
// terminate-op writes it into the status). The Application CRD has no status subresource, so every
// status write (the status controller's, once per feedback change) is an update of the whole
// object; nothing else in the status changes what the propagation controller writes. Its own
// conditions do count: a reconcile that read the Application from the cache before its previous
// refusal arrived there sees no condition to clear, and only that refusal's arrival wakes it to
// clear it.
func beyondStatus() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldApp, okOld := e.ObjectOld.(*unstructured.Unstructured)
			newApp, okNew := e.ObjectNew.(*unstructured.Unstructured)
			if !okOld || !okNew {
				return true
			}
			return ourCondition(oldApp) != ourCondition(newApp) ||
				terminating(oldApp) != terminating(newApp) ||
				!equality.Semantic.DeepEqual(withoutStatus(oldApp), withoutStatus(newApp))
		},
	}
}

// terminating is the delivery ID of the operation argocd app terminate-op asks to stop, set in
// the status by Argo CD's API server (see propagation.planTerminate), "" when none.
func terminating(app *unstructured.Unstructured) string {
	// Every Application update passes here: the phase first, read in place.
	if phase, _, _ := unstructured.NestedFieldNoCopy(app.Object, "status", "operationState", "phase"); phase != manifestwork.PhaseTerminating {
		return ""
	}
	return manifestwork.HubOf(app).Terminating
}

// withoutStatus is what of an Application the propagation controller reads: everything but the
// status and the metadata the apiserver changes on every write.
func withoutStatus(u *unstructured.Unstructured) map[string]any {
	out := make(map[string]any, len(u.Object))
	for k, v := range u.Object {
		if k != "status" && k != "metadata" {
			out[k] = v
		}
	}
	out["metadata"] = map[string]any{
		"labels": u.GetLabels(), "annotations": u.GetAnnotations(), "finalizers": u.GetFinalizers(),
		"ownerReferences": u.GetOwnerReferences(), "deletionTimestamp": u.GetDeletionTimestamp(),
	}
	return out
}

// asksTheClusterNow tells whether an Application update is a request someone waits on: a new
// operation (argocd app sync, a RollingSync step's sync), a refresh (argocd app get --refresh), or
// a request to terminate the operation (argocd app terminate-op). requestsFirst ranks these ahead
// of spec changes in the propagation queue.
func asksTheClusterNow(oldApp, newApp *unstructured.Unstructured) bool {
	if op, _, _ := unstructured.NestedFieldNoCopy(newApp.Object, "operation"); op != nil {
		oldOp, _, _ := unstructured.NestedFieldNoCopy(oldApp.Object, "operation")
		if !equality.Semantic.DeepEqual(op, oldOp) {
			return true
		}
	}
	if r := newApp.GetAnnotations()[argocd.RefreshAnnotation]; r != "" && r != oldApp.GetAnnotations()[argocd.RefreshAnnotation] {
		return true
	}
	t := terminating(newApp)
	return t != "" && t != terminating(oldApp)
}
