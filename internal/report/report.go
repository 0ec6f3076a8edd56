// Package report builds, without side effects, the MulticlusterApplicationSetReport of one
// ApplicationSet from what the hub holds: its pull-model Applications, their ManifestWorks and
// the ManagedClusters.
package report

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
	"github.com/argocd-pull/argocd-pull/internal/appstatus"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

// Condition types the report adds to the spoke's own (SyncError, ComparisonError, ...).
const (
	// ConditionStale says the cluster stopped reporting, and since when.
	ConditionStale = "StaleStatus"
	// ConditionNotPropagated carries the reason the hub could not deliver the Application.
	ConditionNotPropagated = "PropagationError"
	// ConditionPaused says the cluster's delivery is paused, by what and why.
	ConditionPaused = "Paused"
	// ConditionSyncError carries the message of a failed sync operation.
	ConditionSyncError = "SyncError"
	// ConditionFeedbackTrimmed says what of the cluster's feedback was cut to argocd-pull's caps
	// or ignored because it does not parse.
	ConditionFeedbackTrimmed = "FeedbackTrimmed"
)

// Caps on the lists a cluster reports as raw JSON, which only the report reads (the values copied
// to hub Applications have theirs in appstatus). A work agent may write them as Strings, which the
// ManifestWork CRD does not bound.
const (
	// MaxResourcesPerCluster caps the resources read from one Application's .status.resources.
	// Argo CD lists every resource it manages: hundreds for a large Application, a few thousand
	// for the largest. The report lists at most maxResources, de-duplicated across clusters.
	MaxResourcesPerCluster = 2000
	// MaxNameLength caps each field of a resource (group, version, kind, namespace, name):
	// Kubernetes names are at most 253 characters (DNS subdomain), so a resource with a longer
	// field cannot exist, and is not listed.
	MaxNameLength = 253
)

// Member is one cluster's Application of the ApplicationSet, as the hub holds it.
type Member struct {
	Cluster string
	// AppNamespace and AppName name the hub Application.
	AppNamespace, AppName string
	// WorkName is the name of the Application's ManifestWork in the cluster's namespace.
	WorkName string
	// Work is the ManifestWork, nil when it does not exist (yet).
	Work *workv1.ManifestWork
	// WorkWrittenAt is when the hub last wrote the work, zero if unknown.
	WorkWrittenAt time.Time
	// ManagedCluster is nil when the cluster does not exist on the hub.
	ManagedCluster *clusterv1.ManagedCluster
	// Wanted is the single source the hub Application wants, nil for multi-source Applications.
	Wanted *appstatus.Source
	// PropagationError is the hub Application's propagation error, if any.
	PropagationError string
	// Paused says why the hub Application's delivery is paused, "" when it is not.
	Paused string
	// SyncCleared is the delivery ID of the sync request the hub Application cleared last (see
	// manifestwork.Hub): the work may still carry it, finished.
	SyncCleared string
	// Searched is true when OCM Search answered about this Application; SearchResources and
	// SearchConditions are its answer. They fill in what ManifestWork feedback lacks.
	Searched         bool
	SearchResources  []v1alpha1.ResourceRef
	SearchConditions []v1alpha1.Condition
}

// DefaultStaleAfter is how long a cluster may leave its work unapplied, by default, before what it
// reported is said stale (flag --stale-after).
const DefaultStaleAfter = 5 * time.Minute

// Options tune the report. Zero values take the defaults.
type Options struct {
	// Now is the time staleness is judged at.
	Now time.Time
	// StaleAfter is how long a cluster may leave the current work unapplied before its status is
	// shown as stale. Default 5 minutes.
	StaleAfter time.Duration
	// MessageLimit cuts condition messages. Default 512 characters.
	MessageLimit int
	// MaxConditions bounds the conditions of one cluster. Default 5.
	MaxConditions int
	// SizeBudget bounds the encoded statuses, in bytes. Default 768 KiB: half of etcd's default
	// request limit (1.5 MiB; the apiserver's own limit on a request body, 3 MiB, is higher),
	// leaving room for the report's metadata (a label, an owner reference, managedFields of atomic
	// lists: a few KiB) and the apiserver's own overhead. At least minSizeBudget.
	SizeBudget int
}

