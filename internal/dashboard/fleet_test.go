package dashboard

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/report"
)

func TestStateOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		cc   v1alpha1.ClusterCondition
		want string
	}{
		{"synced and healthy", v1alpha1.ClusterCondition{SyncStatus: "Synced", HealthStatus: "Healthy"}, StateHealthy},
		{"out of sync", v1alpha1.ClusterCondition{SyncStatus: "OutOfSync", HealthStatus: "Healthy"}, StateOutOfSync},
		{"out of sync, missing", v1alpha1.ClusterCondition{SyncStatus: "OutOfSync", HealthStatus: "Missing"}, StateOutOfSync},
		{"progressing", v1alpha1.ClusterCondition{SyncStatus: "Synced", HealthStatus: "Progressing"}, StateProgressing},
		{"operation running", v1alpha1.ClusterCondition{SyncStatus: "OutOfSync", HealthStatus: "Healthy", OperationStatePhase: "Running"}, StateProgressing},
		{"degraded", v1alpha1.ClusterCondition{SyncStatus: "Synced", HealthStatus: "Degraded"}, StateFailing},
		{"operation failed", v1alpha1.ClusterCondition{SyncStatus: "OutOfSync", HealthStatus: "Healthy", OperationStatePhase: "Failed"}, StateFailing},
		{"sync error while running (retrying)", v1alpha1.ClusterCondition{SyncStatus: "OutOfSync", HealthStatus: "Healthy", OperationStatePhase: "Running",
			Conditions: []v1alpha1.Condition{{Type: report.ConditionSyncError, Message: "x. Retrying attempt #2"}}}, StateFailing},
		{"not propagated", v1alpha1.ClusterCondition{SyncStatus: "Unknown", HealthStatus: "Unknown",
			Conditions: []v1alpha1.Condition{{Type: report.ConditionNotPropagated, Message: "no such cluster"}}}, StateFailing},
		{"comparison error from the spoke", v1alpha1.ClusterCondition{SyncStatus: "Unknown", HealthStatus: "Healthy",
			Conditions: []v1alpha1.Condition{{Type: "ComparisonError", Message: "repo"}}}, StateFailing},
		{"stale wins over everything", v1alpha1.ClusterCondition{SyncStatus: "Unknown", HealthStatus: "Unknown",
			Conditions: []v1alpha1.Condition{{Type: report.ConditionStale, Message: "no status"}, {Type: report.ConditionSyncError, Message: "x"}}}, StateStale},
		{"paused alone is not an error", v1alpha1.ClusterCondition{SyncStatus: "Synced", HealthStatus: "Healthy",
			Conditions: []v1alpha1.Condition{{Type: report.ConditionPaused, Message: "paused"}}}, StateHealthy},
		{"nothing known", v1alpha1.ClusterCondition{SyncStatus: "Unknown", HealthStatus: "Unknown"}, StateUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := stateOf(tc.cc); got != tc.want {
				t.Errorf("stateOf = %s, want %s", got, tc.want)
			}
		})
	}
}

