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

// predicateApp is the Application the predicates' tests change.
func predicateApp() *unstructured.Unstructured {
	u := argocd.NewApplication()
	u.SetName("web")
	u.SetNamespace("argocd")
	u.SetResourceVersion("1")
	u.SetLabels(map[string]string{api.PullLabel: "true"})
	u.Object["spec"] = map[string]any{"project": "default"}
	u.Object["status"] = map[string]any{"health": map[string]any{"status": "Unknown"}}
	return u
}

func TestBeyondStatus(t *testing.T) {
	base := predicateApp
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
		"argocd-pull's waiting condition": {func(u *unstructured.Unstructured) {
			u.Object["status"] = map[string]any{"health": map[string]any{"status": "Unknown"}, "conditions": []any{
				map[string]any{"type": WaitingCondition, "message": "not delivered yet: ..."},
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

func TestAsksTheClusterNow(t *testing.T) {
	syncOp := func(u *unstructured.Unstructured) {
		u.Object["operation"] = map[string]any{"sync": map[string]any{"revision": "a"}}
	}
	refresh := func(kind string) func(u *unstructured.Unstructured) {
		return func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{argocd.RefreshAnnotation: kind})
		}
	}
	phase := func(p string) func(u *unstructured.Unstructured) {
		return func(u *unstructured.Unstructured) {
			u.Object["status"] = map[string]any{"operationState": map[string]any{"phase": p,
				"operation": manifestwork.WithDeliveryID(map[string]any{"sync": map[string]any{}}, "d1")}}
		}
	}
	nothing := func(*unstructured.Unstructured) {}
	for name, tc := range map[string]struct {
		before, after func(u *unstructured.Unstructured)
		want          bool
	}{
		"a sync request (argocd app sync, a RollingSync step)": {nothing, syncOp, true},
		"another sync request": {syncOp, func(u *unstructured.Unstructured) {
			u.Object["operation"] = map[string]any{"sync": map[string]any{"revision": "b"}}
		}, true},
		"the operation taken (removed)":           {syncOp, nothing, false},
		"a status write while an operation waits": {syncOp, func(u *unstructured.Unstructured) { syncOp(u); phase("Running")(u) }, false},
		"a refresh (argocd app get --refresh)":    {nothing, refresh("normal"), true},
		"a hard refresh after a normal one":       {refresh("normal"), refresh("hard"), true},
		"the refresh annotation removed":          {refresh("normal"), nothing, false},
		"argocd app terminate-op":                 {phase("Running"), phase(manifestwork.PhaseTerminating), true},
		"still terminating":                       {phase(manifestwork.PhaseTerminating), phase(manifestwork.PhaseTerminating), false},
		"a spec change": {nothing, func(u *unstructured.Unstructured) {
			u.Object["spec"] = map[string]any{"project": "team"}
		}, false},
		"the pull label": {nothing, func(u *unstructured.Unstructured) { u.SetLabels(nil) }, false},
	} {
		t.Run(name, func(t *testing.T) {
			old, updated := predicateApp(), predicateApp()
			tc.before(old)
			tc.after(updated)
			NewWithT(t).Expect(asksTheClusterNow(old, updated)).To(Equal(tc.want))
		})
	}
}
