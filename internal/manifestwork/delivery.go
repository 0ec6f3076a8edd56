package manifestwork

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
)

// How a sync (.operation) or refresh request set on a hub Application reaches the managed cluster
// exactly once.
//
// The OCM work agent re-applies a manifest only when the manifest it receives changes (it hashes
// it), and applies with server-side apply: a manifest that stops carrying .operation removes it
// from the managed Application, and Argo CD abandons an operation whose .operation is gone. So:
//   - every request gets a delivery ID of its own when the hub first carries it; the ID travels in
//     the payload (an annotation, and an entry of .operation.info that Argo CD copies into
//     status.operationState.operation), so even a request identical to the previous one changes
//     the manifest and is applied, and its acknowledgement cannot be confused with an earlier one;
//   - the payload keeps carrying the request until the managed cluster has finished it (the
//     operation reached Succeeded, Failed or Error; the refresh annotation is gone), read from
//     status feedback that names the delivery ID;
//   - the status controller then clears the request from the hub Application in the same write
//     that records the finished operation (status.operationState carries the delivery ID), and for
//     a refresh writes api.RefreshDeliveredAnnotation; so the hub itself tells a request that was
//     cleared and set again from one that was never cleared, across restarts;
//   - the ManifestWork keeps the requests in flight in api.DeliveriesAnnotation.

// Delivery is one request in flight: its ID and a hash of its content on the hub.
type Delivery struct {
	ID   string `json:"id"`
	Hash string `json:"hash"`
	// Revision pins a RollingSync step's sync to the revision the cluster reported when the
	// ApplicationSet controller requested it (see pinnedRevision).
	Revision string `json:"revision,omitempty"`
	// Terminate, when not 0, numbers the attempt to terminate the operation this request started
	// (see planTerminate).
	Terminate int `json:"terminate,omitempty"`
	// Done is true once the payload no longer carries the request's .operation: the managed
	// cluster finished it and the work changed before the hub cleared it (see WithdrawFinished).
	Done bool `json:"done,omitempty"`
}

// Deliveries are the requests a ManifestWork's payload carries.
type Deliveries struct {
	Sync    *Delivery `json:"sync,omitempty"`
	Refresh *Delivery `json:"refresh,omitempty"`
	// Operation, when set, is the payload's .operation verbatim: the one the work carried so far,
	// kept while the hub no longer has it or has a newer one, because an operation the managed
	// cluster is running is never withdrawn. When nil, the payload carries the hub's .operation.
	// It is read from the existing work's payload, not stored in the annotation.
	Operation map[string]any `json:"-"`
	// RefreshValue, when set, is the payload's refresh annotation verbatim, read from the existing
	// work's payload like Operation (see KeepCleared). When "", the payload carries the hub's.
	RefreshValue string `json:"-"`
}

// ParseDeliveries reads an api.DeliveriesAnnotation value; an empty or unreadable one is none.
func ParseDeliveries(s string) Deliveries {
	var d Deliveries
	if s == "" || json.Unmarshal([]byte(s), &d) != nil {
		return Deliveries{}
	}
	return d
}

// String encodes d for api.DeliveriesAnnotation; "" when nothing is in flight.
func (d Deliveries) String() string {
	if d.Sync == nil && d.Refresh == nil {
		return ""
	}
	raw, _ := json.Marshal(d)
	return string(raw)
}

// Reported is what the managed cluster reported about deliveries, through status feedback.
type Reported struct {
	// SyncDelivered and RefreshDelivered are the delivery IDs on the managed Application's
	// annotations: the work agent applied the payload that carries them.
	SyncDelivered, RefreshDelivered string
	// SyncHeld is the delivery ID in the managed Application's .operation (a request waiting or
	// running); SyncStarted the one in status.operationState.operation (the last operation its
	// Argo CD started), and Phase that operation's phase.
	SyncHeld, SyncStarted, Phase string
	// RefreshPending is true while the managed Application still has the refresh annotation.
	RefreshPending bool
	// TerminateDelivered is the attempt to terminate on the managed Application's annotations
	// (see planTerminate), read in the same read as Phase.
	TerminateDelivered string
	// FinishedAt is when the last operation finished, ReconciledAt when its Argo CD last compared
	// the Application with Git (both its clock, RFC 3339, to the second); SyncStatus is the result
	// of that comparison, and Revision the revision it compared with (status.sync.revision).
	FinishedAt, ReconciledAt, SyncStatus, Revision string
}

// PhaseTerminating is the operation phase in which Argo CD stops a running operation.
const PhaseTerminating = "Terminating"

