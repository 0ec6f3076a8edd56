package propagation

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

// Action is what a reconcile does to one ManifestWork.
type Action string

const (
	// ActCreate writes the Application's new work.
	ActCreate Action = "Create"
	// ActUpdate brings the Application's work to what the hub wants (UpdatedWork).
	ActUpdate Action = "Update"
	// ActFreeze freezes a work the refusal withdraws the right to, or one on a cluster the
	// Application no longer names (Freeze): the managed cluster keeps what it runs.
	ActFreeze Action = "Freeze"
	// ActPause makes a work's Application read only (Pause).
	ActPause Action = "Pause"
	// ActYield deletes a work whose managed-cluster Application an older work of another hub
	// Application delivers, applied: the agent only drops this work's ownership.
	ActYield Action = "Yield"
	// ActRelease turns a paused work, or an upstream work taken over, CreateOnly with its
	// Application orphaned before it is deleted (Release), so that the cluster keeps it.
	ActRelease Action = "Release"
	// ActDelete deletes a work the Application no longer needs, or a released upstream work.
	ActDelete Action = "Delete"
	// ActFinalize writes into the work of an Application being deleted what the deletion needs
	// on the managed cluster, before the work goes (FinalWork).
	ActFinalize Action = "Finalize"
	// ActAsk adds the Application (Step.Ask) to its cluster's claim probe, with every other
	// Application of the cluster that waits for its answer (manifestwork.DesiredProbe).
	ActAsk Action = "Ask"
)

// Step is one work write of a plan.
type Step struct {
	Action Action
	// Work is what is written: the new object (create, update, freeze, pause, release) or the work
	// to delete.
	Work *workv1.ManifestWork
	// Reason is why a work is frozen or paused.
	Reason string
	// Upstream marks an upstream controller's work: the takeover's release and deletion.
	Upstream bool
	// MovedTo is, for the deletion of a work on a cluster the Application left, the cluster it
	// moved to.
	MovedTo string
	// Other names the other work a step is about: the rival a work yields to, the Application's
	// work an upstream work is released for.
	Other string
	// Ask is the probe entry ActAsk adds.
	Ask *manifestwork.ProbeEntry
}

// Plan is everything one reconcile writes, in order, and what its Application then says.
type Plan struct {
	Steps []Step
	// Refusal is the Application's condition: nil when it is delivered.
	Refusal *Refusal
	// Frozen are the works ("namespace/name") the refusal leaves frozen, written now or before.
	Frozen []string
}

// PlanDelivery decides every work write of a reconcile from the ladder's verdict on f: works are
// the Application's works on every cluster, rival the older work of another Application that
// carries the same managed-cluster Application (nil when none). On a refusal nothing the managed
// cluster runs is deleted: works the Application may no longer change are frozen, its work is
// paused while an upstream controller still writes its own, and it yields to an older rival once
// that is applied. On a delivery its works on other clusters go (released first when paused), its
// work is created or updated, and an upstream work of the same Application is taken over one step
// at a time (NextTakeoverStep).
func PlanDelivery(f Facts, v Verdict, works []workv1.ManifestWork, rival *workv1.ManifestWork) (Plan, error) {
	target, _, _ := manifestwork.ReadMarkers(f.App)
	if v.Refusal != nil {
		return planRefusal(f, *v.Refusal, target, works, rival)
	}
	desired := v.Work
	if v.Ask != nil {
		// The work to come keeps its place: the others go as they would beside it.
		desired = &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: target.Cluster, Name: manifestwork.WorkName(f.App.GetNamespace(), f.App.GetName())}}
	}
	removal, err := PlanRemoval(works, desired)
	if err != nil {
		return Plan{}, err
	}
	plan := Plan{Steps: removal}
	switch {
	case v.Ask != nil:
		// Asked already: the probe's answer brings the Application back.
		if !manifestwork.ProbeAsks(f.Probe, v.Ask.Key()) {
			plan.Steps = append(plan.Steps, Step{Action: ActAsk, Ask: v.Ask})
		}
		return plan, nil
	case f.Existing == nil:
		plan.Steps = append(plan.Steps, Step{Action: ActCreate, Work: desired})
	case !manifestwork.UpToDate(f.Existing, desired):
		plan.Steps = append(plan.Steps, Step{Action: ActUpdate, Work: UpdatedWork(f.Existing, desired)})
	}
	if f.Upstream == nil {
		return plan, nil
	}
	switch manifestwork.NextTakeoverStep(f.Existing, f.Upstream) {
	case manifestwork.TakeoverRelease:
		released, err := manifestwork.Release(f.Upstream)
		if err != nil {
			return Plan{}, err
		}
		if released != nil {
			plan.Steps = append(plan.Steps, Step{Action: ActRelease, Work: released, Upstream: true, Other: f.Existing.Name})
		}
	case manifestwork.TakeoverDelete:
		plan.Steps = append(plan.Steps, Step{Action: ActDelete, Work: f.Upstream, Upstream: true})
	}
	return plan, nil
}

