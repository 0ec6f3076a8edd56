package manifestwork

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
)

// Whose is the managed-cluster Application a work carries. (A new Application is first asked
// about through its cluster's claim probe, probe.go, and its work created held when the name is
// free; the pending work below is what earlier releases wrote, and is still read and held.)
//
// The OCM work agent applies with forced server-side apply and makes the applied objects its own:
// a work that simply carried the Application would take over one of the same namespace and name
// that was there before (created by hand, or by the cluster's own Argo CD), replace its spec, and
// delete it with the hub Application. The hub cannot look at the managed cluster before it
// delivers. So a new work is *pending*: OCM's ReadOnly for the Application (the agent changes
// nothing, only reports), which is also orphaned, and its feedback asks only for the
// Application's api.HubApplicationAnnotation and its UID: nothing else of it is read before the
// hold, a foreign Application's status is never asked for, and the first writes of a new fleet
// (each work's create, its agent's answer) carry a work a third of the held one's size. Then:
//   - the agent reports it absent (its Available condition: ResourceNotAvailable), or present with
//     the annotation naming the work's hub Application (an earlier hub Application of the same
//     namespace and name delivered it: a hub restored from a backup finds its fleet again): the
//     controller *holds* the work (Hold) in one more write: server-side apply, deleted with the
//     work, asking every feedback value a delivered Application reports, as every later write
//     delivers. The Application is created by server-side apply, so
//     every field the hub later drops is removed there (a create would leave an owner of every
//     field it set, and a field removed from the hub would stay on the cluster);
//   - present without it: it is *foreign*. The work stays pending and changes nothing there; the
//     hub Application is refused (ReasonManagedAppExists) until the agent reports it gone, and
//     its status shows nothing of the other one.
// Deleting a pending work touches nothing on the cluster. A work written by an earlier release
// (server-side apply from the start) is held.

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
	// ClaimFree: there is no Application of that name there.
	ClaimFree
	// ClaimOurs: the work's hub Application (or one of the same namespace and name) delivered it.
	ClaimOurs
	// ClaimForeign: it was there before, and the hub leaves it alone.
	ClaimForeign
)

// ClaimOf reads whose the Application of work is: from its update strategy once held, else from
// what the agent reported. A nil work is pending.
func ClaimOf(work *workv1.ManifestWork) Claim {
	if work == nil {
		return ClaimPending
	}
	if Held(work) {
		return ClaimOurs
	}
	m := applicationStatus(work)
	if m == nil {
		return ClaimPending
	}
	return claimOfManifest(m, FeedbackHubApplication, work.Annotations[api.HubApplicationNamespaceAnnotation]+"/"+work.Annotations[api.HubApplicationNameAnnotation])
}

// claimOfManifest reads whose the object the agent reported in m is, for the hub object hub
// ("<namespace>/<name>") that its owner feedback value names when it is the hub's: a pending
// work's Application or a probe's entry (FeedbackHubApplication), a credential's copy
// (FeedbackHubSecret).
func claimOfManifest(m *workv1.ManifestCondition, owner, hub string) Claim {
	available := meta.FindStatusCondition(m.Conditions, workv1.ManifestAvailable)
	switch {
	case available == nil:
		return ClaimPending
	case available.Status == metav1.ConditionFalse && available.Reason == reasonNotFound:
		return ClaimFree // (its feedback, if any, is from before it went: the agent leaves it)
	case available.Status != metav1.ConditionTrue:
		return ClaimPending
	}
	said, uid := claimFeedback(m, owner)
	switch {
	case said != "" && said == hub:
		return ClaimOurs
	case uid != "":
		return ClaimForeign
	}
	return ClaimPending // available, its feedback not read yet
}

// Absent reports whether the agent last reported the work's Application missing on the managed
// cluster: not created yet (a pending work, or one held a moment ago), or deleted there.
func Absent(work *workv1.ManifestWork) bool {
	m := applicationStatus(work)
	if m == nil {
		return false
	}
	c := meta.FindStatusCondition(m.Conditions, workv1.ManifestAvailable)
	return c != nil && c.Status == metav1.ConditionFalse && c.Reason == reasonNotFound
}

// reasonNotFound is the reason of the agent's Available condition for a manifest whose object
// does not exist (OCM's objectreader).
const reasonNotFound = "ResourceNotAvailable"

// Held reports whether work delivers its Application by server-side apply (see Hold), or did
// until it was paused (see Pause). A work without a configuration for it is an early release's,
// applied by OCM's default: held too.
func Held(work *workv1.ManifestWork) bool {
	cfg := applicationConfig(&work.Spec)
	return cfg == nil || cfg.UpdateStrategy == nil || cfg.UpdateStrategy.Type != workv1.UpdateStrategyTypeReadOnly || Paused(work)
}

// Hold returns work delivering its Application by forced server-side apply, deleted with the
// work, and asking the feedback of a delivered Application (with the requests it carries, its
// api.DeliveriesAnnotation) instead of the claim's.
func Hold(work *workv1.ManifestWork) (*workv1.ManifestWork, error) {
	out := work.DeepCopy()
	holdSpec(&out.Spec, ParseDeliveries(work.Annotations[api.DeliveriesAnnotation]))
	return Rehash(out)
}

// pendingConfig is the configuration of a new work's Application: read only, asking only the
// claim's feedback; holdSpec turns it into the held one.
func pendingConfig(cfg workv1.ManifestConfigOption) workv1.ManifestConfigOption {
	cfg.UpdateStrategy = &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeReadOnly}
	cfg.FeedbackRules = []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: slices.Clone(claimPaths)}}
	return cfg
}

func holdSpec(spec *workv1.ManifestWorkSpec, deliveries Deliveries) {
	cfg := applicationConfig(spec)
	if cfg == nil {
		return
	}
	cfg.UpdateStrategy = applicationStrategy()
	cfg.FeedbackRules = feedbackRules(deliveries)
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

// applicationStatus is what the agent reported of the work's Application, nil when nothing.
func applicationStatus(work *workv1.ManifestWork) *workv1.ManifestCondition {
	for i, m := range work.Status.ResourceStatus.Manifests {
		if m.ResourceMeta.Group == argocd.Group && m.ResourceMeta.Kind == argocd.ApplicationGVK.Kind {
			return &work.Status.ResourceStatus.Manifests[i]
		}
	}
	return nil
}

// claimFeedback is what the managed cluster reported of the claim: the object's annotation that
// names its hub object (the feedback value named owner) and its UID.
func claimFeedback(m *workv1.ManifestCondition, owner string) (said, uid string) {
	for _, v := range m.StatusFeedbacks.Values {
		if v.Value.String == nil {
			continue
		}
		switch v.Name {
		case owner:
			said = *v.Value.String
		case FeedbackManagedUID:
			uid = *v.Value.String
		}
	}
	return said, uid
}