func (o Options) withDefaults() Options {
	if o.StaleAfter == 0 {
		o.StaleAfter = DefaultStaleAfter
	}
	if o.MessageLimit == 0 {
		o.MessageLimit = 512
	}
	if o.MaxConditions == 0 {
		o.MaxConditions = 5
	}
	if o.SizeBudget == 0 {
		o.SizeBudget = 768 * 1024
	}
	o.SizeBudget = max(o.SizeBudget, minSizeBudget)
	return o
}

// Build returns the report's statuses, and the time at which it must be rebuilt even if nothing
// changes (the earliest moment a cluster turns stale); zero when there is none. It is a Tracker's
// report of the members, each Put once at opts.Now; members are keyed by their Application.
func Build(members []Member, opts Options) (v1alpha1.AppConditions, time.Time) {
	t := NewTracker(opts)
	for _, m := range members {
		t.Put(m, opts.Now)
	}
	return t.Report()
}

// noResourceFeedNote says how many clusters returned no resource list.
func noResourceFeedNote(unfed, members int) string {
	return fmt.Sprintf("resources unknown for %d of %d clusters: their work agent returned no .status.resources "+
		"(it needs the RawFeedbackJsonString feature gate, and the list must fit in its --max-json-raw-length)", unfed, members)
}

// trimmedNoteClusters is how many clusters the note on cut feedback names; their conditions say
// the rest.
const trimmedNoteClusters = 3

// trimmedNote says whose feedback was cut or ignored, in a bounded note.
func trimmedNote(trimmed map[string][]string, members int) string {
	clusters := slices.Sorted(maps.Keys(trimmed))
	named := make([]string, 0, trimmedNoteClusters+1)
	for i, c := range clusters {
		if i == trimmedNoteClusters {
			named = append(named, fmt.Sprintf("%d more", len(clusters)-i))
			break
		}
		named = append(named, appstatus.Truncate(c+": "+strings.Join(trimmed[c], "; "), 256))
	}
	return fmt.Sprintf("feedback of %d of %d clusters cut or ignored, over argocd-pull's caps or not parsing (see their %s condition): %s",
		len(clusters), members, ConditionFeedbackTrimmed, strings.Join(named, "; "))
}