// Finished is true for the phases in which Argo CD has finished an operation and cleared it.
func Finished(phase string) bool {
	return phase == "Succeeded" || phase == "Failed" || phase == "Error"
}

// operationRunning: the managed Application's last operation has not finished. A phase
// Terminating beside a finishedAt is not one: a request to terminate reached the operation after
// it had finished (the hub read it Running a moment before it ended), and Argo CD, which acts on a
// phase only with an .operation beside it, leaves that phase as it is. (An operation that failed
// and waits for its retry reads the same once asked to terminate; Argo CD stops it before it acts
// on a deletion.)
func (r Reported) operationRunning() bool {
	return r.Phase != "" && !Finished(r.Phase) && (r.Phase != PhaseTerminating || r.FinishedAt == "")
}

// syncDone: the managed cluster finished the delivery.
func (r Reported) syncDone(d *Delivery) bool {
	return d != nil && r.SyncStarted == d.ID && Finished(r.Phase)
}

// syncSettled: the managed cluster finished the delivery and its sync status is about what the
// operation left. Argo CD compares the Application right after an operation; until then one that
// has just synced still reads OutOfSync, and a RollingSync ApplicationSet that saw the request
// cleared and OutOfSync would request another sync. A sync that Succeeded is settled once the
// cluster reads Synced, or compared in a later second than it finished (an Application that stays
// OutOfSync after a sync), or compares a revision other than the one it was pinned to; a failed
// one once compared since (it stays OutOfSync: another request is the ApplicationSet's retry).
func (r Reported) syncSettled(d *Delivery) bool {
	if !r.syncDone(d) {
		return false
	}
	if r.Phase == "Succeeded" && r.SyncStatus == "Synced" {
		return true
	}
	if d.Revision != "" && r.Revision != "" && r.Revision != d.Revision {
		// A request pinned to a revision (see pinnedRevision) the cluster no longer compares
		// with: a commit landed meanwhile. It synced the pinned one and stays OutOfSync at the new
		// one whatever comparison comes next; waiting for one would hold it until Argo CD's next
		// periodic reconciliation.
		return true
	}
	finished, errF := time.Parse(time.RFC3339, r.FinishedAt)
	reconciled, errR := time.Parse(time.RFC3339, r.ReconciledAt)
	if errF != nil || errR != nil {
		return true // nothing to wait for: a cluster that does not report both
	}
	if r.Phase == "Succeeded" {
		// Seconds only: a comparison in the same second may have started before the end.
		return reconciled.After(finished)
	}
	return !reconciled.Before(finished)
}

// syncRunning: the managed cluster started the delivery and has not finished it.
func (r Reported) syncRunning(d *Delivery) bool {
	return d != nil && r.SyncStarted == d.ID && !Finished(r.Phase)
}

// syncLost: the payload reached the managed cluster, but its .operation is gone without the
// operation having started (Argo CD clears .operation when it finishes another operation that was
// running when the request arrived). The delivery is sent again under a new ID.
func (r Reported) syncLost(d *Delivery) bool {
	return d != nil && r.SyncDelivered == d.ID && r.SyncHeld != d.ID && r.SyncStarted != d.ID
}

// refreshDone: the managed cluster's Argo CD removed the refresh annotation of the delivery.
func (r Reported) refreshDone(d *Delivery) bool {
	return d != nil && r.RefreshDelivered == d.ID && !r.RefreshPending
}

// Hub is what the hub Application says about requests.
type Hub struct {
	// Operation is the requested sync (.operation), nil when none.
	Operation map[string]any
	// Refresh is the value of the refresh annotation, "" when none.
	Refresh string
	// SyncCleared is the delivery ID of the operation recorded in status.operationState when that
	// operation has finished: argocd-pull cleared it from the hub in that same write.
	SyncCleared string
	// RefreshCleared is RefreshDeliveredAnnotation.
	RefreshCleared string
	// ComparedRevision is the hub Application's status.sync.revision: the revision its cluster
	// last compared with (single-source Applications), or, for a cluster behind its RollingSync
	// fleet, the revision its fleet went ahead to (see appstatus.Derive). "" when that comparison
	// (status.sync.comparedTo.source) is of another source than the spec's: a revision of the
	// source the Application had (a template's targetRevision changed, the cluster has not
	// compared the new one yet).
	ComparedRevision string
	// Synced is true when the hub Application already shows the sync status the managed cluster
	// settled on (set by the status controller, which derives it).
	Synced bool
	// StepHeld is true while the request's RollingSync step holds it on the hub once finished
	// (set by the status controller from the ApplicationSet: HeldForStep).
	StepHeld bool
	// Terminating is the delivery ID of the operation the hub Application shows, when its phase
	// is Terminating: argocd app terminate-op asked to stop it.
	Terminating string
}

