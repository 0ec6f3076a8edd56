// Package appstatus derives, without side effects, the status of a hub Application from what the
// managed cluster reported through its ManifestWork.
//
// Status is honest for ApplicationSet progressive sync: the hub Application reads Synced and
// Healthy only when the managed cluster has applied the ManifestWork's current generation and its
// Argo CD compared the Application against the source the hub wants. Until then it reads OutOfSync
// and Progressing, so a RollingSync step never advances on the previous revision's health.
package appstatus

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

// Source is the part of an Application source Argo CD records in status.sync.comparedTo.
type Source struct {
	RepoURL, TargetRevision, Path, Chart string
}

// Observed is what the managed cluster reported for its Application.
type Observed struct {
	// Applied is true when the work agent applied the work's current generation: a work written
	// and not applied turns stale (see report.staleness).
	Applied bool
	// ContentApplied is true when it applied the current generation, or one that differs from it
	// by requests alone (manifestwork.ContentApplied): what the status is derived from, so that a
	// request in flight changes nothing in it until the managed cluster answers.
	ContentApplied bool
	// Seen is true when the work agent ever acted on the work (any Applied condition) and its
	// Application is there.
	Seen bool
	// Reported is true when any feedback value arrived.
	Reported bool
	// Foreign is true when the managed cluster's Application of that name is not the hub's
	// (manifestwork.ClaimForeign): nothing else is read of it.
	Foreign bool

	Health, Sync, Revision                string
	Phase, StartedAt, FinishedAt, Message string
	// SyncedRevision is the revision the last operation synced (its syncResult): a rollback's or
	// a sync --revision's, which the Application's sync.revision (compared with the source's
	// target) is not.
	SyncedRevision string
	ReconciledAt   string
	Operation      map[string]any
	ComparedTo     *Source
	// RawResources and RawConditions are lists (JSON) the report reads, with its own caps.
	RawResources, RawConditions string
	// Resources is status.resources as copied to the hub, and ResourcesTrimmed what that copy cut
	// (see hubResources).
	Resources        []any
	ResourcesTrimmed []string
	// History is status.history as copied to the hub (see hubHistory), Summary status.summary
	// (hubSummary), HubComparedTo the compared source (hubComparedTo) and SourceType
	// status.sourceType; what these copies cut is in Trimmed.
	History       []any
	Summary       map[string]any
	HubComparedTo *Source
	SourceType    string
	// MultiSource is what a multi-source Application reports in lists (see multisource.go), and
	// SyncResources the last sync's per-resource results; cut to their caps.
	MultiSource   multiSource
	SyncResources []any
	// Delivery is what it reported about the sync and refresh requests the hub sent, and
	// Carried what the work carries (see manifestwork.PlanDeliveries).
	Delivery manifestwork.Reported
	Carried  manifestwork.Deliveries
	// HubSynced is true when the hub Application already shows the sync status derived from this
	// observation (see manifestwork.Clears).
	HubSynced bool
	// StepHeld is true while the request's RollingSync step holds it on the hub once finished
	// (manifestwork.HeldForStep): the hub shows it still running, and the health its cluster
	// reports after it.
	StepHeld bool
	// HubTerminating is true when the hub Application asks to terminate the operation the managed
	// cluster runs (manifestwork.Hub.Terminating names its delivery).
	HubTerminating bool
	// Behind is true when another cluster of its RollingSync ApplicationSet has seen a revision
	// of the same source that this cluster has not compared against (see Member and
	// RollingSets.Decide), and AheadRevision is that revision.
	Behind        bool
	AheadRevision string
	// Stale says why what the cluster reports is not current, "" when it is (set by the caller: the
	// cluster's availability and the time the work was written, see report.Staleness).
	Stale string
	// Trimmed says, one phrase per value, what Observe cut to its cap or ignored (see caps.go).
	Trimmed []string
}