// member builds one cluster's entry. fed is false when the cluster reported but returned no
// resource list; trimmed says what of its feedback was cut or ignored.
func member(m Member, opts Options) (cc v1alpha1.ClusterCondition, recheck time.Time, resources []v1alpha1.ResourceRef, fed bool, trimmed []string) {
	cc = v1alpha1.ClusterCondition{
		Cluster:      m.Cluster,
		App:          strings.Join([]string{m.AppNamespace, m.AppName, m.Cluster, m.WorkName}, "/"),
		SyncStatus:   argocd.SyncUnknown,
		HealthStatus: argocd.HealthUnknown,
	}
	var conditions []v1alpha1.Condition
	if m.PropagationError != "" {
		conditions = append(conditions, v1alpha1.Condition{Type: ConditionNotPropagated, Message: m.PropagationError})
	}
	fed = true
	if m.Work != nil {
		obs := appstatus.Observe(m.Work)
		obs.Carried = obs.Carried.Outstanding(manifestwork.Hub{SyncCleared: m.SyncCleared})
		st := appstatus.Derive(obs, m.Wanted)
		cc.SyncStatus, cc.HealthStatus, cc.SyncRevision = st.Sync, st.Health, st.Revision
		if st.Operation != nil {
			cc.OperationStatePhase, cc.OperationStateStartedAt = st.Operation.Phase, st.Operation.StartedAt
			if failingOperation(st.Operation.Phase, st.Operation.Message) {
				conditions = append(conditions, v1alpha1.Condition{Type: ConditionSyncError, Message: st.Operation.Message})
			}
		}
		spoke, conditionsCut := spokeConditions(obs.RawConditions)
		var resourcesCut []string
		resources, resourcesCut = deployed(obs.RawResources)
		trimmed = slices.Concat(obs.Trimmed, conditionsCut, resourcesCut)
		if len(trimmed) > 0 {
			conditions = append(conditions, v1alpha1.Condition{Type: ConditionFeedbackTrimmed, Message: strings.Join(trimmed, "; ")})
		}
		conditions = append(conditions, spoke...)
		fed = !obs.Reported || obs.RawResources != "" || m.Searched

		var stale string
		stale, recheck = Staleness(m.Cluster, m.ManagedCluster, obs.Applied, m.WorkWrittenAt, opts.StaleAfter, opts.Now)
		if stale != "" {
			cc.SyncStatus, cc.HealthStatus = argocd.SyncUnknown, argocd.HealthUnknown
			conditions = append([]v1alpha1.Condition{{Type: ConditionStale, Message: stale}}, conditions...)
		}
	}
	if m.Searched {
		if len(resources) == 0 {
			resources = m.SearchResources
		}
		conditions = mergeConditions(conditions, m.SearchConditions)
	}
	if m.ManagedCluster == nil {
		cc.SyncStatus, cc.HealthStatus = argocd.SyncUnknown, argocd.HealthUnknown
		conditions = append([]v1alpha1.Condition{{Type: ConditionStale, Message: "ManagedCluster " + m.Cluster + " does not exist on the hub"}}, conditions...)
	}
	if cc.SyncStatus != argocd.SyncSynced || cc.HealthStatus != argocd.HealthHealthy {
		cc.Conditions = capConditions(conditions, opts)
	}
	if m.Paused != "" {
		// Said whatever the cluster's state: what the hub changes does not reach it.
		cc.Conditions = capConditions(append([]v1alpha1.Condition{{Type: ConditionPaused, Message: m.Paused}}, cc.Conditions...), opts)
	}
	return cc, recheck, resources, fed, trimmed
}

// failingOperation: the operation failed, or it keeps running because Argo CD retries a failed
// attempt. Argo CD 3.x says "<error>. Retrying attempt #2 at 2:52AM."; 2.x put it first.
func failingOperation(phase, message string) bool {
	if message == "" {
		return false
	}
	return phase == "Failed" || phase == "Error" || phase == "Running" && strings.Contains(message, "Retrying attempt #")
}

// Staleness says why what cluster reports for an Application is not current ("" when it is), or
// when to look again (zero when there is nothing to wait for): its ManagedCluster (nil when not on
// the hub) is not available, or its work agent has not applied the work written at writtenAt
// (zero when unknown) for staleAfter; applied says whether it applied the work's current
// generation. The report and the hub Application say it alike.
func Staleness(cluster string, mc *clusterv1.ManagedCluster, applied bool, writtenAt time.Time, staleAfter time.Duration, now time.Time) (reason string, recheck time.Time) {
	if mc != nil {
		if c := meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable); c != nil && c.Status != metav1.ConditionTrue {
			return fmt.Sprintf("no status from %s since %s: the ManagedCluster is not available (%s)", cluster, c.LastTransitionTime.UTC().Format(time.RFC3339), c.Reason), time.Time{}
		}
	}
	if applied || writtenAt.IsZero() {
		return "", time.Time{}
	}
	deadline := writtenAt.Add(staleAfter)
	if now.Before(deadline) {
		return "", deadline
	}
	return fmt.Sprintf("no status from %s since %s: its work agent has not applied the ManifestWork written then", cluster, writtenAt.UTC().Format(time.RFC3339)), time.Time{}
}

// mergeConditions adds the extra conditions whose type is not there yet.
func mergeConditions(conditions, extra []v1alpha1.Condition) []v1alpha1.Condition {
	have := map[string]bool{}
	for _, c := range conditions {
		have[c.Type] = true
	}
	for _, c := range extra {
		if !have[c.Type] {
			conditions = append(conditions, c)
			have[c.Type] = true
		}
	}
	return conditions
}