// The fleet's entries are the report's entries: the same statuses, the same staleness, the same
// pause, for every way an Application, its work, its cluster and its ApplicationSet change.
func TestFleetEntries(t *testing.T) {
	f := NewFleet(time.Minute)
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	f.now = func() time.Time { return now }
	snapshot, stream := f.Subscribe()
	defer stream.Close()
	if len(snapshot.Entries) != 0 {
		t.Fatalf("an empty fleet has entries: %+v", snapshot.Entries)
	}

	f.SetCluster(genCluster("c1", map[string]string{"env": "prod"}, metav1.ConditionTrue))
	f.SetApplicationSet(genAppSet("web", 2, map[string]any{"application": "web-c1", "step": "1", "status": "Progressing", "message": "rolling"}))
	app := genApp("web", "c1")
	f.SetApplication(app)
	pushOnly := genApp("", "c1")
	pushOnly.SetName("push")
	pushOnly.SetLabels(nil) // not pull-model: never an entry
	f.SetApplication(pushOnly)

	d := next(t, stream)
	if len(d.Clusters) != 1 || d.Clusters[0].Available != "True" || d.Clusters[0].Labels["env"] != "prod" {
		t.Errorf("clusters in the delta: %+v", d.Clusters)
	}
	if len(d.AppSets) != 1 || d.AppSets[0].Steps != 2 {
		t.Errorf("ApplicationSets in the delta: %+v", d.AppSets)
	}
	e := only(t, d.Entries)
	if e.Key != argoNS+"/web-c1" || e.Cluster != "c1" || e.AppSet != argoNS+"/web" || e.State != StateUnknown || e.Step != "1" || e.Rollout != "Progressing" {
		t.Errorf("entry before the work exists: %+v", e)
	}

	// The work, applied, reports the Application synced.
	f.SetWork(genWork(t, app, feedback("Synced", "Healthy", "abc")))
	e = only(t, next(t, stream).Entries)
	if e.State != StateHealthy || e.Sync != "Synced" || e.Revision != "abc" {
		t.Errorf("entry once the cluster reports: %+v", e)
	}
	detail, ok := f.Detail(e.Key)
	if !ok || detail.WorkNamespace != "c1" || detail.WorkName == "" || detail.RolloutMessage != "rolling" {
		t.Errorf("detail: %+v", detail)
	}

	// The cluster goes unavailable: the report says stale, so does the page.
	f.SetCluster(genCluster("c1", nil, metav1.ConditionUnknown))
	d = next(t, stream)
	if e = only(t, d.Entries); e.State != StateStale || !strings.HasPrefix(e.Error, report.ConditionStale+": ") {
		t.Errorf("entry of an unavailable cluster: %+v", e)
	}
	if d.Clusters[0].Available != "Unknown" {
		t.Errorf("cluster: %+v", d.Clusters[0])
	}

	// Paused on the hub (the controller's condition): marked, state kept.
	f.SetCluster(genCluster("c1", nil, metav1.ConditionTrue))
	paused := app.DeepCopy()
	paused.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": api.PausedCondition, "message": "delivery paused by the ApplicationSet"}}}
	f.SetApplication(paused)
	if e = only(t, next(t, stream).Entries); !e.Paused || e.State != StateHealthy || e.Error != "" {
		t.Errorf("paused entry: %+v", e)
	}

	// Deleted: removed from the page.
	f.DeleteApplication(argoNS, "web-c1")
	if d = next(t, stream); len(d.Removed) != 1 || d.Removed[0] != argoNS+"/web-c1" || len(d.Entries) != 0 {
		t.Errorf("delta after the delete: %+v", d)
	}
	if got := f.Snapshot(); len(got.Entries) != 0 {
		t.Errorf("snapshot after the delete: %+v", got.Entries)
	}
}

// A work that no cluster applies turns stale with time alone: Tick finds it.
func TestFleetTurnsStaleWithTime(t *testing.T) {
	f := NewFleet(time.Minute)
	now := time.Now()
	f.now = func() time.Time { return now }
	f.SetCluster(genCluster("c1", nil, metav1.ConditionTrue))
	app := genApp("web", "c1")
	f.SetApplication(app)
	w := genWork(t, app, nil)
	w.Status = workv1.ManifestWorkStatus{} // written, never applied
	w.Annotations[api.WrittenAtAnnotation] = now.UTC().Format(time.RFC3339)
	f.SetWork(w)
	_, stream := f.Subscribe()
	defer stream.Close()
	if e := only(t, f.Snapshot().Entries); e.State == StateStale {
		t.Fatalf("stale at once: %+v", e)
	}
	now = now.Add(2 * time.Minute)
	f.Tick()
	if e := only(t, next(t, stream).Entries); e.State != StateStale {
		t.Errorf("after --stale-after: %+v", e)
	}
}

