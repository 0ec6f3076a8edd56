package controller

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/internal/appstatus"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

// Two controllers write a hub Application's status.conditions, a list a merge patch replaces
// whole: the propagation controller its refusal and pause conditions, the status controller the
// feedback warning. Each writes under an optimistic lock, so neither drops the other's.
func TestConditionWritesNeverDropAnotherControllersCondition(t *testing.T) {
	g := NewWithT(t)
	env := testenv.Get(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	app := argocd.NewApplication()
	app.SetNamespace(ns)
	app.SetName("web")
	app.Object["spec"] = map[string]any{"project": "default", "destination": map[string]any{"server": argocd.LocalServer}, "source": map[string]any{"repoURL": "https://git.example/repo"}}
	g.Expect(env.Client.Create(ctx, app)).To(Succeed())
	stale := argocd.NewApplication()
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(app), stale)).To(Succeed())

	// The status controller writes its warning meanwhile.
	warned := stale.DeepCopy()
	g.Expect(unstructured.SetNestedSlice(warned.Object, []any{map[string]any{"type": appstatus.FeedbackWarningCondition, "message": "cut"}}, "status", "conditions")).To(Succeed())
	g.Expect(env.Client.Patch(ctx, warned, client.MergeFromWithOptions(stale, client.MergeFromWithOptimisticLock{}))).To(Succeed())

	conditions := hubAppConditions{client: env.Client, recorder: events.NewFakeRecorder(10)}
	err := conditions.refuse(ctx, stale, "ClusterNotFound", "no such cluster")
	g.Expect(apierrors.IsConflict(err)).To(BeTrue(), "a write from a stale copy is refused, not applied: %v", err)
	got := argocd.NewApplication()
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(app), got)).To(Succeed())
	g.Expect(argocd.ConditionMessage(got, appstatus.FeedbackWarningCondition)).To(Equal("cut"), "the warning kept")

	// Read again (the propagation controller requeues on a conflict): both conditions.
	g.Expect(conditions.refuse(ctx, got, "ClusterNotFound", "no such cluster")).To(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(app), got)).To(Succeed())
	g.Expect(argocd.ConditionMessage(got, appstatus.FeedbackWarningCondition)).To(Equal("cut"))
	g.Expect(propagationError(got)).To(Equal("ClusterNotFound: no such cluster"))
}