// HubOf reads the requests of a hub Application.
func HubOf(app *unstructured.Unstructured) Hub {
	h := Hub{}
	h.Refresh, _ = argocd.Annotation(app, argocd.RefreshAnnotation)
	h.RefreshCleared, _ = argocd.Annotation(app, api.RefreshDeliveredAnnotation)
	if op, ok := app.Object["operation"].(map[string]any); ok {
		h.Operation = op
	}
	if !comparedAnotherSource(app) {
		h.ComparedRevision, _, _ = unstructured.NestedString(app.Object, "status", "sync", "revision")
	}
	phase, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "phase")
	// Read in place: the predicate that wakes the propagation controller calls HubOf on every
	// update of every Application (controller/predicates.go), and only an ID is read.
	if v, ok, _ := unstructured.NestedFieldNoCopy(app.Object, "status", "operationState", "operation"); ok {
		op, _ := v.(map[string]any)
		switch {
		case Finished(phase):
			h.SyncCleared = DeliveryID(op)
		case phase == PhaseTerminating:
			h.Terminating = DeliveryID(op)
		}
	}
	return h
}

// PlanDeliveries decides which requests the payload carries, given the hub Application, what the
// work carried so far and what the managed cluster reported. newID returns a fresh delivery ID.
func PlanDeliveries(hub Hub, carried Deliveries, reported Reported, newID func() string) Deliveries {
	var next Deliveries
	next.Sync, next.Operation = planSync(hub, carried, reported, newID)
	next.Sync = planTerminate(hub, next.Sync, reported)
	next.Refresh = planRefresh(hub, carried.Refresh, reported, newID)
	return next
}

func planSync(hub Hub, carried Deliveries, reported Reported, newID func() string) (*Delivery, map[string]any) {
	d := carried.Sync
	running := reported.syncRunning(d) && carried.Operation != nil
	if hub.Operation == nil {
		if running {
			// Removed from the hub while running: withdrawing it from the managed cluster would
			// leave the operation Running for good. Keep it until it finishes.
			return d, carried.Operation
		}
		return nil, nil
	}
	hash := ContentHash(withoutDeliveryInfo(hub.Operation))
	switch {
	case d == nil:
	case d.Hash != hash:
		// A newer request. Argo CD would drop it when the running one finishes: hold it until then.
		if running {
			return d, carried.Operation
		}
	case hub.SyncCleared == d.ID:
		// The hub cleared the delivery and the same request was set again: a new one.
	case reported.syncLost(d):
	default:
		return d, nil
	}
	return &Delivery{ID: newID(), Hash: hash, Revision: pinnedRevision(hub)}, nil
}

// planTerminate marks the sync request d to be terminated when the hub asks for it: argocd app
// terminate-op sets status.operationState.phase Terminating on the hub Application, on the
// operation the hub shows (which names its delivery), and the managed cluster still runs it. The
// payload then sets the same phase on the managed Application, which is how Argo CD's own API
// server asks its controller to stop an operation.
//
// Argo CD's controller writes the whole operation state when it has worked on a running operation:
// a phase set meanwhile is lost (its API server's Terminating is too, now and then). The work agent
// applies a manifest once, so an attempt the managed cluster reports applied (its number read back
// in the same read as the phase) while the phase reads Running again was lost, and the next
// attempt changes the manifest; at most MaxTerminateAttempts.
//
// The mark stays with the request until the request leaves the payload. The work agent applies
// the whole manifest whenever it changes: a phase set on an operation that has finished, with no
// .operation beside it, would make Argo CD terminate the next operation it starts. Carried with
// .operation, a terminate applied again can only terminate that very request again, which Argo
// CD ends Failed and clears.
func planTerminate(hub Hub, d *Delivery, reported Reported) *Delivery {
	if d == nil || !reported.syncRunning(d) {
		return d
	}
	attempt := 0
	switch {
	case d.Terminate == 0 && hub.Terminating == d.ID:
		attempt = 1
	case d.Terminate > 0 && d.Terminate < MaxTerminateAttempts && reported.terminateLost(d.Terminate):
		attempt = d.Terminate + 1
	default:
		return d
	}
	marked := *d
	marked.Terminate = attempt
	return &marked
}