// Observe reads the Application's feedback from its ManifestWork. Values copied to the hub are cut
// to their caps (see caps.go); values only compared with what the hub holds (comparedTo, the
// delivery of requests) are read as reported: cutting them could only make a comparison wrong.
func Observe(work *workv1.ManifestWork) Observed {
	obs, r := observeSync(work)
	obs.Carried = manifestwork.ParseDeliveries(work.Annotations[api.DeliveriesAnnotation])
	if r == nil {
		return obs
	}
	obs.Phase = r.capped(manifestwork.FeedbackPhase, MaxWordLength)
	obs.StartedAt = r.capped(manifestwork.FeedbackStartedAt, MaxTimeLength)
	obs.FinishedAt = r.capped(manifestwork.FeedbackFinishedAt, MaxTimeLength)
	obs.Message = r.capped(manifestwork.FeedbackMessage, MaxMessageLength)
	obs.SyncedRevision = r.capped(manifestwork.FeedbackSyncResultRevision, MaxRevisionLength)
	obs.ReconciledAt = r.raw(manifestwork.FeedbackReconciledAt)
	obs.RawResources = r.raw(manifestwork.FeedbackResources)
	obs.Resources, obs.ResourcesTrimmed = hubResources(obs.RawResources)
	obs.RawConditions = r.raw(manifestwork.FeedbackConditions)
	var historyTrimmed, summaryTrimmed []string
	obs.History, historyTrimmed = hubHistory(r.values)
	obs.Summary, summaryTrimmed = hubSummary(r.raw(manifestwork.FeedbackImages), r.raw(manifestwork.FeedbackExternalURLs))
	r.trimmed = append(append(r.trimmed, historyTrimmed...), summaryTrimmed...)
	obs.SourceType = r.capped(manifestwork.FeedbackSourceType, MaxWordLength)
	obs.MultiSource = r.observeMultiSource()
	obs.SyncResources = r.syncResources()
	obs.Delivery = manifestwork.Reported{
		SyncDelivered:      r.raw(manifestwork.FeedbackSyncDelivered),
		SyncHeld:           r.raw(manifestwork.FeedbackSyncHeld),
		SyncStarted:        r.capped(manifestwork.FeedbackSyncStarted, MaxWordLength), // copied into the operation
		Phase:              obs.Phase,
		RefreshDelivered:   r.raw(manifestwork.FeedbackRefreshDelivered),
		RefreshPending:     r.raw(manifestwork.FeedbackRefreshPending) != "",
		TerminateDelivered: r.raw(manifestwork.FeedbackTerminateDelivered),
		FinishedAt:         obs.FinishedAt,
		ReconciledAt:       obs.ReconciledAt,
		SyncStatus:         obs.Sync,
		Revision:           obs.Revision,
	}
	obs.Operation = r.operation(manifestwork.FeedbackOperation)
	compared := Source{
		RepoURL:        r.raw(manifestwork.FeedbackComparedRepoURL),
		TargetRevision: r.raw(manifestwork.FeedbackComparedRevision),
		Path:           r.raw(manifestwork.FeedbackComparedPath),
		Chart:          r.raw(manifestwork.FeedbackComparedChart),
	}
	if compared != (Source{}) {
		obs.ComparedTo = &compared
		obs.HubComparedTo = r.hubComparedTo(obs.ComparedTo)
	}
	obs.Trimmed = r.trimmed
	return obs
}

// feedbackValues returns the feedback values of the Application manifest in the work, whether
// the agent wrote them as String or JsonRaw.
func feedbackValues(work *workv1.ManifestWork) map[string]string {
	for _, m := range work.Status.ResourceStatus.Manifests {
		if m.ResourceMeta.Group != argocd.Group || m.ResourceMeta.Kind != argocd.ApplicationGVK.Kind {
			continue
		}
		return manifestwork.FeedbackText(m.StatusFeedbacks.Values)
	}
	return nil
}

// WantedSource is the single source of a hub Application, or nil for multi-source Applications
// (Derive does not yet compare their comparedTo.sources, which the hub now carries).
func WantedSource(app *unstructured.Unstructured) *Source {
	src, ok, _ := unstructured.NestedMap(app.Object, "spec", "source")
	if !ok {
		return nil
	}
	s := func(k string) string { v, _ := src[k].(string); return v }
	return &Source{RepoURL: s("repoURL"), TargetRevision: s("targetRevision"), Path: s("path"), Chart: s("chart")}
}