func planRefusal(f Facts, refusal Refusal, target manifestwork.Target, works []workv1.ManifestWork, rival *workv1.ManifestWork) (Plan, error) {
	plan := Plan{Refusal: &refusal}
	for i := range works {
		w := &works[i]
		onTarget := w.Namespace == target.Cluster
		switch {
		case !w.DeletionTimestamp.IsZero():
			continue
		case onTarget && refusal.Reason == ReasonUpstreamRunning:
			paused, err := manifestwork.Pause(w, "the upstream pull controller still writes its ManifestWork")
			if err != nil {
				return Plan{}, err
			}
			if paused != nil {
				plan.Steps = append(plan.Steps, Step{Action: ActPause, Work: paused, Reason: paused.Annotations[api.PausedAnnotation]})
			}
			continue
		case onTarget && refusal.Reason == ReasonAlreadyDelivered:
			if carried, _ := manifestwork.ManagedApplication(w); carried == manifestwork.ManagedKey(target, f.App.GetName()) && rival != nil && manifestwork.AppliedAtGeneration(rival) {
				plan.Steps = append(plan.Steps, Step{Action: ActYield, Work: w, Other: rival.Namespace + "/" + rival.Name})
			}
			// Otherwise w carries another managed-cluster Application (deleting it would delete
			// that one), or the rival's status update requeues this Application.
			continue
		case onTarget && !Revokes(refusal.Reason):
			continue
		}
		frozen, err := manifestwork.Freeze(w, refusal.Reason)
		if err != nil {
			return Plan{}, err
		}
		plan.Frozen = append(plan.Frozen, w.Namespace+"/"+w.Name)
		if frozen != nil {
			plan.Steps = append(plan.Steps, Step{Action: ActFreeze, Work: frozen, Reason: refusal.Reason})
		}
	}
	return plan, nil
}

// PlanRemoval decides how works go, except keep (nil: all of them): each is deleted, or first
// released when paused (Release; a released work then waits for the agent, see DeleteNow). Works
// being deleted are left to finish. A deletion beside keep is a move to keep's cluster.
func PlanRemoval(works []workv1.ManifestWork, keep *workv1.ManifestWork) ([]Step, error) {
	var steps []Step
	for i := range works {
		w := &works[i]
		switch {
		case keep != nil && w.Namespace == keep.Namespace && w.Name == keep.Name, !w.DeletionTimestamp.IsZero():
			continue
		case !manifestwork.DeleteNow(w):
			if manifestwork.Released(w) {
				continue // its next status requeues the Application
			}
			released, err := manifestwork.Release(w)
			if err != nil {
				return nil, err
			}
			if released != nil {
				steps = append(steps, Step{Action: ActRelease, Work: released})
			}
			continue
		}
		step := Step{Action: ActDelete, Work: w}
		if keep != nil {
			step.MovedTo = keep.Namespace
		}
		steps = append(steps, step)
	}
	return steps, nil
}

// PlanFinalize decides the work writes for a hub Application being deleted (pull: a valid
// pull-model one). Each of its works first carries what the deletion needs on the managed cluster
// (manifestwork.FinalWork: Argo CD's finalizers, a terminate of the running operation), or waits
// for the cluster's answer up to manifestwork.FinalGrace, and then goes (PlanRemoval). reported
// reads what a work's cluster reported about its requests. wait is the soonest a waiting work is
// to be looked at again (0: none waits).
func PlanFinalize(works []workv1.ManifestWork, finalizers []string, pull bool, reported func(*workv1.ManifestWork) manifestwork.Reported, now time.Time) (steps []Step, wait time.Duration, err error) {
	var deletable []workv1.ManifestWork
	for i := range works {
		w := &works[i]
		if !pull || !w.DeletionTimestamp.IsZero() {
			deletable = append(deletable, *w)
			continue
		}
		final, after, err := manifestwork.FinalWork(w, finalizers, reported(w), now)
		switch {
		case err != nil:
			return nil, 0, err
		case final != nil:
			steps = append(steps, Step{Action: ActFinalize, Work: final})
		case after > 0:
			if wait == 0 || after < wait {
				wait = after
			}
		default:
			deletable = append(deletable, *w)
		}
	}
	removal, err := PlanRemoval(deletable, nil)
	if err != nil {
		return nil, 0, err
	}
	return append(steps, removal...), wait, nil
}

// PlanPause decides how the Application's works are paused for reason: each held one is made read
// only once (Pause).
func PlanPause(works []workv1.ManifestWork, reason string) ([]Step, error) {
	var steps []Step
	for i := range works {
		w := &works[i]
		if !w.DeletionTimestamp.IsZero() {
			continue
		}
		paused, err := manifestwork.Pause(w, reason)
		if err != nil {
			return nil, err
		}
		if paused != nil {
			steps = append(steps, Step{Action: ActPause, Work: paused, Reason: reason})
		}
	}
	return steps, nil
}

// UpdatedWork is existing brought to desired: desired's spec, its labels and annotations over
// existing's, the markers desired no longer carries removed, and RequestsOnlyAnnotation set when
// only the sync and refresh requests differ (RequestsOnlySince).
func UpdatedWork(existing, desired *workv1.ManifestWork) *workv1.ManifestWork {
	updated := existing.DeepCopy()
	updated.Labels = merged(updated.Labels, desired.Labels)
	updated.Annotations = merged(updated.Annotations, desired.Annotations)
	for _, k := range []string{api.DeliveriesAnnotation, api.FrozenAnnotation, api.PausedAnnotation, api.AdoptingAnnotation} {
		if _, ok := desired.Annotations[k]; !ok {
			delete(updated.Annotations, k)
		}
	}
	if since := manifestwork.RequestsOnlySince(existing, desired); since != "" {
		updated.Annotations[api.RequestsOnlyAnnotation] = since
	} else {
		delete(updated.Annotations, api.RequestsOnlyAnnotation)
	}
	updated.Spec = desired.Spec
	return updated
}

func merged(base, over map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}
