package manifestwork

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/api"
)

// Taking over a fleet from the upstream pull controllers, without deleting or recreating anything
// on the managed clusters (docs/migration.md).
//
// RHACM's propagation controller (stolostron/multicloud-integrations) and OCM's
// argocd-pull-integration in basic mode both write, per hub Application, a ManifestWork named
// "<app>-<first 5 characters of its UID>" in the cluster namespace, annotated with the hub
// Application (api.HubApplicationNamespaceAnnotation, api.HubApplicationNameAnnotation), labelled
// api.PullLabel (both), or, for RHACM's ApplicationSet works, api.ApplicationSetLabel and
// api.UpstreamAppSetHashLabel without the pull label. It carries the managed-cluster Application
// (RHACM's after a Namespace and, for another project than default, an AppProject, both orphaned
// when the work goes). Deleting it deletes that Application, with Argo CD's resources finalizer
// what it deployed too, unless another work also applied it: the work agent then only removes
// the deleted work's owner.
//
// So adoption, per hub Application, once every rung of the ladder passed (the upstream work of an
// Application argocd-pull would refuse is left as it is, and the refusal says so):
//  1. argocd-pull writes its own work held at once (the upstream work names this very hub
//     Application, so the managed-cluster Application is its delivery, not a stranger's), with
//     api.AdoptingAnnotation naming the upstream work as it was;
//  2. once the agent applied it, the Application has two owners, and the upstream work is
//     released (Release: CreateOnly, the Application orphaned): the agent removes its owner and
//     changes nothing;
//  3. once the agent applied that, the upstream work is deleted; what it orphaned stays.
// The managed-cluster Application keeps its UID and nothing it deployed is touched. An upstream
// controller that still runs rewrites its work (its spec changes beyond the release) or writes it
// again after the deletion (another UID): adoption stops there (ReasonUpstreamRunning), and
// argocd-pull's work is paused so that the two controllers do not fight over the Application.

// UpstreamSelectors select, between them, the works of the upstream pull controllers: the
// pull-labelled ones and the ApplicationSet ones, never argocd-pull's own. (A label selector
// cannot say "either label"; a work with both matches both.)
func UpstreamSelectors() []labels.Selector { return upstreamSelectors }

var upstreamSelectors = func() []labels.Selector {
	notOurs, _ := labels.NewRequirement(api.ManagedByLabel, selection.NotEquals, []string{api.ManagedByValue})
	out := []labels.Selector{}
	for _, key := range []string{api.PullLabel, api.ApplicationSetLabel} {
		has, _ := labels.NewRequirement(key, selection.Exists, nil)
		out = append(out, labels.NewSelector().Add(*has, *notOurs))
	}
	return out
}()

// IsUpstream reports whether work was written by an upstream pull controller: one of
// UpstreamSelectors selects it, and it points back to a hub Application.
func IsUpstream(work *workv1.ManifestWork) bool {
	set := labels.Set(work.Labels)
	for _, s := range upstreamSelectors {
		if s.Matches(set) {
			a := work.Annotations
			return a[api.HubApplicationNamespaceAnnotation] != "" && a[api.HubApplicationNameAnnotation] != ""
		}
	}
	return false
}

// AppendUpstream appends to out the upstream works of works that out does not hold yet (a work
// with both labels is listed under each of UpstreamSelectors).
func AppendUpstream(out, works []workv1.ManifestWork) []workv1.ManifestWork {
	for _, w := range works {
		if IsUpstream(&w) && !slices.ContainsFunc(out, func(o workv1.ManifestWork) bool { return o.UID == w.UID }) {
			out = append(out, w)
		}
	}
	return out
}

// UpstreamWriter names the controller that wrote an upstream work, for conditions and the
// takeover listing: RHACM (multicloud-integrations) or OCM basic mode (argocd-pull-integration
// --mode=basic). RHACM's sets a delete option (it orphans the Namespace it carries) or labels
// ApplicationSet works with a hash; OCM's basic mode does neither.
func UpstreamWriter(work *workv1.ManifestWork) string {
	if writtenByRHACM(work) {
		return "RHACM"
	}
	return "OCM basic mode"
}

