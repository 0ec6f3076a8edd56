package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
)

// The condition types argocd-pull sets on hub Applications (see api).
const (
	PropagationErrorCondition = api.PropagationErrorCondition
	PausedCondition           = api.PausedCondition
	WaitingCondition          = api.WaitingCondition
)

// ourConditionTypes are the conditions argocd-pull sets on hub Applications, at most one at a time.
var ourConditionTypes = []string{PropagationErrorCondition, PausedCondition, WaitingCondition}

// Reasons of Normal events.
const (
	ReasonRetargeted = "Retargeted"
	ReasonDelivered  = "OperationDelivered"
	ReasonPaused     = "Paused"
)

// ReasonClusterNotAnswering is the reason of the Warning event recorded when a new Application
// starts waiting too long for its cluster's answer (WaitingCondition).
const ReasonClusterNotAnswering = "ClusterNotAnswering"

// ReasonTerminateNotDelivered is the reason of the Warning event recorded when argocd app
// terminate-op asks to stop an operation that argocd-pull did not deliver (see appstatus.go).
const ReasonTerminateNotDelivered = "TerminateNotDelivered"

// ReasonFrozen is the reason of the Warning event recorded when a work is frozen (see
// manifestwork.Freeze).
const ReasonFrozen = "ManifestWorkFrozen"

// ReasonRepeatedStepSync is the reason of the Normal event recorded when a RollingSync step's sync
// request, asked for again after the step moved on, is dropped from the hub Application
// (propagation.Verdict.Repeated).
const ReasonRepeatedStepSync = "RepeatedStepSyncDropped"

// hubAppConditions sets and clears argocd-pull's condition on hub Applications, and records an
// event when, and only when, the condition changes.
type hubAppConditions struct {
	client   client.Client
	recorder events.EventRecorder
}

// refuse records that app was not delivered, for reason. The Application CRD has no status
// subresource: the condition is merged into the object's status, leaving other conditions alone.
func (h hubAppConditions) refuse(ctx context.Context, app *unstructured.Unstructured, reason, message string) error {
	return h.set(ctx, app, PropagationErrorCondition, reason+": "+message, reason, message)
}

// paused records that app's delivery is paused, and why (the pause's own event is recorded where
// it is asked for).
func (h hubAppConditions) paused(ctx context.Context, app *unstructured.Unstructured, message string) error {
	return h.set(ctx, app, PausedCondition, message, "", "")
}

// waiting records that app waits, too long, for its cluster's answer (propagation.Verdict.Waiting).
func (h hubAppConditions) waiting(ctx context.Context, app *unstructured.Unstructured, message string) error {
	return h.set(ctx, app, WaitingCondition, message, ReasonClusterNotAnswering, message)
}

// set makes argocd-pull's condition on app conditionType with text, in place of any other of
// its conditions, and records a Warning event of reason with note once written (none when reason
// is ""). Nothing is written when app already says text.
func (h hubAppConditions) set(ctx context.Context, app *unstructured.Unstructured, conditionType, text, reason, note string) error {
	if argocd.ConditionMessage(app, conditionType) == text {
		return nil
	}
	conditions, _, _ := unstructured.NestedSlice(app.Object, "status", "conditions")
	if err := h.setConditions(ctx, app, append(withoutOurCondition(conditions), map[string]any{
		"type":               conditionType,
		"message":            text,
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
	})); err != nil {
		return err // a conflict requeues the Application, which records the event then
	}
	if reason != "" {
		h.recorder.Eventf(app, nil, corev1.EventTypeWarning, reason, "Propagate", note)
	}
	return nil
}

// clear removes argocd-pull's conditions once the Application was delivered.
func (h hubAppConditions) clear(ctx context.Context, app *unstructured.Unstructured) error {
	conditions, _, _ := unstructured.NestedSlice(app.Object, "status", "conditions")
	kept := withoutOurCondition(conditions)
	if len(kept) == len(conditions) {
		return nil
	}
	return h.setConditions(ctx, app, kept)
}

func (h hubAppConditions) setConditions(ctx context.Context, app *unstructured.Unstructured, conditions []any) error {
	updated := app.DeepCopy()
	if len(conditions) == 0 {
		unstructured.RemoveNestedField(updated.Object, "status", "conditions")
	} else if err := unstructured.SetNestedSlice(updated.Object, conditions, "status", "conditions"); err != nil {
		return fmt.Errorf("setting conditions of Application %s/%s: %w", app.GetNamespace(), app.GetName(), err)
	}
	// status.conditions is a list a merge patch replaces whole, and the status controller writes
	// its warning there too (see AppStatusReconciler.write): both write under an optimistic lock,
	// so that neither drops the other's condition.
	if err := h.client.Patch(ctx, updated, client.MergeFromWithOptions(app, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patching conditions of Application %s/%s: %w", app.GetNamespace(), app.GetName(), err)
	}
	return nil
}

func withoutOurCondition(conditions []any) []any {
	kept := make([]any, 0, len(conditions))
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok && slices.Contains(ourConditionTypes, fmt.Sprint(m["type"])) {
			continue
		}
		kept = append(kept, c)
	}
	return kept
}

// propagationError is the message of argocd-pull's condition on the hub Application, if any.
func propagationError(app *unstructured.Unstructured) string {
	return argocd.ConditionMessage(app, PropagationErrorCondition)
}

// pausedMessage is the message of the paused condition on the hub Application, if any.
// ourCondition is argocd-pull's condition on app, "type: message", "" when none.
func ourCondition(app *unstructured.Unstructured) string {
	for _, t := range ourConditionTypes {
		if m := argocd.ConditionMessage(app, t); m != "" {
			return t + ": " + m
		}
	}
	return ""
}

func pausedMessage(app *unstructured.Unstructured) string {
	return argocd.ConditionMessage(app, PausedCondition)
}

// dropRequest removes the sync request (.operation) from app, under an optimistic lock so that a
// request made since stays, and records a Normal event saying why.
func (h hubAppConditions) dropRequest(ctx context.Context, app *unstructured.Unstructured, why string) error {
	updated := app.DeepCopy()
	delete(updated.Object, "operation")
	if err := h.client.Patch(ctx, updated, client.MergeFromWithOptions(app, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("removing the sync request of Application %s/%s: %w", app.GetNamespace(), app.GetName(), err)
	}
	ctrl.LoggerFrom(ctx).Info("Dropped a RollingSync step's repeated sync request", "why", why)
	h.recorder.Eventf(app, nil, corev1.EventTypeNormal, ReasonRepeatedStepSync, "Propagate", "%s", why)
	return nil
}
