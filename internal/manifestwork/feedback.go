package manifestwork

import (
	"slices"
	"strconv"
	"strings"

	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
)

// Names of the status feedback values of the managed cluster's Application.
const (
	FeedbackHealth             = "healthStatus"
	FeedbackSync               = "syncStatus"
	FeedbackRevision           = "syncRevision"
	FeedbackPhase              = "operationStatePhase"
	FeedbackStartedAt          = "operationStateStartedAt"
	FeedbackFinishedAt         = "operationStateFinishedAt"
	FeedbackMessage            = "operationStateMessage"
	FeedbackOperation          = "operationStateOperation"
	FeedbackComparedRepoURL    = "comparedToRepoURL"
	FeedbackComparedRevision   = "comparedToTargetRevision"
	FeedbackComparedPath       = "comparedToPath"
	FeedbackComparedChart      = "comparedToChart"
	FeedbackResources          = "resources"
	FeedbackConditions         = "conditions"
	FeedbackReconciledAt       = "reconciledAt"
	FeedbackRevisions          = "syncRevisions"
	FeedbackSyncDelivered      = "syncDelivered"
	FeedbackSyncHeld           = "syncHeld"
	FeedbackSyncStarted        = "syncStarted"
	FeedbackRefreshDelivered   = "refreshDelivered"
	FeedbackRefreshPending     = "refreshPending"
	FeedbackTerminateDelivered = "terminateDelivered"
	FeedbackSourceType         = "sourceType"
	FeedbackSyncResultRevision = "syncResultRevision"
	FeedbackImages             = "summaryImages"
	FeedbackExternalURLs       = "summaryExternalURLs"
	// A multi-source Application's (spec.sources) status: lists, one entry per source.
	FeedbackSourceTypes         = "sourceTypes"
	FeedbackComparedSources     = "comparedToSources"
	FeedbackSyncResultRevisions = "syncResultRevisions"
	FeedbackSyncResultSources   = "syncResultSources"
	// The last sync's per-resource results (argocd app sync's table, the UI's sync panel).
	FeedbackSyncResultResources = "syncResultResources"
	// status.history, one column per field (see historyPaths).
	FeedbackHistoryIDs             = "historyIDs"
	FeedbackHistoryRevisions       = "historyRevisions"
	FeedbackHistoryDeployedAt      = "historyDeployedAt"
	FeedbackHistoryDeployStartedAt = "historyDeployStartedAt"
	FeedbackHistoryRepoURLs        = "historyRepoURLs"
	FeedbackHistoryPaths           = "historyPaths"
	FeedbackHistoryTargetRevisions = "historyTargetRevisions"
	FeedbackHistoryCharts          = "historyCharts"
	FeedbackHistoryInitiatedBy     = "historyInitiatedBy"
	// A multi-source Application's history: each entry's revisions, a list per entry (see
	// FeedbackHistorySource for its sources).
	FeedbackHistoryRevisionLists = "historyRevisionLists"
	operationJSONPath            = ".operation"
	refreshAnnotationJSONPath    = ".metadata.annotations['argocd.argoproj.io/refresh']"
)

