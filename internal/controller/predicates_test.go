package controller

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

func TestBeyondStatus(t *testing.T) {
	base := func() *unstructured.Unstructured {
		u := argocd.NewApplication()
		u.SetName("web")
		u.SetNamespace("argocd")
		u.SetResourceVersion("1")
		u.SetLabels(map[string]string{api.PullLabel: "true"})
		u.Object["spec"] = map[string]any{"project": "default"}
		u.Object["status"] = map[string]any{"health": map[string]any{"status": "Unknown"}}
		return u
	}
	for name, tc := range map[string]struct {
		change func(u *unstructured.Unstructured)
		want   bool
	}{
		"a status write (the status controller's)": {func(u *unstructured.Unstructured) {
			u.Object["status"] = map[string]any{"health": map[string]any{"status": "Healthy"}}
			u.SetResourceVersion("2")
			u.SetGeneration(2)
			u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "argocd-pull"}})
		}, false},
		"the spec":       {func(u *unstructured.Unstructured) { u.Object["spec"] = map[string]any{"project": "team"} }, true},
		"a sync request": {func(u *unstructured.Unstructured) { u.Object["operation"] = map[string]any{"sync": map[string]any{}} }, true},
		"a refresh annotation": {func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{argocd.RefreshAnnotation: "hard"})
		}, true},
		"the pull label":     {func(u *unstructured.Unstructured) { u.SetLabels(nil) }, true},
		"a finalizer":        {func(u *unstructured.Unstructured) { u.SetFinalizers([]string{argocd.ResourcesFinalizer}) }, true},
		"deletion":           {func(u *unstructured.Unstructured) { now := metav1.Now(); u.SetDeletionTimestamp(&now) }, true},
		"an owner reference": {func(u *unstructured.Unstructured) { u.SetOwnerReferences([]metav1.OwnerReference{{Name: "set"}}) }, true},
		"nothing (a resync)": {func(*unstructured.Unstructured) {}, false},
		// A reconcile that read the Application before its own refusal reached the cache clears
		// nothing (it sees no condition); the refusal's arrival must wake it again.
		"argocd-pull's refusal condition": {func(u *unstructured.Unstructured) {
			u.Object["status"] = map[string]any{"health": map[string]any{"status": "Unknown"}, "conditions": []any{
				map[string]any{"type": PropagationErrorCondition, "message": "ManagedApplicationTaken: x"},
			}}
		}, true},
		"argocd-pull's paused condition": {func(u *unstructured.Unstructured) {
			u.Object["status"] = map[string]any{"health": map[string]any{"status": "Unknown"}, "conditions": []any{
				map[string]any{"type": PausedCondition, "message": "paused"},
			}}
		}, true},
		"argocd app terminate-op (the operation's phase Terminating)": {func(u *unstructured.Unstructured) {
			u.Object["status"] = map[string]any{"operationState": map[string]any{"phase": manifestwork.PhaseTerminating,
				"operation": manifestwork.WithDeliveryID(map[string]any{"sync": map[string]any{}}, "d1")}}
		}, true},
		"another operation phase": {func(u *unstructured.Unstructured) {
			u.Object["status"] = map[string]any{"operationState": map[string]any{"phase": "Running",
				"operation": manifestwork.WithDeliveryID(map[string]any{"sync": map[string]any{}}, "d1")}}
		}, false},
		"another condition": {func(u *unstructured.Unstructured) {
			u.Object["status"] = map[string]any{"health": map[string]any{"status": "Unknown"}, "conditions": []any{
				map[string]any{"type": "SyncError", "message": "x"},
			}}
		}, false},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			old, updated := base(), base()
			tc.change(updated)
			g.Expect(beyondStatus().Update(event.UpdateEvent{ObjectOld: old, ObjectNew: updated})).To(Equal(tc.want))
		})
	}
}