// Status is what argocd-pull writes into the hub Application's status.
type Status struct {
	Health, Sync, Revision string
	// Operation is nil when the managed cluster reported no operation.
	Operation *OperationState
	// ReconciledAt, when set, is written (see ReconciledAt); otherwise the hub's is kept.
	ReconciledAt string
	// Resources is the managed cluster's status.resources, cut to its cap; nil writes none.
	Resources []any
	// History is the managed cluster's status.history, cut to its caps; nil writes none. So are
	// Summary (status.summary), ComparedTo (the source of status.sync.comparedTo, whose
	// destination is the hub Application's: the managed cluster compared against its local
	// equivalent) and SourceType.
	History    []any
	Summary    map[string]any
	ComparedTo *Source
	SourceType string
	// MultiSource is a multi-source Application's lists: status.sync.revisions,
	// status.sync.comparedTo.sources and status.sourceTypes here, the synced revisions and sources
	// in the finished operation's syncResult.
	MultiSource multiSource
	// Warnings say what of the managed cluster's feedback was cut or ignored (Observed.Trimmed).
	Warnings []string
	// Stale, when not "", is the StaleCondition's message (Observed.Stale).
	Stale string
	// LacksCredential, when not "", is the CredentialWarningCondition's message: the repository
	// credentials the Application would use that do not reach its cluster for it.
	LacksCredential string
}

// OperationState is the last sync operation on the managed cluster.
type OperationState struct {
	Operation                             map[string]any
	Phase, StartedAt, FinishedAt, Message string
	// SyncedRevision is the revision it synced, "" when the cluster reported none.
	SyncedRevision string
	// Resources is its per-resource results (syncResult.resources), nil when none reported.
	Resources []any
}

// Derive decides the hub Application's status from the observation and the source the hub wants.
func Derive(obs Observed, wanted *Source) Status {
	st := Status{Health: obs.Health, Sync: obs.Sync, Revision: obs.Revision, Warnings: append(slices.Clip(obs.Trimmed), obs.ResourcesTrimmed...), Resources: obs.Resources, History: obs.History,
		Summary: obs.Summary, ComparedTo: obs.HubComparedTo, SourceType: obs.SourceType, MultiSource: obs.MultiSource}
	if obs.Stale != "" {
		// The health and sync status stay the last the cluster reported (a RollingSync step whose
		// cluster is cut off reads its new revision not applied, and waits), and say so.
		st.Stale = obs.Stale + "; the health and sync status shown are the last it reported"
	}
	switch {
	case obs.Foreign:
		// What it reports is about another Application (see manifestwork.ClaimOf).
		st.Health, st.Sync = argocd.HealthUnknown, argocd.SyncUnknown
	case !obs.Seen && !obs.Reported:
		// The managed cluster has not reported anything yet.
		st.Health, st.Sync = argocd.HealthUnknown, argocd.SyncUnknown
	case !obs.ContentApplied:
		// The managed cluster has not applied what the hub wants yet.
		st.Health, st.Sync = argocd.HealthProgressing, argocd.SyncOutOfSync
	case !obs.Reported || obs.Health == "" || obs.Sync == "":
		st.Health, st.Sync = argocd.HealthUnknown, argocd.SyncUnknown
	case wanted != nil && obs.ComparedTo != nil && *obs.ComparedTo != *wanted:
		// Its Argo CD has not compared against the wanted source: what it says is about the old one.
		st.Health, st.Sync = argocd.HealthProgressing, argocd.SyncOutOfSync
	case manifestwork.InFlight(obs.Carried, obs.Delivery, obs.HubSynced, obs.StepHeld) && !obs.StepHeld && st.Health == argocd.HealthHealthy && st.Sync == argocd.SyncSynced:
		// A requested sync has not finished there: its health is about what ran before, and a
		// RollingSync step must not advance on it (the ApplicationSet controller counts an
		// Application done when it reads Healthy and Synced; one that reads OutOfSync it does not,
		// so its health is shown as its cluster reports it, without a write of its own).
		st.Health = argocd.HealthProgressing
	}
	if obs.Behind && st.Sync == argocd.SyncSynced {
		// Synced to a revision older than one its fleet sees: a RollingSync step must not count it
		// done (its managed Argo CD finds the new revision on its next refresh). It reads OutOfSync
		// at the revision its fleet went ahead to, which its own Argo CD will report: the
		// ApplicationSet controller of Argo CD 3.4 and later sends an Application back to Waiting
		// only when its revision changes, not when it turns OutOfSync.
		st.Sync = argocd.SyncOutOfSync
		if obs.AheadRevision != "" {
			st.Revision = obs.AheadRevision
		}
	}
	if obs.Phase != "" && obs.StartedAt != "" {
		op := obs.Operation
		if op == nil {
			// The Application CRD requires an operation; the phase is what matters to readers.
			op = map[string]any{"sync": map[string]any{}}
		}
		if id := obs.Delivery.SyncStarted; id != "" && manifestwork.DeliveryID(op) != id {
			// The delivery ID tells the hub which request this operation ran (see propagation).
			op = manifestwork.WithDeliveryID(op, id)
		}
		st.Operation = &OperationState{Operation: op, Phase: obs.Phase, StartedAt: obs.StartedAt, FinishedAt: obs.FinishedAt, Message: obs.Message,
			SyncedRevision: obs.SyncedRevision, Resources: obs.SyncResources}
		if manifestwork.Unsettled(obs.Carried, obs.Delivery, obs.HubSynced, obs.StepHeld) {
			// Finished there, but its Argo CD has not compared since: the request is still in
			// flight for the hub, which shows it finished in the write that clears it.
			st.Operation.Phase, st.Operation.FinishedAt = "Running", ""
		}
		if obs.HubTerminating && !manifestwork.Finished(st.Operation.Phase) {
			// argocd app terminate-op asked; the request travels (see propagation.planTerminate):
			// the hub keeps showing it until the managed cluster reports the operation finished.
			st.Operation.Phase = manifestwork.PhaseTerminating
		}
	}
	return st
}