// feedbackPaths maps feedback names to paths in the managed cluster's Application. The work agent
// returns scalars always, and lists and objects as raw JSON when its RawFeedbackJsonString
// feature gate is on.
var feedbackPaths = append([]workv1.JsonPath{
	{Name: FeedbackHealth, Path: ".status.health.status"},
	{Name: FeedbackSync, Path: ".status.sync.status"},
	{Name: FeedbackRevision, Path: ".status.sync.revision"},
	{Name: FeedbackRevisions, Path: ".status.sync.revisions"},
	{Name: FeedbackPhase, Path: ".status.operationState.phase"},
	{Name: FeedbackStartedAt, Path: ".status.operationState.startedAt"},
	{Name: FeedbackFinishedAt, Path: ".status.operationState.finishedAt"},
	{Name: FeedbackMessage, Path: ".status.operationState.message"},
	{Name: FeedbackOperation, Path: ".status.operationState.operation"},
	{Name: FeedbackSyncResultRevision, Path: ".status.operationState.syncResult.revision"},
	{Name: FeedbackComparedRepoURL, Path: ".status.sync.comparedTo.source.repoURL"},
	{Name: FeedbackComparedRevision, Path: ".status.sync.comparedTo.source.targetRevision"},
	{Name: FeedbackComparedPath, Path: ".status.sync.comparedTo.source.path"},
	{Name: FeedbackComparedChart, Path: ".status.sync.comparedTo.source.chart"},
	{Name: FeedbackResources, Path: ".status.resources"},
	{Name: FeedbackConditions, Path: ".status.conditions"},
	{Name: FeedbackSourceType, Path: ".status.sourceType"},
	{Name: FeedbackSyncResultResources, Path: ".status.operationState.syncResult.resources"},
	// A multi-source Application reports these instead of the single source's scalars above.
	{Name: FeedbackSourceTypes, Path: ".status.sourceTypes"},
	{Name: FeedbackComparedSources, Path: ".status.sync.comparedTo.sources"},
	{Name: FeedbackSyncResultRevisions, Path: ".status.operationState.syncResult.revisions"},
	{Name: FeedbackSyncResultSources, Path: ".status.operationState.syncResult.sources"},
	// Lists of strings; one entry arrives as that value, not as a list.
	{Name: FeedbackImages, Path: ".status.summary.images"},
	{Name: FeedbackExternalURLs, Path: ".status.summary.externalURLs"},
	// The delivery of sync and refresh requests (see delivery.go); scalars, so they work without
	// the agent's RawFeedbackJsonString feature gate.
	// (client-go's JSONPath does not match ['a.b/c'] keys: dots are escaped instead.)
	{Name: FeedbackSyncDelivered, Path: annotationPath(api.SyncDeliveryAnnotation)},
	{Name: FeedbackSyncHeld, Path: `.operation.info[?(@.name=="` + api.DeliveryInfoName + `")].value`},
	{Name: FeedbackSyncStarted, Path: `.status.operationState.operation.info[?(@.name=="` + api.DeliveryInfoName + `")].value`},
	{Name: FeedbackRefreshDelivered, Path: annotationPath(api.RefreshDeliveryAnnotation)},
	{Name: FeedbackRefreshPending, Path: annotationPath(argocd.RefreshAnnotation)},
	{Name: FeedbackTerminateDelivered, Path: annotationPath(api.TerminateDeliveryAnnotation)},
	// status.history (argocd app history and rollback), one column per field: the whole list is
	// over the work agent's 1024-byte cap on a value after three deployments, a column of ten
	// 40-character revisions is 430 bytes. A column with one entry arrives as that value, not
	// as a list; a field some entries lack makes a shorter column (appstatus drops it).
	{Name: FeedbackHistoryIDs, Path: ".status.history[*].id"},
	{Name: FeedbackHistoryRevisions, Path: ".status.history[*].revision"},
	{Name: FeedbackHistoryDeployedAt, Path: ".status.history[*].deployedAt"},
	{Name: FeedbackHistoryDeployStartedAt, Path: ".status.history[*].deployStartedAt"},
	{Name: FeedbackHistoryRepoURLs, Path: ".status.history[*].source.repoURL"},
	{Name: FeedbackHistoryPaths, Path: ".status.history[*].source.path"},
	{Name: FeedbackHistoryTargetRevisions, Path: ".status.history[*].source.targetRevision"},
	{Name: FeedbackHistoryCharts, Path: ".status.history[*].source.chart"},
	{Name: FeedbackHistoryInitiatedBy, Path: ".status.history[*].initiatedBy"},
	// A multi-source entry has revisions and sources instead of revision and source.
	{Name: FeedbackHistoryRevisionLists, Path: ".status.history[*].revisions"},
}, historySourcePaths()...)