// MaxTerminateAttempts bounds the attempts to terminate one operation (see planTerminate).
const MaxTerminateAttempts = 5

// terminateLost: the managed cluster applied the attempt, and its operation reads Running again.
func (r Reported) terminateLost(attempt int) bool {
	return r.TerminateDelivered == strconv.Itoa(attempt) && r.Phase == "Running"
}

// RollingSyncUser is who the ApplicationSet controller's RollingSync requests are initiated by.
const RollingSyncUser = "applicationset-controller"

// RolledOut says whether the hub's sync request is a RollingSync step's, made by the
// ApplicationSet controller.
func RolledOut(hub Hub) bool {
	initiator, _, _ := unstructured.NestedString(hub.Operation, "initiatedBy", "username")
	return initiator == RollingSyncUser
}

// comparedAnotherSource: the hub Application's status.sync.comparedTo.source differs from its
// spec.source in a field Argo CD records there. False when no comparison is recorded (a
// multi-source Application records sources instead). Read in place, as HubOf is.
func comparedAnotherSource(app *unstructured.Unstructured) bool {
	v, _, _ := unstructured.NestedFieldNoCopy(app.Object, "status", "sync", "comparedTo", "source")
	compared, _ := v.(map[string]any)
	if compared == nil {
		return false
	}
	v, _, _ = unstructured.NestedFieldNoCopy(app.Object, "spec", "source")
	spec, _ := v.(map[string]any)
	for _, field := range []string{"repoURL", "targetRevision", "path", "chart"} {
		if stringField(compared, field) != stringField(spec, field) {
			return true
		}
	}
	return false
}

func stringField(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// pinnedRevision is the revision a RollingSync step's sync request is pinned to: the one the hub
// showed (status.sync.revision: what the cluster reported, or the revision its fleet went ahead
// to) when the request came. The ApplicationSet controller
// asks for "the latest" (no revision), decides on a snapshot of the Application and sometimes
// requests a step's sync a second time; unpinned, a late second request would sync a commit made
// since, in a step the rollout has not reached. Other requests (argocd app sync) are not pinned,
// nor one whose Application's source changed since its cluster compared it (Hub.ComparedRevision
// is ""): pinned to a revision of the old source, the cluster would sync that commit under the new
// source, and report it OutOfSync and Healthy.
func pinnedRevision(hub Hub) string {
	revision, _, _ := unstructured.NestedString(hub.Operation, "sync", "revision")
	revisions, _, _ := unstructured.NestedSlice(hub.Operation, "sync", "revisions")
	if !RolledOut(hub) || revision != "" || len(revisions) > 0 {
		return ""
	}
	return hub.ComparedRevision
}

func planRefresh(hub Hub, d *Delivery, reported Reported, newID func() string) *Delivery {
	if hub.Refresh == "" {
		return nil
	}
	hash := ContentHash(hub.Refresh)
	if d != nil && d.Hash == hash && hub.RefreshCleared != d.ID {
		return d
	}
	return &Delivery{ID: newID(), Hash: hash}
}

// DeliveryID is the delivery ID in an operation's info, "" when none.
func DeliveryID(op map[string]any) string {
	infos, _ := op["info"].([]any)
	for _, i := range infos {
		if m, ok := i.(map[string]any); ok && m["name"] == api.DeliveryInfoName {
			v, _ := m["value"].(string)
			return v
		}
	}
	return ""
}

// WithDeliveryID returns a copy of op whose info names the delivery ID (and no other).
func WithDeliveryID(op map[string]any, id string) map[string]any {
	out := withoutDeliveryInfo(op)
	infos, _ := out["info"].([]any)
	out["info"] = append(infos, map[string]any{"name": api.DeliveryInfoName, "value": id})
	return out
}

// withoutDeliveryInfo returns a copy of op without argocd-pull's info entry.
func withoutDeliveryInfo(op map[string]any) map[string]any {
	if op == nil {
		return map[string]any{}
	}
	out := runtime.DeepCopyJSON(op)
	infos, _ := out["info"].([]any)
	if infos == nil {
		return out
	}
	kept := make([]any, 0, len(infos))
	for _, i := range infos {
		if m, ok := i.(map[string]any); ok && m["name"] == api.DeliveryInfoName {
			continue
		}
		kept = append(kept, i)
	}
	if len(kept) == 0 {
		delete(out, "info")
	} else {
		out["info"] = kept
	}
	return out
}

func ContentHash(v any) string {
	raw, _ := json.Marshal(v)
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:8])
}

// NewDeliveryID returns a random delivery ID.
func NewDeliveryID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