// spokeConditions reads the spoke Application's .status.conditions from raw feedback, with types
// cut to appstatus.MaxWordLength (Argo CD's longest has 23 characters); messages and their number
// are cut with the report's own (see capConditions).
func spokeConditions(raw string) (out []v1alpha1.Condition, trimmed []string) {
	if raw == "" {
		return nil, nil
	}
	var list []struct{ Type, Message string }
	if json.Unmarshal([]byte(raw), &list) != nil {
		return nil, []string{fmt.Sprintf("conditions ignored: not a JSON list (%d bytes)", len(raw))}
	}
	out = make([]v1alpha1.Condition, 0, len(list))
	cut := 0
	for _, c := range list {
		typ, wasCut := appstatus.Cut(c.Type, appstatus.MaxWordLength)
		if wasCut {
			cut++
		}
		out = append(out, v1alpha1.Condition{Type: typ, Message: c.Message})
	}
	if cut > 0 {
		trimmed = append(trimmed, fmt.Sprintf("conditions: %d with a type over %d bytes cut", cut, appstatus.MaxWordLength))
	}
	return out, trimmed
}

// deployed reads the spoke Application's .status.resources from raw feedback and keeps the
// resources that exist on the cluster: synced ones, and ones whose health is known and not Missing.
// It reads at most MaxResourcesPerCluster, and skips those with a field over MaxNameLength.
func deployed(raw string) (out []v1alpha1.ResourceRef, trimmed []string) {
	if raw == "" {
		return nil, nil
	}
	var list []struct {
		Group, Version, Kind, Namespace, Name, Status string
		Health                                        *struct{ Status string }
	}
	if json.Unmarshal([]byte(raw), &list) != nil {
		return nil, []string{fmt.Sprintf("resources ignored: not a JSON list (%d bytes)", len(raw))}
	}
	if len(list) > MaxResourcesPerCluster {
		trimmed = append(trimmed, fmt.Sprintf("resources: the first %d of %d read", MaxResourcesPerCluster, len(list)))
		list = list[:MaxResourcesPerCluster]
	}
	tooLong := 0
	for _, r := range list {
		exists := r.Status == argocd.SyncSynced || r.Health != nil && r.Health.Status != "" && r.Health.Status != "Missing"
		if !exists {
			continue
		}
		if max(len(r.Group), len(r.Version), len(r.Kind), len(r.Namespace), len(r.Name)) > MaxNameLength {
			tooLong++
			continue
		}
		apiVersion := r.Version
		if r.Group != "" {
			apiVersion = r.Group + "/" + r.Version
		}
		out = append(out, v1alpha1.ResourceRef{APIVersion: apiVersion, Kind: r.Kind, Name: r.Name, Namespace: r.Namespace})
	}
	if tooLong > 0 {
		trimmed = append(trimmed, fmt.Sprintf("resources: %d with a field over %d bytes ignored", tooLong, MaxNameLength))
	}
	return out, trimmed
}

func capConditions(conditions []v1alpha1.Condition, opts Options) []v1alpha1.Condition {
	if len(conditions) == 0 {
		return nil
	}
	out := make([]v1alpha1.Condition, 0, min(len(conditions), opts.MaxConditions))
	for i, c := range conditions {
		if i == opts.MaxConditions-1 && len(conditions) > opts.MaxConditions {
			out = append(out, v1alpha1.Condition{Type: "More", Message: fmt.Sprintf("%d more conditions not shown", len(conditions)-i)})
			break
		}
		c.Message = appstatus.Truncate(c.Message, opts.MessageLimit)
		out = append(out, c)
	}
	return out
}

// Summarize counts clusters with the documents' rules: Healthy -> healthy; Progressing ->
// inProgress and notHealthy; anything else -> notHealthy; Synced -> synced; else notSynced.
func Summarize(clusters []v1alpha1.ClusterCondition) v1alpha1.ReportSummary {
	var c summaryCounts
	for _, cc := range clusters {
		c.add(cc, 1)
	}
	return c.summary()
}

func resourceKey(r v1alpha1.ResourceRef) string {
	return r.APIVersion + "/" + r.Kind + "/" + r.Namespace + "/" + r.Name
}