// HistorySourceFields are the fields of a multi-source history entry's sources that are reported
// (the hub copies no more of a source).
var HistorySourceFields = []string{"repoURL", "path", "targetRevision", "chart", "ref", "name"}

// FeedbackHistorySources names the column of field of the sources of every multi-source history
// entry: the values of all entries' sources that have it, in order. (A column per source index
// would keep a field that only some sources have in line, but the work agent's JSONPath fails on
// an index past a list's end, and an entry may have fewer sources.)
func FeedbackHistorySources(field string) string {
	return "historySources." + field
}

func historySourcePaths() []workv1.JsonPath {
	paths := make([]workv1.JsonPath, 0, len(HistorySourceFields))
	for _, f := range HistorySourceFields {
		paths = append(paths, workv1.JsonPath{Name: FeedbackHistorySources(f), Path: ".status.history[*].sources[*]." + f})
	}
	return paths
}

// FeedbackJSONPaths are the paths of the managed cluster's Application that its work's feedback
// reads (the doctor checks that its Application CRD declares them).
func FeedbackJSONPaths() []string {
	rules := FeedbackRulePaths()
	paths := make([]string, 0, len(rules))
	for _, p := range rules {
		paths = append(paths, p.Path)
	}
	return paths
}

// FeedbackRulePaths are the feedback values a work with a request in flight asks of its
// Application, by name: every one there is (test agents compute feedback from them).
func FeedbackRulePaths() []workv1.JsonPath {
	return append(slices.Clone(feedbackPaths), reconciledAtPath)
}

// reconciledAtPath asks for the time the managed cluster's Argo CD last compared the Application
// with Git. Argo CD rewrites it on every periodic reconciliation (180 s by default) of every
// Application, so asking for it always would make each Application of a fleet at rest write its
// work's status to the hub every few minutes. It is read to tell a finished sync settled
// (Reported.syncSettled) and copied to the hub in the write that clears a finished request (what
// argocd app sync waits for), so a work asks for it only while it carries a request. The OCM agent
// computes feedback from the work's current rules on each status sync, and its apply hash covers
// the manifests only: adding or dropping the rule applies nothing on the managed cluster.
var reconciledAtPath = workv1.JsonPath{Name: FeedbackReconciledAt, Path: ".status.reconciledAt"}

// AsksReconciledAt says whether a work's feedback rules ask its cluster for reconciledAt (only a
// work carrying a request does).
func AsksReconciledAt(w *workv1.ManifestWork) bool {
	for _, c := range w.Spec.ManifestConfigs {
		for _, r := range c.FeedbackRules {
			if slices.ContainsFunc(r.JsonPaths, func(p workv1.JsonPath) bool { return p.Name == FeedbackReconciledAt }) {
				return true
			}
		}
	}
	return false
}

// feedbackRules are the feedback rules of a held work carrying deliveries (a pending one asks only
// the claim's, see pendingConfig).
func feedbackRules(deliveries Deliveries) []workv1.FeedbackRule {
	paths := slices.Clone(feedbackPaths)
	if deliveries.Sync != nil || deliveries.Refresh != nil {
		paths = FeedbackRulePaths()
	}
	return []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: paths}}
}

// annotationPath is the JSONPath of an annotation, as the work agent's feedback reads it.
func annotationPath(key string) string {
	return ".metadata.annotations." + strings.ReplaceAll(key, ".", `\.`)
}

// FeedbackText is feedback values by name, as appstatus reads them: a String or a JsonRaw as it is,
// an Integer in decimal (argocd-pull asks for no boolean).
func FeedbackText(feedback []workv1.FeedbackValue) map[string]string {
	values := make(map[string]string, len(feedback))
	for _, v := range feedback {
		switch {
		case v.Value.String != nil:
			values[v.Name] = *v.Value.String
		case v.Value.JsonRaw != nil:
			values[v.Name] = *v.Value.JsonRaw
		case v.Value.Integer != nil:
			values[v.Name] = strconv.FormatInt(*v.Value.Integer, 10)
		}
	}
	return values
}
