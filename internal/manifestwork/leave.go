package manifestwork

import (
	"time"

	"github.com/argocd-pull/argocd-pull/internal/argocd"
)

// When a request leaves: the payload a finished or cleared request leaves (WithdrawFinished,
// KeepCleared), and the hub Application it is cleared from (Clears), once the managed cluster
// finished it and compared since (Unsettled, InFlight).

// WithdrawFinished marks the sync request next carries done when the managed cluster finished it:
// the payload then carries its delivery ID, not its .operation. ok is false when there is none.
//
// The hub clears a finished request only once the cluster compared the Application since and the
// hub shows the result (see readyToClear): seconds at best, longer on a busy hub. The work agent
// applies the whole manifest whenever it changes, and Argo CD runs any .operation it finds: a
// change of the work meanwhile (a commit the ApplicationSet controller writes into every
// Application) would run the finished sync a second time. So a work that changes drops a finished
// request's .operation, and keeps it dropped until the request leaves (Done travels in the
// deliveries).
// A work that does not change keeps it: withdrawing it would be one more apply for each sync.
func WithdrawFinished(next Deliveries, reported Reported) (Deliveries, bool) {
	d := next.Sync
	if d == nil || d.Done || next.Operation != nil || !reported.syncDone(d) {
		return next, false
	}
	done := *d
	done.Done = true
	next.Sync = &done
	return next, true
}

// KeepCleared puts back into next the request the hub has cleared, as the work carries it, while
// the other request the work carries stays unchanged and outstanding; ok is false when there is
// none to put back, or nothing outstanding to keep it beside.
// A refresh counts as cleared when the hub recorded it (RefreshDeliveredAnnotation) or when the
// managed cluster reported it finished and the hub no longer asks for it: the ApplicationSet
// controller rewrites the annotations of the Applications it generates, and drops that record.
//
// The work agent re-applies the whole manifest whenever it changes. Dropping a finished refresh
// while a sync is carried would apply the sync's .operation again, and if the managed Argo CD had
// just finished it and removed .operation, run it a second time; dropping a finished sync while a
// refresh is carried would refresh again. So a request the hub cleared leaves the payload together
// with the other, or with a change the payload carries anyway (Ladder keeps the work as it is only
// when nothing else changed). Once every request the work carries is cleared, they leave at once,
// in a work write of their own: a work carrying a request asks its cluster for reconciledAt
// (feedbackRules), which Argo CD rewrites on every reconciliation of the Application, so a work
// that kept them would have its agent write its status to the hub every few minutes for an
// Application at rest.
func KeepCleared(hub Hub, carried, next Deliveries, reported Reported) (Deliveries, bool) {
	// A request carried with an attempt to terminate it leaves at once: the phase Terminating the
	// payload sets is not left behind a finished operation.
	syncCleared := carried.Sync != nil && (carried.Operation != nil || carried.Sync.Done) && hub.SyncCleared == carried.Sync.ID &&
		carried.Sync.Terminate == 0
	refreshCleared := carried.Refresh != nil && (hub.RefreshCleared == carried.Refresh.ID || reported.refreshDone(carried.Refresh))
	// Each request stays as the work carries it, or leaves only because the hub cleared it.
	syncStays := sameDelivery(next.Sync, carried.Sync) || next.Sync == nil && (syncCleared || carried.Sync == nil)
	refreshStays := sameDelivery(next.Refresh, carried.Refresh) || next.Refresh == nil && (refreshCleared || carried.Refresh == nil)
	putBack := next.Sync == nil && syncCleared || next.Refresh == nil && refreshCleared
	if !syncStays || !refreshStays || !putBack {
		return next, false
	}
	syncOutstanding := carried.Sync != nil && !syncCleared
	refreshOutstanding := carried.Refresh != nil && !refreshCleared
	if !syncOutstanding && !refreshOutstanding {
		return next, false
	}
	kept := next
	if next.Sync == nil && syncCleared {
		kept.Sync, kept.Operation = carried.Sync, carried.Operation
	}
	if next.Refresh == nil && refreshCleared {
		kept.Refresh, kept.RefreshValue = carried.Refresh, carried.RefreshValue
	}
	return kept, true
}