// Settled is true when the managed cluster reports its Application as it is, with nothing of
// argocd-pull's own rules (Derive) overriding it: the work applied, health and sync reported, and
// nothing in flight. A work that adopts an Application from an upstream controller
// (manifestwork.Adopting) writes the hub status only once settled: until then the hub Application
// keeps what the upstream controller last wrote, and its status never goes backwards.
func Settled(obs Observed, wanted *Source) bool {
	d := Derive(obs, wanted)
	return obs.ContentApplied && obs.Reported && obs.Health != "" && obs.Sync != "" && d.Health == obs.Health && d.Sync == obs.Sync
}

// ReconciledAt is the hub Application's status.reconciledAt, written in the status write that
// clears a request the managed cluster finished (and carried by the other writes while a request
// is, NewerReconciledAt; never at rest: its Argo CD rewrites its own on every periodic
// comparison, and a work at rest does not ask for it): when that Argo CD compared the
// Application, and never before the operation the hub shows finished, which is what argocd app
// sync and argocd app wait wait for (reconciledAt >= operationState.finishedAt). "" when the cluster reported neither as a time.
func ReconciledAt(obs Observed) string {
	reconciled, errR := time.Parse(time.RFC3339, obs.ReconciledAt)
	finished, errF := time.Parse(time.RFC3339, obs.FinishedAt)
	switch {
	case errR != nil && errF != nil:
		return ""
	case errR != nil || errF == nil && finished.After(reconciled):
		reconciled = finished
	}
	return reconciled.UTC().Format(time.RFC3339)
}

// NewerReconciledAt is the time the managed cluster last compared the Application, as it reported
// it (only while its work carries a request: feedbackRules), when that is later than the hub
// Application's status.reconciledAt; "" otherwise. It never moves the hub's back.
func NewerReconciledAt(app *unstructured.Unstructured, obs Observed) string {
	reported, err := time.Parse(time.RFC3339, obs.ReconciledAt)
	if err != nil {
		return ""
	}
	hub, _, _ := unstructured.NestedString(app.Object, "status", "reconciledAt")
	if at, err := time.Parse(time.RFC3339, hub); err == nil && !reported.After(at) {
		return ""
	}
	return reported.UTC().Format(time.RFC3339)
}

