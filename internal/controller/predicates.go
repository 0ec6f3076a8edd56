package controller

import (
	"maps"

	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/argocd-pull/argocd-pull/internal/appstatus"
	"github.com/argocd-pull/argocd-pull/internal/propagation"
)

// workChangedForPropagation passes ManifestWork events the propagation controller acts on:
// creation and deletion, changes to what it wrote (drift), and the agent applying a new
// generation, and feedback on works that carry a sync or refresh request (the acknowledgement).
// Other feedback-only changes, the bulk of the traffic, are left to the status controller.
func workChangedForPropagation() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldWork, okOld := e.ObjectOld.(*workv1.ManifestWork)
			newWork, okNew := e.ObjectNew.(*workv1.ManifestWork)
			if !okOld || !okNew {
				return true
			}
			_, awaitingAck := newWork.Annotations[propagation.DeliveryBaselineAnnotation]
			return awaitingAck || oldWork.Generation != newWork.Generation ||
				!newWork.DeletionTimestamp.IsZero() ||
				!maps.Equal(oldWork.Labels, newWork.Labels) ||
				!maps.Equal(oldWork.Annotations, newWork.Annotations) ||
				appstatus.AppliedAtGeneration(oldWork) != appstatus.AppliedAtGeneration(newWork)
		},
	}
}

func equalLabels(a, b client.Object) bool {
	return maps.Equal(a.GetLabels(), b.GetLabels())
}
