package manifestwork

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
)

// Pausing delivery deletes nothing, at three scopes: the whole controller (api.PauseConfigMap),
// one ApplicationSet or one hub Application (api.PausedAnnotation on it).
//   - A paused Application gets no new work, and its held work is switched once to OCM's
//     ReadOnly (Pause): the work agent stops applying it and keeps reporting, so status and
//     reports keep flowing. Nothing else is written for it: no hub change, request, re-target or
//     unlabelling reaches its works. A pending work (see claim.go) stays pending.
//   - Resuming delivers: the work is held again, by server-side apply, with what the hub has now.
//   - A paused work whose hub Application is deleted leaves its Application on the managed
//     cluster (Release): the work turns CreateOnly with the Application orphaned, on which the
//     agent removes its owner from the Application and changes nothing else, and is deleted once
//     the agent applied that. The cluster keeps the Application and what it deployed.

// Pausing says what paused an Application.
type Pausing struct {
	// Scope is what carries the marker: "controller", "ApplicationSet <name>" or "Application".
	Scope string
	// Reason is the marker's value ("true" when it gives none).
	Reason string
}

func (p Pausing) String() string { return "delivery paused by the " + p.Scope + " (" + p.Reason + ")" }

// PauseOf says whether and why app is paused: by the controller (global, its reason, "" when not
// paused), by appSet (its ApplicationSet, nil when none), or by its own api.PausedAnnotation, in
// that order. A wider scope always wins: a tenant's Application cannot lift the operator's pause.
func PauseOf(app, appSet *unstructured.Unstructured, global string) (Pausing, bool) {
	if global != "" {
		return Pausing{Scope: "controller", Reason: global}, true
	}
	if appSet != nil {
		if r := pausedBy(appSet); r != "" {
			return Pausing{Scope: "ApplicationSet " + appSet.GetName(), Reason: r}, true
		}
	}
	if r := pausedBy(app); r != "" {
		return Pausing{Scope: "Application", Reason: r}, true
	}
	return Pausing{}, false
}

// pausedBy is the reason api.PausedAnnotation on obj gives, "" when it does not pause.
func pausedBy(obj *unstructured.Unstructured) string {
	return PauseValue(obj.GetAnnotations()[api.PausedAnnotation])
}

// PauseValue is the reason a pause marker's value gives: "" for "false" (or empty), which does
// not pause; any other value pauses (a kill switch must not fail open on a typo).
func PauseValue(v string) string {
	if v == "" || v == "false" {
		return ""
	}
	return v
}

// Paused reports whether work is paused (see Pause).
func Paused(work *workv1.ManifestWork) bool {
	return work.Annotations[api.PausedAnnotation] != ""
}

// Pause returns work paused for reason: its Application read only, the reason in
// api.PausedAnnotation. It returns nil when there is nothing to write: the work is paused for that
// reason already, or pending (nothing delivered), or released.
func Pause(work *workv1.ManifestWork, reason string) (*workv1.ManifestWork, error) {
	cfg := applicationConfig(&work.Spec)
	if !Held(work) || cfg == nil || Released(work) || Paused(work) && work.Annotations[api.PausedAnnotation] == reason {
		return nil, nil
	}
	out := work.DeepCopy()
	applicationConfig(&out.Spec).UpdateStrategy = &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeReadOnly}
	out.Annotations = withAnnotation(out.Annotations, api.PausedAnnotation, reason)
	return Rehash(out)
}

// Released reports whether work lets its Application go: CreateOnly, the Application orphaned.
func Released(work *workv1.ManifestWork) bool {
	cfg := applicationConfig(&work.Spec)
	return cfg != nil && cfg.UpdateStrategy != nil && cfg.UpdateStrategy.Type == workv1.UpdateStrategyTypeCreateOnly && orphansApplication(&work.Spec)
}

// Release returns the paused work as it must be before it is deleted, so that the managed cluster
// keeps its Application: CreateOnly (the agent creates nothing that exists, changes nothing, and
// sets the Application's owners as the delete option says) with the Application orphaned.
func Release(work *workv1.ManifestWork) (*workv1.ManifestWork, error) {
	out := work.DeepCopy()
	cfg := applicationConfig(&out.Spec)
	if cfg == nil {
		return nil, nil
	}
	cfg.UpdateStrategy = &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeCreateOnly}
	if !orphansApplication(&out.Spec) {
		rule := workv1.OrphaningRule(cfg.ResourceIdentifier)
		switch d := out.Spec.DeleteOption; {
		case d == nil || d.SelectivelyOrphan == nil:
			out.Spec.DeleteOption = &workv1.DeleteOption{
				PropagationPolicy: workv1.DeletePropagationPolicyTypeSelectivelyOrphan,
				SelectivelyOrphan: &workv1.SelectivelyOrphan{OrphaningRules: []workv1.OrphaningRule{rule}},
			}
		default:
			d.SelectivelyOrphan.OrphaningRules = append(d.SelectivelyOrphan.OrphaningRules, rule)
		}
	}
	return Rehash(out)
}

// DeleteNow reports whether work may be deleted now; otherwise it is paused and must first be
// released (Release), or is released and waits for the agent to apply that.
func DeleteNow(work *workv1.ManifestWork) bool {
	switch {
	case Released(work):
		return AppliedAtGeneration(work) || !appliedApplication(work)
	case Paused(work):
		return false
	}
	return true
}

func orphansApplication(spec *workv1.ManifestWorkSpec) bool {
	d := spec.DeleteOption
	if d == nil {
		return false
	}
	if d.PropagationPolicy == workv1.DeletePropagationPolicyTypeOrphan {
		return true
	}
	return d.SelectivelyOrphan != nil && slices.ContainsFunc(d.SelectivelyOrphan.OrphaningRules, func(r workv1.OrphaningRule) bool {
		return r.Group == argocd.Group && r.Resource == "applications"
	})
}

// Rehash sets the spec hash of a work derived from an existing one.
func Rehash(work *workv1.ManifestWork) (*workv1.ManifestWork, error) {
	delete(work.Annotations, api.SpecHashAnnotation)
	delete(work.Annotations, api.WrittenAtAnnotation)
	hash, err := specHash(work)
	if err != nil {
		return nil, err
	}
	work.Annotations[api.SpecHashAnnotation] = hash
	return work, nil
}

// appliedApplication is true once the agent applied the work's Application at any generation.
func appliedApplication(work *workv1.ManifestWork) bool {
	m := applicationStatus(work)
	if m == nil {
		return false
	}
	for _, c := range m.Conditions {
		if c.Type == workv1.ManifestApplied && c.Status == "True" {
			return true
		}
	}
	return false
}

// AppliedAtGeneration is true when the work's Applied condition is True for its current spec.
func AppliedAtGeneration(work *workv1.ManifestWork) bool {
	for _, c := range work.Status.Conditions {
		if c.Type == workv1.WorkApplied {
			return c.Status == "True" && c.ObservedGeneration == work.Generation
		}
	}
	return false
}
