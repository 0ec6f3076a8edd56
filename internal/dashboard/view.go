// Package dashboard serves the fleet view: a page of clusters x ApplicationSets, each cell the
// cluster's entry as the ApplicationSet's report builds it (before the report's size bound), kept
// live from the hub's watches and pushed to the browser as deltas. It only reads: what a person sees
// is what their kubeconfig (or the controller's) may list.
//
// The data path: informers (watch.go) -> Fleet, which keeps the hub objects and computes each
// Application's Entry with report.Entry (fleet.go) -> Server, which sends a snapshot and then the
// changed entries to each browser (server.go) -> the embedded page (web/), which groups entries
// into cells, filters and draws only the rows in view.
package dashboard

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
	"github.com/argocd-pull/argocd-pull/internal/appstatus"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/report"
)

// States of an entry, from worst to best; the page colours and filters by them.
const (
	StateFailing     = "failing"
	StateStale       = "stale"
	StateProgressing = "progressing"
	StateOutOfSync   = "outofsync"
	StateUnknown     = "unknown"
	StateHealthy     = "healthy"
)

// Bounds on what one entry carries to the browser. Names are at most 253 characters (Kubernetes
// names); what a managed cluster writes (messages, revisions) is cut.
const (
	maxError      = 200
	maxRevision   = 64
	maxResources  = 200
	maxConditions = 10
)

// Entry is one hub Application's cell content, as sent to the page.
type Entry struct {
	// Key is the hub Application, "<namespace>/<name>".
	Key     string `json:"k"`
	Cluster string `json:"c"`
	// AppSet is the owning ApplicationSet, "<namespace>/<name>"; "" for an Application without one.
	AppSet   string `json:"s,omitempty"`
	Sync     string `json:"sy"`
	Health   string `json:"h"`
	Phase    string `json:"p,omitempty"`
	Revision string `json:"r,omitempty"`
	State    string `json:"st"`
	Paused   bool   `json:"pa,omitempty"`
	// Error is the first condition's type and message, cut.
	Error string `json:"e,omitempty"`
	// Step and Rollout are the Application's RollingSync step and status in its ApplicationSet
	// (Waiting, Pending, Progressing, Healthy), when the ApplicationSet rolls out by steps.
	Step    string `json:"step,omitempty"`
	Rollout string `json:"ro,omitempty"`
}

// Detail is what a cell opens: the entry, and what the report knows of the cluster.
type Detail struct {
	Entry
	StartedAt  string                 `json:"startedAt,omitempty"`
	Conditions []v1alpha1.Condition   `json:"conditions,omitempty"`
	Resources  []v1alpha1.ResourceRef `json:"resources,omitempty"`
	// ResourcesTotal is the number of deployed resources; Resources holds at most maxResources.
	ResourcesTotal int    `json:"resourcesTotal"`
	WorkNamespace  string `json:"workNamespace,omitempty"`
	WorkName       string `json:"workName,omitempty"`
	PausedMessage  string `json:"pausedMessage,omitempty"`
	RolloutMessage string `json:"rolloutMessage,omitempty"`
}

// Cluster is a ManagedCluster as the page filters and marks it.
type Cluster struct {
	Name   string            `json:"n"`
	Labels map[string]string `json:"l,omitempty"`
	// Available is the ManagedCluster's Available condition: True, False or Unknown.
	Available string `json:"a"`
}

// AppSet is an ApplicationSet as the page heads its column.
type AppSet struct {
	Key string `json:"k"`
	// Steps is the number of RollingSync steps, 0 when it does not roll out by steps.
	Steps int `json:"steps,omitempty"`
	// Paused is set when the ApplicationSet's delivery is paused.
	Paused bool `json:"pa,omitempty"`
}

// rollout is one Application's entry in its ApplicationSet's .status.applicationStatus.
type rollout struct{ Step, Status, Message string }

// entryOf is the page's entry for one member, from the report's entry for it.
func entryOf(key, appSet string, cc v1alpha1.ClusterCondition, paused bool, ro rollout) Entry {
	e := Entry{
		Key: key, Cluster: cc.Cluster, AppSet: appSet,
		Sync: cc.SyncStatus, Health: cc.HealthStatus, Phase: cc.OperationStatePhase,
		Revision: appstatus.Truncate(cc.SyncRevision, maxRevision),
		State:    stateOf(cc), Paused: paused,
		Step: ro.Step, Rollout: ro.Status,
	}
	for _, c := range cc.Conditions {
		if c.Type == report.ConditionPaused {
			continue
		}
		e.Error = appstatus.Truncate(c.Type+": "+c.Message, maxError)
		break
	}
	return e
}

// stateOf classifies a cluster's entry, worst first: the report says it is stale; it failed (a
// propagation or sync error, a failed operation, Degraded); it is on its way (Progressing, an
// operation running); it is out of sync; it is Synced and Healthy; or nothing is known yet.
func stateOf(cc v1alpha1.ClusterCondition) string {
	failing := cc.HealthStatus == "Degraded" || cc.OperationStatePhase == "Failed" || cc.OperationStatePhase == "Error"
	for _, c := range cc.Conditions {
		switch {
		case c.Type == report.ConditionStale:
			return StateStale
		case c.Type == report.ConditionNotPropagated, c.Type == report.ConditionSyncError, strings.HasSuffix(c.Type, "Error"):
			failing = true
		}
	}
	switch {
	case failing:
		return StateFailing
	case cc.HealthStatus == argocd.HealthProgressing || cc.OperationStatePhase == "Running":
		return StateProgressing
	case cc.SyncStatus == argocd.SyncOutOfSync:
		return StateOutOfSync
	case cc.SyncStatus == argocd.SyncSynced && cc.HealthStatus == argocd.HealthHealthy:
		return StateHealthy
	}
	return StateUnknown
}

// appSetOf reads what the page shows of an ApplicationSet: its RollingSync steps and each
// Application's step and status.
func appSetOf(u *unstructured.Unstructured) (AppSet, map[string]rollout) {
	a := AppSet{Key: u.GetNamespace() + "/" + u.GetName()}
	v, _ := argocd.Annotation(u, api.PausedAnnotation)
	a.Paused = manifestwork.PauseValue(v) != ""
	if argocd.RollingSync(u) {
		steps, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "strategy", "rollingSync", "steps")
		list, _ := steps.([]any)
		a.Steps = len(list)
	}
	statuses, _, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "applicationStatus")
	list, _ := statuses.([]any)
	rollouts := make(map[string]rollout, len(list))
	for _, s := range list {
		m, ok := s.(map[string]any)
		if !ok {
			continue
		}
		name, _ := m["application"].(string)
		step, _ := m["step"].(string)
		status, _ := m["status"].(string)
		message, _ := m["message"].(string)
		if name != "" {
			rollouts[name] = rollout{
				Step:    appstatus.Truncate(step, 8),
				Status:  appstatus.Truncate(status, 16),
				Message: appstatus.Truncate(message, maxError),
			}
		}
	}
	return a, rollouts
}