// ComparedSinceStart says whether at, when the managed cluster last compared the Application
// (NewerReconciledAt), is worth a status write of its own: the operation st shows is running, at
// is not before its start, and the hub's reconciledAt is. Argo CD 3.5's RollingSync moves a step's
// Application from Pending only once its reconciledAt is after the step began, and asks one still
// Pending to sync again once its sync finished and the request was cleared: a second sync on the
// cluster. Argo CD writes the sync's start and the comparison it requests in two writes, so the
// work's status often shows the first without the second. At most once per sync: the next finds
// the hub's reconciledAt not before the start.
func ComparedSinceStart(app *unstructured.Unstructured, st Status, at string) bool {
	if st.Operation == nil || st.Operation.Phase == "" || manifestwork.Finished(st.Operation.Phase) {
		return false
	}
	started, err := time.Parse(time.RFC3339, st.Operation.StartedAt)
	if err != nil {
		return false
	}
	compared, err := time.Parse(time.RFC3339, at)
	if err != nil || compared.Before(started) {
		return false
	}
	hub, _, _ := unstructured.NestedString(app.Object, "status", "reconciledAt")
	hubAt, err := time.Parse(time.RFC3339, hub)
	return err != nil || hubAt.Before(started)
}

// Unanswered is true when the managed cluster has not answered for its Application yet and the hub
// Application shows no status from an earlier answer: no status already reads as unknown, and
// writing Unknown would cost one request per new Application of a rollout. An Application that
// shows an earlier answer (its work was recreated, or moved to another cluster) is reset.
func Unanswered(app *unstructured.Unstructured, obs Observed) bool {
	if obs.Seen || obs.Reported {
		return false
	}
	_, health, _ := unstructured.NestedFieldNoCopy(app.Object, "status", "health")
	_, sync, _ := unstructured.NestedFieldNoCopy(app.Object, "status", "sync")
	return !health && !sync
}

// ObserveSync reads only what a RollingSync sibling is compared by (MemberOf): whether
// the work's content is applied, and the health, sync status and revision its cluster reports,
// read as Observe reads them. The status controller reads every Application of a RollingSync
// ApplicationSet when it seeds its view (RollingSets.Seed).
func ObserveSync(work *workv1.ManifestWork) Observed {
	obs, _ := observeSync(work)
	return obs
}

// Answers tells whether a work's new feedback is what a rollout, or someone at the CLI, waits
// on: the operation's phase changed (a sync started or ended), the reported health changed, or
// the Application became Synced. The bulk a commit brings (every cluster OutOfSync at once, each
// work's new generation applied) is not: the status controller serves these answers first.
func Answers(oldWork, newWork *workv1.ManifestWork) bool {
	o, ro := observeSync(oldWork)
	n, rn := observeSync(newWork)
	if rn == nil || !n.Reported {
		return false
	}
	return rn.raw(manifestwork.FeedbackPhase) != ro.raw(manifestwork.FeedbackPhase) || n.Health != o.Health ||
		n.Sync == argocd.SyncSynced && o.Sync != argocd.SyncSynced
}

// observeSync is the start of Observe: the work's own state (but the requests it carries) and, once
// its cluster holds the hub's Application, the health, sync status and revision it reports, with the reader of the rest (nil
// when there is nothing to read).
func observeSync(work *workv1.ManifestWork) (Observed, *feedbackReader) {
	obs := Observed{
		Applied:        manifestwork.AppliedAtGeneration(work),
		ContentApplied: manifestwork.ContentApplied(work),
		Seen:           meta.FindStatusCondition(work.Status.Conditions, workv1.WorkApplied) != nil,
	}
	if claim := manifestwork.ClaimOf(work); claim != manifestwork.ClaimOurs {
		// Pending: nothing of the hub's there yet (not seen: no Unknown status is written for
		// it); what feedback there is, is another's.
		obs.Foreign = claim == manifestwork.ClaimForeign
		obs.Seen = obs.Foreign
		return obs, nil
	}
	if manifestwork.Absent(work) {
		// Held a moment ago, its Application not created yet, or deleted there since: what
		// feedback there is describes an Application that is not there.
		obs.Seen = false
		return obs, nil
	}
	values := feedbackValues(work)
	obs.Reported = len(values) > 0
	r := &feedbackReader{values: values}
	obs.Health = r.capped(manifestwork.FeedbackHealth, MaxWordLength)
	obs.Sync = r.capped(manifestwork.FeedbackSync, MaxWordLength)
	obs.Revision = r.revision(manifestwork.FeedbackRevision, manifestwork.FeedbackRevisions)
	return obs, r
}