// Outstanding is what the payload carries that the hub has not cleared: a sync request the hub
// cleared may stay in an unchanged work (KeepCleared) and is then no request in flight.
func (d Deliveries) Outstanding(hub Hub) Deliveries {
	if d.Sync != nil && hub.SyncCleared == d.Sync.ID {
		d.Sync, d.Operation = nil, nil
	}
	return d
}

func sameDelivery(a, b *Delivery) bool { return a != nil && b != nil && *a == *b }

// Clears says which requests the status controller removes from the hub Application, in the same
// write as the status: those whose delivery the managed cluster finished, when the hub still has
// that very request.
func Clears(hub Hub, carried Deliveries, reported Reported) (sync, refresh bool) {
	if d := carried.Sync; hub.Operation != nil && reported.readyToClear(d, hub.Synced, hub.StepHeld) && hub.SyncCleared != d.ID &&
		ContentHash(withoutDeliveryInfo(hub.Operation)) == d.Hash {
		sync = true
	}
	if d := carried.Refresh; hub.Refresh != "" && reported.refreshDone(d) && hub.RefreshCleared != d.ID &&
		ContentHash(hub.Refresh) == d.Hash {
		refresh = true
	}
	return sync, refresh
}

// Unsettled is true while the managed cluster has finished the carried sync request but its Argo
// CD has not compared the Application since. The hub shows that operation as still Running: the
// status write that shows it finished is the one that clears the request (see Clears), so that a
// finished operation on the hub always means a cleared request (see Hub.SyncCleared).
func Unsettled(carried Deliveries, reported Reported, hubSynced, stepHeld bool) bool {
	return carried.Sync != nil && reported.syncDone(carried.Sync) && !reported.readyToClear(carried.Sync, hubSynced, stepHeld)
}

// readyToClear: the delivery is settled, and when it left the cluster Synced, the hub already
// shows the sync status derived from it (hubSynced). The ApplicationSet controller decides a RollingSync step's sync on a snapshot of
// the Application and writes .operation on the current one: seeing the request cleared while it
// still read OutOfSync, it requests the same sync again. So the hub first shows Synced (the
// operation still Running), and clears the request in the next write. A request its RollingSync
// step holds (stepHeld, see HeldForStep) is not cleared yet either.
func (r Reported) readyToClear(d *Delivery, hubSynced, stepHeld bool) bool {
	if !r.syncSettled(d) || stepHeld {
		return false
	}
	return r.Phase != "Succeeded" || r.SyncStatus != "Synced" || hubSynced
}

// InFlight is true while a sync request is carried and the managed cluster has not finished it
// and compared the Application since (or its RollingSync step holds it: HeldForStep).
func InFlight(carried Deliveries, reported Reported, hubSynced, stepHeld bool) bool {
	return carried.Sync != nil && !reported.readyToClear(carried.Sync, hubSynced, stepHeld)
}

// StepHoldLimit bounds how long a RollingSync step holds a finished sync's request on the hub
// (HeldForStep): the ApplicationSet controller's own requeue period. A controller that works
// moves the step's Application on well before; past it the request is cleared, and if the
// controller still reads it Pending it asks for the sync again, as it would of Argo CD itself.
// StepProgressingHold bounds the hold once the controller moved the Application on to Progressing.
const (
	StepHoldLimit       = 3 * time.Minute
	StepProgressingHold = 10 * time.Second
)

