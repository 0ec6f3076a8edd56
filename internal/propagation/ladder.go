// Package propagation is the delivery policy: from the facts about a pull-model Application
// (read.go, gathered by internal/gather) the refusal ladder decides whether it is delivered and
// with which ManifestWork (ladder.go), and the plan every work write that follows (plan.go). The
// ManifestWork itself, and every form it takes, is internal/manifestwork's.
package propagation

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/report"
	"github.com/argocd-pull/argocd-pull/internal/tenancy"
)

// Reasons a hub Application is not delivered: the reason of its condition and Warning event.
const (
	ReasonInvalidMarkers      = "InvalidPullMarkers"
	ReasonNamespaceNotAllowed = "NamespaceNotAllowed"
	ReasonClusterNotFound     = "ManagedClusterNotFound"
	ReasonHubNotATarget       = "HubIsNotATarget"
	ReasonClusterNotBound     = "ClusterNotBoundToNamespace"
	ReasonAppNamespace        = "ManagedNamespaceNotAllowed"
	ReasonNamespaceMissing    = "ClusterNamespaceMissing"
	ReasonProjectNotFound     = "AppProjectNotFound"
	ReasonProjectNotPermitted = "AppProjectNotPermitted"
	ReasonWorkNameTaken       = "ManifestWorkNameTaken"
	ReasonAlreadyDelivered    = "ManagedApplicationTaken"
	ReasonManagedAppExists    = "ManagedApplicationExists"
	ReasonPayloadTooLarge     = "PayloadTooLarge"
	ReasonWorkWriteFailed     = "ManifestWorkWriteFailed"
	ReasonUpstreamWork        = "UpstreamManifestWork"
	ReasonUpstreamRunning     = "UpstreamControllerRunning"
)

// Revokes reports whether a refusal withdraws a right the Application had: the works it already
// has are frozen (see Freeze), so that nothing the tenant changes reaches the cluster any more.
func Revokes(reason string) bool {
	switch reason {
	case ReasonNamespaceNotAllowed, ReasonHubNotATarget, ReasonClusterNotBound, ReasonAppNamespace,
		ReasonProjectNotFound, ReasonProjectNotPermitted:
		return true
	}
	return false
}

// Facts are what the propagation controller read about one pull-model hub Application before
// deciding: everything Ladder needs, nothing it fetches itself.
type Facts struct {
	App *unstructured.Unstructured
	// Policy is what the operator configured: where Applications are taken from and may land.
	Policy Policy
	// Cluster is the target ManagedCluster, nil when it does not exist.
	Cluster *clusterv1.ManagedCluster
	// Bindings are the ManagedClusterSets bound to the App's namespace and its PlacementDecisions.
	Bindings tenancy.Bindings
	// ClusterNamespace is true when the cluster's namespace exists on the hub.
	ClusterNamespace bool
	// Project is the App's AppProject in the Argo CD namespace, nil when it does not exist.
	Project *unstructured.Unstructured
	// Existing is the App's current work on the target cluster, nil when none.
	Existing *workv1.ManifestWork
	// Probe is the target cluster's claim probe (manifestwork.DesiredProbe), read only when
	// Existing is nil; nil when there is none.
	Probe *workv1.ManifestWork
	// Upstream is the oldest work an upstream pull controller wrote for the App on the target
	// cluster (see takeover.go), nil when none.
	Upstream *workv1.ManifestWork
	// NameTakenBy is "namespace/name" of the hub Application whose work holds the name the App's
	// new work would take (only when Existing is nil); empty when the name is free.
	NameTakenBy string
	// DeliveredBy is "namespace/name" of another hub Application whose work, older than the App's,
	// carries the same managed-cluster Application (cluster, namespace, name); empty when none.
	DeliveredBy string
	// Reported is what the managed cluster reported through Existing; Carried what Existing carries.
	Reported manifestwork.Reported
	Carried  manifestwork.Deliveries
	// NewDeliveryID returns a fresh delivery ID (see PlanDeliveries).
	NewDeliveryID func() string
	// Step is the status the App's RollingSync ApplicationSet gives it, when the hub's sync
	// request is that ApplicationSet's ("" otherwise): a request met by any status but Pending is
	// a late repeat, dropped (manifestwork.RepeatedStepSync).
	Step string
	// StepBegan is when Step became Pending (zero otherwise), and Now the time of the reading: a
	// new request waits for the next second (manifestwork.StepDeliverAt).
	StepBegan, Now time.Time
}