// What a managed cluster writes reaches the page cut: a megabyte message, a long revision.
func TestFleetBoundsWhatClustersWrite(t *testing.T) {
	f := NewFleet(0)
	f.SetCluster(genCluster("c1", nil, metav1.ConditionTrue))
	app := genApp("web", "c1")
	f.SetApplication(app)
	values := feedback("OutOfSync", "Degraded", strings.Repeat("r", 10_000))
	values[manifestwork.FeedbackPhase] = "Failed"
	values[manifestwork.FeedbackStartedAt] = "2026-11-25T10:00:00Z"
	values[manifestwork.FeedbackMessage] = strings.Repeat("<script>alert(1)</script>", 40_000)
	f.SetWork(genWork(t, app, values))
	e := only(t, f.Snapshot().Entries)
	if e.State != StateFailing || len(e.Revision) > maxRevision || len(e.Error) > maxError {
		t.Errorf("entry: state %s, revision %d bytes, error %d bytes", e.State, len(e.Revision), len(e.Error))
	}
	d, _ := f.Detail(e.Key)
	if len(d.Conditions) == 0 || d.Conditions[0].Type != report.ConditionSyncError {
		t.Errorf("conditions: %+v", d.Conditions)
	}
	for _, c := range d.Conditions {
		if len(c.Message) > 600 {
			t.Errorf("condition %s of %d bytes", c.Type, len(c.Message))
		}
	}
}

func next(t *testing.T, s *Stream) Delta {
	t.Helper()
	select {
	case <-s.Changed():
	default:
		t.Fatal("no change signalled")
	}
	return s.Next()
}

func only(t *testing.T, entries []Entry) Entry {
	t.Helper()
	if len(entries) != 1 {
		t.Fatalf("want one entry, got %+v", entries)
	}
	return entries[0]
}

// An event on an ApplicationSet touches all its Applications; a page gets only the entries that
// changed (a RollingSync rollout rewrites the ApplicationSet's status at every step).
func TestFleetSendsOnlyChangedEntries(t *testing.T) {
	f := NewFleet(0)
	generate(t, f, 3, 1)
	_, stream := f.Subscribe()
	defer stream.Close()
	status := func(step0 string) *unstructured.Unstructured {
		return genAppSet(appSetName(0), 2,
			map[string]any{"application": appSetName(0) + "-" + clusterName(0), "step": step0, "status": "Progressing"},
			map[string]any{"application": appSetName(0) + "-" + clusterName(1), "step": "2", "status": "Waiting"})
	}
	f.SetApplicationSet(status("1"))
	d := next(t, stream)
	if len(d.AppSets) != 1 || len(d.Entries) != 2 {
		t.Fatalf("first rollout status: %d ApplicationSets, entries %+v", len(d.AppSets), d.Entries)
	}
	f.SetApplicationSet(status("1")) // rewritten, nothing of the entries changed
	if d = next(t, stream); len(d.AppSets) != 1 || len(d.Entries) != 0 {
		t.Errorf("a rewrite without change sent entries: %+v", d.Entries)
	}
	f.SetApplicationSet(status("2"))
	if d = next(t, stream); len(d.Entries) != 1 || d.Entries[0].Cluster != clusterName(0) || d.Entries[0].Step != "2" {
		t.Errorf("one entry's step changed: %+v", d.Entries)
	}
	// A second page subscribed meanwhile gets the same from then on.
	snapshot, late := f.Subscribe()
	defer late.Close()
	if len(snapshot.Entries) != 3 {
		t.Fatalf("snapshot: %+v", snapshot.Entries)
	}
	f.SetApplicationSet(status("1"))
	for _, s := range []*Stream{stream, late} {
		if d = next(t, s); len(d.Entries) != 1 || d.Entries[0].Step != "1" {
			t.Errorf("after the step went back: %+v", d.Entries)
		}
	}
}