// HeldForStep says whether the request carried, a RollingSync step's sync that the managed cluster
// finished and settled, stays on the hub Application a while, and until when at most. step and
// since are the status the step's ApplicationSet gives the Application and since when (to the
// second; "" when none). It stays while the ApplicationSet reads the Application Pending and will
// move it on from what the hub shows (the sync Succeeded, left it Synced, and started in a later
// second than the step began), and then while it reads it Progressing since the sync started, until
// it reads it Healthy (StepProgressingHold at most from the move).
//
// Argo CD 3.4 and later's ApplicationSet controller moves a Pending Application on once its
// operation started and it was compared after the step began, but in that same reconcile it
// writes the sync requests of its steps from the statuses it read before (argo-cd#21502): it writes
// .operation again on the Application it just moved on, and if the request was cleared meanwhile,
// that is a second sync on the cluster, which the step then waits for. So the hub shows the sync
// still running with the cluster's Synced, health and comparison since (what moves it on and then
// counts it Healthy), and keeps the request until a later reconcile, one that no longer reads it
// Pending, wrote the ApplicationSet's status. The reconcile that moves it on may do so while the
// sync still runs and write the request again after the sync's end, so a sync moved on while it
// ran is held too. A sync that started in the step's own second never
// moves it on (see StepDeliverAt); it is cleared at once, as are a failed one (the controller's
// retry) and any request the ApplicationSet controller did not make.
func HeldForStep(hub Hub, carried Deliveries, reported Reported, startedAt, step string, since, now time.Time) (held bool, until time.Time) {
	d := carried.Sync
	if step == "" || !RolledOut(hub) || !reported.syncSettled(d) || reported.Phase != "Succeeded" || reported.SyncStatus != "Synced" {
		return false, time.Time{}
	}
	started, errS := time.Parse(time.RFC3339, startedAt)
	finished, errF := time.Parse(time.RFC3339, reported.FinishedAt)
	if errS != nil || errF != nil {
		return false, time.Time{}
	}
	until = finished.Add(StepHoldLimit)
	switch {
	case step == argocd.StepPending && started.After(since):
	case step == argocd.StepProgressing && !since.Before(started):
		// Moved on by a reconcile that saw this sync, running or ended: its own late write of the
		// request, which may come after the sync's end, is what the hold waits out.
		if end := since.Add(StepProgressingHold); end.Before(until) {
			until = end
		}
	default:
		return false, time.Time{}
	}
	return now.Before(until), until
}

// StepDeliverAt is when a RollingSync step's new sync request (planned, not carried) may reach the
// managed cluster: in a later second than the step began (stepBegan, to the second, as the
// ApplicationSet's status records it; zero: no step, or not read Pending). Zero when it may go now.
//
// Argo CD 3.4 and later move a Pending Application on only once its operation started in a later
// second than the step began. A sync that starts in that same second, which a fast hub and cluster
// often manage, never moves it on: the ApplicationSet controller asks again once it finished, and
// the step waits for a second sync (argo-cd#21502). Holding the request for the rest of that
// second costs the step less than a second, against a whole sync.
func StepDeliverAt(hub Hub, carried, planned Deliveries, stepBegan time.Time) time.Time {
	d := planned.Sync
	if stepBegan.IsZero() || d == nil || !RolledOut(hub) || carried.Sync != nil && carried.Sync.ID == d.ID {
		return time.Time{}
	}
	return stepBegan.Truncate(time.Second).Add(time.Second)
}

// RepeatedStepSync says whether the new sync request planned (not carried, and not the carried one
// sent again: syncLost) is a RollingSync step's sync that the ApplicationSet asked for after it
// moved the step on: step, the status it gives the Application now, reads Waiting, Progressing or
// Healthy. Such a request is not delivered, and the hub drops it.
//
// Argo CD's ApplicationSet controller writes a step's sync request on every Application its
// reconcile read Pending when it began, also on one that same reconcile moves on (argo-cd#21502).
// It writes the ApplicationSet's status first, and asks for a step's sync only while that status
// reads Pending: a request that meets any other status is that late repeat. Delivered, it would
// run once more on the cluster, pinned to the revision the hub shows then; one that waits in the
// work for a cluster that is away runs when it comes back, and if that is after the next revision's
// step began, the step counts it as its own and waits for good for a sync nobody asks for. Dropped,
// nothing is lost: while the step reads Pending, the ApplicationSet asks again.
func RepeatedStepSync(hub Hub, carried, planned Deliveries, step string) bool {
	d, c := planned.Sync, carried.Sync
	if d == nil || !RolledOut(hub) || c != nil && (c.ID == d.ID || c.Hash == d.Hash && hub.SyncCleared != c.ID) {
		return false
	}
	return step == argocd.StepWaiting || step == argocd.StepProgressing || step == argocd.StepHealthy
}