// Refusal says why an Application is not delivered. The managed cluster keeps what it has.
type Refusal struct {
	Reason, Message string
}

// Verdict is the ladder's decision: deliver Work, or refuse. Work leaves out a RollingSync step's
// sync request until Recheck (zero: nothing waits). Ask (no Work) says the managed cluster must
// first answer, through its claim probe, whether an Application of that name is there: the work
// is created, held, once it did.
type Verdict struct {
	Work    *workv1.ManifestWork
	Refusal *Refusal
	Recheck time.Time
	Ask     *manifestwork.ProbeEntry
	// Waiting, with Ask, says why the Application has waited for the cluster's answer longer than
	// it should (waitingFor); Recheck is then when to look again.
	Waiting string
	// Repeated, with Work, says why the hub's sync request is not delivered and is removed from
	// the hub Application: its RollingSync step moved on (manifestwork.RepeatedStepSync).
	Repeated string
}

func refuse(reason, format string, args ...any) Verdict {
	return Verdict{Refusal: &Refusal{Reason: reason, Message: fmt.Sprintf(format, args...)}}
}

// claimOf is whose the managed-cluster Application of app is, as far as the cluster said: through
// the App's work, or, before it has one, through the cluster's claim probe.
func claimOf(f Facts, target manifestwork.Target, app *unstructured.Unstructured) manifestwork.Claim {
	if f.Existing != nil {
		return manifestwork.ClaimOf(f.Existing)
	}
	return manifestwork.ClaimIn(f.Probe, target.AppNamespace, app.GetName(), client.ObjectKeyFromObject(app))
}

