package propagation

import (
	"slices"

	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
)

// Whose is the managed-cluster Application a work carries.
//
// The OCM work agent applies with forced server-side apply and makes the applied objects its own:
// a work that simply carried the Application would take over one of the same namespace and name
// that was there before (created by hand, or by the cluster's own Argo CD), replace its spec, and
// delete it with the hub Application. The hub cannot look at the managed cluster before it
// delivers. So a new work is delivered *pending*: it only creates the Application (OCM's
// CreateOnly) and orphans it on deletion, and asks through feedback for the Application's
// api.HubApplicationAnnotation and its UID. Then:
//   - the annotation names the work's hub Application: the agent created it from this payload (or
//     an earlier hub Application of the same namespace and name did). The work is *held*
//     (Hold): server-side apply, deleted with the work, as every later write delivers;
//   - the Application exists without it: it is *foreign*. The work stays pending and changes
//     nothing there; the hub Application is refused (ReasonManagedApplicationExists) until it is
//     gone, and its status shows nothing of the other one;
//   - no answer yet: pending. A pending work is deleted only once it is known whose the
//     Application is (ReleaseOf), so that one created for the hub is not left behind.
//
// A work written by an earlier release (server-side apply from the start) is held.

// Feedback names of the claim, asked only by pending works.
const (
	FeedbackHubApplication = "hubApplication"
	FeedbackManagedUID     = "managedUID"
)

var claimPaths = []workv1.JsonPath{
	{Name: FeedbackHubApplication, Path: annotationPath(api.HubApplicationAnnotation)},
	{Name: FeedbackManagedUID, Path: ".metadata.uid"},
}

// Claim says whose the managed-cluster Application of a work is.
type Claim int

const (
	// ClaimPending: the managed cluster has not said yet.
	ClaimPending Claim = iota
	// ClaimOurs: the work's hub Application delivered it.
	ClaimOurs
	// ClaimForeign: it was there before, and the hub leaves it alone.
	ClaimForeign
)

// ClaimOf reads whose the Application of work is: from its update strategy once held, else from
// its feedback. A nil work is pending.
func ClaimOf(work *workv1.ManifestWork) Claim {
	if work == nil {
		return ClaimPending
	}
	if Held(work) {
		return ClaimOurs
	}
	owner, uid := claimFeedback(work)
	switch {
	case owner != "" && owner == work.Annotations[api.HubApplicationNamespaceAnnotation]+"/"+work.Annotations[api.HubApplicationNameAnnotation]:
		return ClaimOurs
	case uid != "":
		return ClaimForeign
	}
	return ClaimPending
}

// Held reports whether work delivers its Application by server-side apply (see Hold). A work
// without a configuration for it is an early release's, applied by OCM's default: held too.
func Held(work *workv1.ManifestWork) bool {
	cfg := applicationConfig(&work.Spec)
	return cfg == nil || cfg.UpdateStrategy == nil || cfg.UpdateStrategy.Type != workv1.UpdateStrategyTypeCreateOnly
}

// ClaimInFlight is true while the hub still acts on what the managed cluster says about the claim:
// the work is pending, or was held so recently that the agent has not applied it since (its
// feedback still holds the claim's values). Its feedback then matters to the propagation.
func ClaimInFlight(work *workv1.ManifestWork) bool {
	if !Held(work) {
		return true
	}
	owner, uid := claimFeedback(work)
	return owner != "" || uid != ""
}

// Release is how a work of the hub may be deleted.
type Release int

const (
	// ReleaseNow: delete it; the agent deletes the Application it owns and leaves the rest.
	ReleaseNow Release = iota
	// ReleaseHoldFirst: the Application is the hub's but the work still orphans it; hold the work
	// (Hold) and delete it once the agent applied that (and made the Application its own).
	ReleaseHoldFirst
	// ReleaseWait: the agent applied the work but has not said whose the Application is, or has
	// not applied the hold yet; its next status says.
	ReleaseWait
)

// ReleaseOf decides how the hub deletes work, so that an Application the hub created is deleted
// with it and one that was there before is left alone.
func ReleaseOf(work *workv1.ManifestWork) Release {
	applied := appliedApplication(work)
	if Held(work) {
		if ClaimInFlight(work) && !appliedAtGeneration(work) {
			return ReleaseWait // held a moment ago: the Application is not the agent's yet
		}
		return ReleaseNow
	}
	switch ClaimOf(work) {
	case ClaimOurs:
		return ReleaseHoldFirst
	case ClaimPending:
		if applied {
			return ReleaseWait // created by the agent, or found there: its feedback says which
		}
	}
	return ReleaseNow // another's, or never applied: deleting the work touches nothing there
}