func writtenByRHACM(work *workv1.ManifestWork) bool {
	return work.Spec.DeleteOption != nil || work.Labels[api.UpstreamAppSetHashLabel] != ""
}

// StopUpstream says how to stop the controller that wrote work.
func StopUpstream(work *workv1.ManifestWork) string {
	if writtenByRHACM(work) {
		return "set pullModel.basic.disabled: true in the ConfigMap multicluster-integrations-config of RHACM's namespace"
	}
	return "scale the argocd-pull-integration Deployment (--mode=basic) to 0"
}

// AdoptionMark is the value of api.AdoptingAnnotation for upstream as it is now.
func AdoptionMark(upstream *workv1.ManifestWork) string {
	return fmt.Sprintf("%s %s %d", upstream.Name, upstream.UID, upstream.Generation)
}

// parseMark reads api.AdoptingAnnotation; ok is false when there is none or it is malformed.
func parseMark(v string) (name, uid string, generation int64, ok bool) {
	f := strings.Fields(v)
	if len(f) != 3 {
		return "", "", 0, false
	}
	g, err := strconv.ParseInt(f[2], 10, 64)
	return f[0], f[1], g, err == nil
}

// MarkOf is the record of the upstream work ours adopts or adopted, "" when none.
func MarkOf(ours *workv1.ManifestWork) string {
	if v := ours.Annotations[api.AdoptingAnnotation]; v != "" {
		return v
	}
	return ours.Annotations[api.AdoptedAnnotation]
}

// Adopting reports whether work is taking its Application over from an upstream work that is
// still there: until its agent reports the Application as it is, the hub Application keeps the
// status the upstream controller wrote (see appstatus.Settled).
func Adopting(work *workv1.ManifestWork) bool {
	return work.Annotations[api.AdoptingAnnotation] != ""
}

// UpstreamRunning reports whether something besides argocd-pull wrote upstream since ours (the
// adopting work) recorded it: another UID (written again after argocd-pull deleted it), or a spec
// that changed other than by argocd-pull's one release. False when ours records nothing, or the
// upstream work is being deleted.
func UpstreamRunning(ours, upstream *workv1.ManifestWork) bool {
	if ours == nil || upstream == nil {
		return false
	}
	name, uid, generation, ok := parseMark(MarkOf(ours))
	if !ok || !upstream.DeletionTimestamp.IsZero() {
		// Being deleted (the apiserver counts the deletion as a generation of its own): nothing
		// rewrites a work on its way out, and none of its name is written again before it is gone.
		return false
	}
	switch {
	case name != upstream.Name || uid != string(upstream.UID):
		return true
	case upstream.Generation == generation:
		return false
	case upstream.Generation == generation+1:
		return !Released(upstream)
	}
	return true
}

// TakeoverStep is what is done next to an upstream work being adopted.
type TakeoverStep int

const (
	// TakeoverWait: nothing until the agent reports (the adopting work applied, or the release).
	TakeoverWait TakeoverStep = iota
	// TakeoverRelease: release the upstream work (Release).
	TakeoverRelease
	// TakeoverDelete: delete the upstream work; the agent removes its owner and deletes nothing.
	TakeoverDelete
)

// NextTakeoverStep decides the next step on upstream, given ours, the work that adopts its
// Application. Nothing is done to upstream before the agent applied ours at its generation with
// ours holding the Application: until then upstream is its only owner.
func NextTakeoverStep(ours, upstream *workv1.ManifestWork) TakeoverStep {
	switch {
	case ours == nil || !Held(ours) || Paused(ours) || !AppliedAtGeneration(ours) || !appliedApplication(ours):
		return TakeoverWait
	case !upstream.DeletionTimestamp.IsZero():
		return TakeoverWait // being deleted already: nothing to release, nothing to delete
	case !Released(upstream):
		return TakeoverRelease
	case DeleteNow(upstream): // the agent applied the release
		return TakeoverDelete
	}
	return TakeoverWait
}

// UpstreamCarries reports whether upstream carries the managed-cluster Application managed
// ("cluster/namespace/name"): only then is it this Application's delivery, to adopt.
func UpstreamCarries(upstream *workv1.ManifestWork, managed string) bool {
	key, ok := ManagedApplication(upstream)
	return ok && key == managed
}