// Ladder decides, from the facts, whether a pull-model Application is delivered and with which
// ManifestWork. Each rung refuses with a reason a person can act on; the first that fails wins.
// Call it for Applications whose markers manifestwork.ReadMarkers accepted as pull-model.
func Ladder(f Facts) (Verdict, error) {
	app := f.App
	target, pull, err := manifestwork.ReadMarkers(app)
	switch {
	case err != nil:
		return refuse(ReasonInvalidMarkers, "%s", err.Error()), nil
	case !pull:
		return refuse(ReasonInvalidMarkers, "not a pull-model Application"), nil
	case !f.Policy.Allows(app.GetNamespace()):
		return refuse(ReasonNamespaceNotAllowed,
			"pull-model Applications are not taken from namespace %s; the operator allows %s (flag --pull-namespaces)",
			app.GetNamespace(), strings.Join(f.Policy.Namespaces(), ", ")), nil
	case tenancy.IsHub(target.Cluster, f.Cluster):
		return refuse(ReasonHubNotATarget, "ManagedCluster %s is the hub itself: pull-model Applications are never delivered to the hub", target.Cluster), nil
	case f.Cluster == nil:
		return refuse(ReasonClusterNotFound, "ManagedCluster %s does not exist on the hub; check the annotation %s", target.Cluster, api.ClusterAnnotation), nil
	}
	if ok, _ := f.Bindings.Allows(f.Cluster); !ok {
		ns := app.GetNamespace()
		return refuse(ReasonClusterNotBound,
			"ManagedCluster %s is not bound to namespace %s: create a ManagedClusterSetBinding in %s for a set that contains it (a PlacementDecision is not a binding)",
			target.Cluster, ns, ns), nil
	}
	ns, platform := app.GetNamespace(), app.GetNamespace() == f.Policy.ArgoCDNamespace
	if !platform && !f.Policy.ManagedNamespaces.Allows(ns, target.AppNamespace) {
		return refuse(ReasonAppNamespace,
			"an Application of namespace %s lands in %s on the managed cluster, not in %s: set %s to one of them, or the operator grants %s to %s (flag --grant-managed-namespaces %s=%s)",
			ns, strings.Join(f.Policy.ManagedNamespaces.Of(ns), ", "), target.AppNamespace, api.AppNamespaceAnnotation, target.AppNamespace, ns, ns, target.AppNamespace), nil
	}
	if !f.ClusterNamespace {
		return refuse(ReasonNamespaceMissing, "the cluster namespace %s does not exist on the hub yet (is the cluster's registration accepted?)", target.Cluster), nil
	}
	project := argocd.Project(app)
	switch {
	case f.Project == nil && (project != argocd.DefaultProject || !platform):
		return refuse(ReasonProjectNotFound, "AppProject %s not found in the Argo CD namespace %s", project, f.Policy.ArgoCDNamespace), nil
	case !tenancy.ProjectPermits(f.Project, ns, f.Policy.ArgoCDNamespace):
		return refuse(ReasonProjectNotPermitted,
			"AppProject %s does not permit Applications of namespace %s: its spec.sourceNamespaces must match %s (Argo CD's rule for Applications outside its namespace)",
			project, ns, ns), nil
	case f.Upstream != nil && !f.Policy.AdoptUpstream:
		return refuse(ReasonUpstreamWork,
			"ManifestWork %s/%s of %s delivers this Application; argocd-pull leaves it as it is: stop that controller (%s), then run argocd-pull with --adopt-upstream-works to take the Application over without redeploying it (docs/migration.md)",
			f.Upstream.Namespace, f.Upstream.Name, manifestwork.UpstreamWriter(f.Upstream), manifestwork.StopUpstream(f.Upstream)), nil
	case f.Upstream != nil && !manifestwork.UpstreamCarries(f.Upstream, manifestwork.ManagedKey(target, app.GetName())):
		carried, _ := manifestwork.ManagedApplication(f.Upstream)
		return refuse(ReasonUpstreamWork,
			"ManifestWork %s/%s of %s delivers this Application as %q, argocd-pull would deliver %s/%s/%s: it is not adopted and left as it is; delete it to deliver this Application (that deletes what it delivered)",
			f.Upstream.Namespace, f.Upstream.Name, manifestwork.UpstreamWriter(f.Upstream), carried, target.Cluster, target.AppNamespace, app.GetName()), nil
	case manifestwork.UpstreamRunning(f.Existing, f.Upstream):
		return refuse(ReasonUpstreamRunning,
			"%s still writes ManifestWork %s/%s (changed or written again since argocd-pull began to adopt it): argocd-pull paused its own work and leaves the Application to it; stop that controller (%s), then delete ManifestWork %s/%s and argocd-pull adopts the Application anew",
			manifestwork.UpstreamWriter(f.Upstream), f.Upstream.Namespace, f.Upstream.Name, manifestwork.StopUpstream(f.Upstream), f.Existing.Namespace, f.Existing.Name), nil
	case f.Existing == nil && f.NameTakenBy != "":
		return refuse(ReasonWorkNameTaken, "the ManifestWork name %s/%s belongs to Application %s; rename this Application",
			target.Cluster, manifestwork.WorkName(ns, app.GetName()), f.NameTakenBy), nil
	case f.DeliveredBy != "":
		return refuse(ReasonAlreadyDelivered, "Application %s already delivers the Application %s/%s to cluster %s; one hub Application per managed-cluster Application",
			f.DeliveredBy, target.AppNamespace, app.GetName(), target.Cluster), nil
	case claimOf(f, target, app) == manifestwork.ClaimForeign && f.Upstream == nil:
		return refuse(ReasonManagedAppExists,
			"cluster %s already has an Application %s/%s that this hub did not deliver (it lacks the annotation %s=%s/%s); nothing of it is changed or deleted: delete it there and the hub delivers this one, or rename this Application",
			target.Cluster, target.AppNamespace, app.GetName(), api.HubApplicationAnnotation, ns, app.GetName()), nil
	}
	newID := f.NewDeliveryID
	if newID == nil {
		newID = manifestwork.NewDeliveryID
	}
	hub := manifestwork.HubOf(app)
	deliveries := manifestwork.PlanDeliveries(hub, f.Carried, f.Reported, newID)
	repeated := ""
	if manifestwork.RepeatedStepSync(hub, f.Carried, deliveries, f.Step) {
		// Planned as if the hub had no request (what the work carries stays); the hub drops it.
		appSet, _ := argocd.OwningApplicationSet(app)
		repeated = fmt.Sprintf("ApplicationSet %s asked for a sync of this Application's RollingSync step while its status read %s, after it moved the step on (argo-cd#21502): not delivered to cluster %s, and removed from the hub Application; the ApplicationSet asks again while the step reads Pending",
			appSet, f.Step, target.Cluster)
		hub.Operation = nil
		deliveries = manifestwork.PlanDeliveries(hub, f.Carried, f.Reported, newID)
	}
	recheck := manifestwork.StepDeliverAt(hub, f.Carried, deliveries, f.StepBegan)
	if f.Now.Before(recheck) {
		// Not yet: planned as if the hub had no request (what the work carries stays).
		hub.Operation = nil
		deliveries = manifestwork.PlanDeliveries(hub, f.Carried, f.Reported, newID)
	} else {
		recheck = time.Time{}
	}
	carried := f.Project
	if project == argocd.DefaultProject {
		carried = nil // every Argo CD has its own
	}
	target.ArgoCDNamespace = f.Policy.ArgoCDNamespace
	claim := claimOf(f, target, app)
	// An Application an upstream work delivers for this very hub Application is adopted: held at once.
	held := claim == manifestwork.ClaimOurs || claim == manifestwork.ClaimFree || f.Upstream != nil
	desired := func(d manifestwork.Deliveries) (*workv1.ManifestWork, error) {
		w, err := manifestwork.DesiredWork(app, carried, target, d)
		if err != nil || !held {
			return w, err
		}
		return manifestwork.Hold(w)
	}
	work, err := desired(deliveries)
	if errors.Is(err, manifestwork.ErrPayloadTooLarge) {
		return refuse(ReasonPayloadTooLarge, "%s", err.Error()), nil
	}
	if err != nil {
		return Verdict{}, err
	}
	if f.Existing == nil && !held {
		// A new work is created held once the cluster answered; an oversized payload is refused
		// above, before the cluster is asked.
		ask := manifestwork.ProbeEntry{Namespace: target.AppNamespace, Name: app.GetName(), Hub: client.ObjectKeyFromObject(app)}
		waiting, recheck := waitingFor(f, target.Cluster, ask)
		return Verdict{Ask: &ask, Waiting: waiting, Recheck: recheck}, nil
	}
	if kept, ok := manifestwork.KeepCleared(hub, f.Carried, deliveries, f.Reported); ok && f.Existing != nil {
		// A request the hub cleared stays as the work carries it, unless the work changes anyway.
		if w, err := desired(kept); err == nil && manifestwork.UpToDate(f.Existing, w) {
			work, deliveries = w, kept
		}
	}
	if finished, ok := manifestwork.WithdrawFinished(deliveries, f.Reported); ok && f.Existing != nil && !manifestwork.UpToDate(f.Existing, work) {
		// The work changes anyway: without the .operation the managed cluster already ran.
		if work, err = desired(finished); err != nil {
			return Verdict{}, err
		}
	}
	if f.Existing != nil {
		// A work named by an earlier release keeps its name: renaming would redeploy.
		work.Name = f.Existing.Name
	}
	// The upstream work as it was when adoption began stays recorded (see UpstreamRunning): as
	// adopting while it is there, as adopted once it is gone.
	mark := ""
	if f.Existing != nil {
		mark = manifestwork.MarkOf(f.Existing)
	}
	if mark == "" && f.Upstream != nil {
		mark = manifestwork.AdoptionMark(f.Upstream)
	}
	if mark != "" {
		key := api.AdoptedAnnotation
		if f.Upstream != nil {
			key = api.AdoptingAnnotation
		}
		work.Annotations[key] = mark
		if work, err = manifestwork.Rehash(work); err != nil {
			return Verdict{}, err
		}
	}
	return Verdict{Work: work, Recheck: recheck, Repeated: repeated}, nil
}

// waitingFor says why an Application asked about (Verdict.Ask) has waited for its cluster's
// answer longer than it should, "" while it has not, and when to look again: as a delivered
// Application's status is said stale (report.Staleness), the cluster is not available, or its
// agent has not applied the probe written Policy.StaleAfter ago. An entry the probe does not ask
// about yet is asked about now.
func waitingFor(f Facts, cluster string, ask manifestwork.ProbeEntry) (string, time.Time) {
	written := f.Now
	if manifestwork.ProbeAsks(f.Probe, ask.Key()) {
		if at, ok := manifestwork.WrittenAt(f.Probe); ok {
			written = at
		}
	}
	staleAfter := f.Policy.StaleAfter
	if staleAfter <= 0 {
		staleAfter = report.DefaultStaleAfter
	}
	reason, recheck := report.Staleness(cluster, f.Cluster, false, written, staleAfter, f.Now)
	if reason == "" {
		return "", recheck
	}
	return fmt.Sprintf("not delivered yet: cluster %s must first say whether Application %s/%s is already there (its claim probe, ManifestWork %s/%s), and %s",
		cluster, ask.Namespace, ask.Name, cluster, manifestwork.ProbeName, reason), time.Time{}
}