// Hold returns work delivering its Application by forced server-side apply, deleted with the
// work, and no longer asking the claim's feedback.
func Hold(work *workv1.ManifestWork) (*workv1.ManifestWork, error) {
	out := work.DeepCopy()
	holdSpec(&out.Spec)
	delete(out.Annotations, api.SpecHashAnnotation)
	delete(out.Annotations, api.WrittenAtAnnotation)
	hash, err := specHash(out)
	if err != nil {
		return nil, err
	}
	out.Annotations[api.SpecHashAnnotation] = hash
	return out, nil
}

// pendingConfig is the configuration of a new work's Application: created only, with the claim's
// feedback; holdSpec turns it into the held one.
func pendingConfig(cfg workv1.ManifestConfigOption) workv1.ManifestConfigOption {
	cfg.UpdateStrategy = &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeCreateOnly}
	for i, rule := range cfg.FeedbackRules {
		if rule.Type == workv1.JSONPathsType {
			cfg.FeedbackRules[i].JsonPaths = append(slices.Clip(rule.JsonPaths), claimPaths...)
		}
	}
	return cfg
}

func holdSpec(spec *workv1.ManifestWorkSpec) {
	cfg := applicationConfig(spec)
	if cfg == nil {
		return
	}
	cfg.UpdateStrategy = applicationStrategy()
	for i, rule := range cfg.FeedbackRules {
		cfg.FeedbackRules[i].JsonPaths = slices.DeleteFunc(slices.Clone(rule.JsonPaths), func(p workv1.JsonPath) bool {
			return p.Name == FeedbackHubApplication || p.Name == FeedbackManagedUID
		})
	}
	if d := spec.DeleteOption; d != nil && d.SelectivelyOrphan != nil {
		rules := slices.DeleteFunc(slices.Clone(d.SelectivelyOrphan.OrphaningRules), func(r workv1.OrphaningRule) bool {
			return r.Group == argocd.Group && r.Resource == "applications"
		})
		if len(rules) == 0 {
			spec.DeleteOption = nil
		} else {
			d.SelectivelyOrphan.OrphaningRules = rules
		}
	}
}

// applicationConfig is the configuration of the work's Application, nil when it has none.
func applicationConfig(spec *workv1.ManifestWorkSpec) *workv1.ManifestConfigOption {
	for i := range spec.ManifestConfigs {
		if c := &spec.ManifestConfigs[i]; c.ResourceIdentifier.Group == argocd.Group && c.ResourceIdentifier.Resource == "applications" {
			return c
		}
	}
	return nil
}

// claimFeedback is what the managed cluster reported of the claim: the Application's
// api.HubApplicationAnnotation and its UID.
func claimFeedback(work *workv1.ManifestWork) (owner, uid string) {
	for _, m := range work.Status.ResourceStatus.Manifests {
		if m.ResourceMeta.Group != argocd.Group || m.ResourceMeta.Kind != argocd.ApplicationGVK.Kind {
			continue
		}
		for _, v := range m.StatusFeedbacks.Values {
			if v.Value.String == nil {
				continue
			}
			switch v.Name {
			case FeedbackHubApplication:
				owner = *v.Value.String
			case FeedbackManagedUID:
				uid = *v.Value.String
			}
		}
	}
	return owner, uid
}

// appliedApplication is true once the agent applied the work's Application at any generation.
func appliedApplication(work *workv1.ManifestWork) bool {
	for _, m := range work.Status.ResourceStatus.Manifests {
		if m.ResourceMeta.Group != argocd.Group || m.ResourceMeta.Kind != argocd.ApplicationGVK.Kind {
			continue
		}
		for _, c := range m.Conditions {
			if c.Type == workv1.ManifestApplied && c.Status == "True" {
				return true
			}
		}
	}
	return false
}

func appliedAtGeneration(work *workv1.ManifestWork) bool {
	for _, c := range work.Status.Conditions {
		if c.Type == workv1.WorkApplied {
			return c.Status == "True" && c.ObservedGeneration == work.Generation
		}
	}
	return false
}
