package simagent

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/test/workfixture"
)

func values(obj map[string]any, paths ...workv1.JsonPath) map[string]workv1.FieldValue {
	out := map[string]workv1.FieldValue{}
	for _, v := range Feedback(obj, []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: paths}}) {
		out[v.Name] = v.Value
	}
	return out
}

func TestFeedbackReadsAsTheWorkAgentReads(t *testing.T) {
	g := NewWithT(t)
	obj := map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{"a.b/c": "x"}},
		"status": map[string]any{
			"health":  map[string]any{"status": "Healthy"},
			"count":   int64(3),
			"ok":      true,
			"none":    nil,
			"one":     []any{map[string]any{"id": int64(0), "revision": "r1"}},
			"history": []any{map[string]any{"id": int64(0), "revision": "r1"}, map[string]any{"id": int64(1), "revision": "r2"}},
			"big":     strings.Repeat("x", 2000),
			"bigList": []any{strings.Repeat("x", 600), strings.Repeat("y", 600)},
		},
	}
	got := values(obj,
		workv1.JsonPath{Name: "health", Path: ".status.health.status"},
		workv1.JsonPath{Name: "count", Path: ".status.count"},
		workv1.JsonPath{Name: "ok", Path: ".status.ok"},
		workv1.JsonPath{Name: "none", Path: ".status.none"},
		workv1.JsonPath{Name: "missing", Path: ".status.missing.deeper"},
		workv1.JsonPath{Name: "oneRevision", Path: ".status.one[*].revision"},
		workv1.JsonPath{Name: "revisions", Path: ".status.history[*].revision"},
		workv1.JsonPath{Name: "ids", Path: ".status.history[*].id"},
		workv1.JsonPath{Name: "health-map", Path: ".status.health"},
		workv1.JsonPath{Name: "annotation", Path: `.metadata.annotations.a\.b/c`},
		workv1.JsonPath{Name: "bigString", Path: ".status.big"},
		workv1.JsonPath{Name: "bigList", Path: ".status.bigList"},
	)
	g.Expect(*got["health"].String).To(Equal("Healthy"))
	g.Expect(*got["count"].Integer).To(Equal(int64(3)))
	g.Expect(*got["ok"].Boolean).To(BeTrue())
	g.Expect(got).NotTo(HaveKey("none"))
	g.Expect(got).NotTo(HaveKey("missing"))
	g.Expect(*got["oneRevision"].String).To(Equal("r1"), "one match is the value itself")
	g.Expect(*got["revisions"].JsonRaw).To(Equal(`["r1","r2"]`), "several matches are a JSON list")
	g.Expect(*got["ids"].JsonRaw).To(Equal(`[0,1]`))
	g.Expect(*got["health-map"].JsonRaw).To(Equal(`{"status":"Healthy"}`))
	g.Expect(*got["annotation"].String).To(Equal("x"))
	g.Expect(*got["bigString"].String).To(HaveLen(2000), "the limit is on JSON values only")
	g.Expect(got).NotTo(HaveKey("bigList"), "a JSON value over 1024 bytes is left out")
}

// heldWork is the work argocd-pull writes for the fixture's Application with a sync request in
// flight, held (it delivers by server-side apply).
func heldWork(t *testing.T, app *unstructured.Unstructured, id string) *workv1.ManifestWork {
	t.Helper()
	var d manifestwork.Deliveries
	if id != "" {
		d.Sync = &manifestwork.Delivery{ID: id}
	}
	w, err := manifestwork.DesiredWork(app, nil, manifestwork.Target{Cluster: "cluster1", AppNamespace: "argocd"}, d)
	if err != nil {
		t.Fatal(err)
	}
	if w, err = manifestwork.Hold(w); err != nil {
		t.Fatal(err)
	}
	return w
}

func feedbackOf(w *workv1.ManifestWork, app *App) map[string]string {
	out := map[string]string{}
	status := agentStatus(w, app, time.Now())
	for _, v := range status.ResourceStatus.Manifests[0].StatusFeedbacks.Values {
		switch {
		case v.Value.String != nil:
			out[v.Name] = *v.Value.String
		case v.Value.JsonRaw != nil:
			out[v.Name] = *v.Value.JsonRaw
		}
	}
	return out
}

func TestArgoCDRunsARequestedSyncOnceAndReportsIt(t *testing.T) {
	g := NewWithT(t)
	b := Behaviour{SyncDuration: 5 * time.Second}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	hub := workfixture.PullApp(func(u *unstructured.Unstructured) {
		delete(u.Object["spec"].(map[string]any), "syncPolicy")
		u.Object["operation"] = map[string]any{"sync": map[string]any{}, "initiatedBy": map[string]any{"username": "applicationset-controller"}}
	})
	w := heldWork(t, hub, "d1")
	manifest, ok := applicationManifest(w)
	g.Expect(ok).To(BeTrue())

	var app App
	g.Expect(app.Apply(manifest, now, b)).To(BeTrue())
	fb := feedbackOf(w, &app)
	g.Expect(fb).To(HaveKeyWithValue(manifestwork.FeedbackPhase, "Running"))
	g.Expect(fb).To(HaveKeyWithValue(manifestwork.FeedbackSyncStarted, "d1"))
	g.Expect(fb).To(HaveKeyWithValue(manifestwork.FeedbackSyncHeld, "d1"), "the request is on the Application while it runs")
	g.Expect(fb).To(HaveKeyWithValue(manifestwork.FeedbackSync, "OutOfSync"))
	g.Expect(fb).To(HaveKeyWithValue(manifestwork.FeedbackRevision, Resolve("main")))

	next, changed := app.Step(now.Add(time.Second), b)
	g.Expect(changed).To(BeFalse())
	g.Expect(next).To(Equal(now.Add(5 * time.Second)))
	_, changed = app.Step(next, b)
	g.Expect(changed).To(BeTrue())
	fb = feedbackOf(w, &app)
	g.Expect(fb).To(HaveKeyWithValue(manifestwork.FeedbackPhase, "Succeeded"))
	g.Expect(fb).To(HaveKeyWithValue(manifestwork.FeedbackSync, "Synced"))
	g.Expect(fb).To(HaveKeyWithValue(manifestwork.FeedbackHealth, "Healthy"))
	g.Expect(fb).To(HaveKeyWithValue(manifestwork.FeedbackHistoryRevisions, Resolve("main")))
	g.Expect(fb).NotTo(HaveKey(manifestwork.FeedbackSyncHeld), "Argo CD removed .operation")
	g.Expect(app.Starts).To(Equal(map[string]int{"d1": 1}))

	// The same manifest again: the agent does not apply it, and nothing runs again.
	g.Expect(app.Apply(manifest, next.Add(time.Second), b)).To(BeFalse())
	_, changed = app.Step(next.Add(2*time.Second), b)
	g.Expect(changed).To(BeFalse())
	// A changed manifest still carrying the finished request runs it again: a redelivery, counted.
	hub.SetLabels(map[string]string{"team": "other"})
	w2 := heldWork(t, hub, "d1")
	manifest2, _ := applicationManifest(w2)
	g.Expect(app.Apply(manifest2, next.Add(3*time.Second), b)).To(BeTrue())
	g.Expect(app.Starts).To(Equal(map[string]int{"d1": 2}))
}

func TestAFailingRevisionStaysOutOfSync(t *testing.T) {
	g := NewWithT(t)
	b := Behaviour{SyncDuration: time.Second, Fails: func(target string) bool { return target == "bad" }}
	now := time.Now()
	hub := workfixture.PullApp(func(u *unstructured.Unstructured) {
		delete(u.Object["spec"].(map[string]any), "syncPolicy")
		_ = unstructured.SetNestedField(u.Object, "bad", "spec", "source", "targetRevision")
		u.Object["operation"] = map[string]any{"sync": map[string]any{}}
	})
	w := heldWork(t, hub, "d1")
	manifest, _ := applicationManifest(w)
	var app App
	app.Apply(manifest, now, b)
	app.Step(now.Add(time.Second), b)
	fb := feedbackOf(w, &app)
	g.Expect(fb).To(HaveKeyWithValue(manifestwork.FeedbackPhase, "Failed"))
	g.Expect(fb).To(HaveKeyWithValue(manifestwork.FeedbackSync, "OutOfSync"))
	g.Expect(fb).To(HaveKeyWithValue(manifestwork.FeedbackHealth, "Missing"))
}

func TestTheAutomatedPolicySyncsEachNewRevisionOnce(t *testing.T) {
	g := NewWithT(t)
	b := Behaviour{SyncDuration: time.Second}
	now := time.Now()
	hub := workfixture.PullApp() // automated sync
	w := heldWork(t, hub, "")
	manifest, _ := applicationManifest(w)
	var app App
	app.Apply(manifest, now, b)
	g.Expect(feedbackOf(w, &app)).To(HaveKeyWithValue(manifestwork.FeedbackPhase, "Running"))
	app.Step(now.Add(time.Second), b)
	g.Expect(feedbackOf(w, &app)).To(HaveKeyWithValue(manifestwork.FeedbackSync, "Synced"))
	_, changed := app.Step(now.Add(2*time.Second), b)
	g.Expect(changed).To(BeFalse(), "Synced: nothing to do")

	_ = unstructured.SetNestedField(hub.Object, "v2", "spec", "source", "targetRevision")
	w = heldWork(t, hub, "")
	manifest, _ = applicationManifest(w)
	app.Apply(manifest, now.Add(3*time.Second), b)
	fb := feedbackOf(w, &app)
	g.Expect(fb).To(HaveKeyWithValue(manifestwork.FeedbackPhase, "Running"))
	g.Expect(fb).To(HaveKeyWithValue(manifestwork.FeedbackRevision, Resolve("v2")))
	app.Step(now.Add(4*time.Second), b)
	g.Expect(feedbackOf(w, &app)).To(HaveKeyWithValue(manifestwork.FeedbackHistoryRevisions, `["`+Resolve("main")+`","`+Resolve("v2")+`"]`))
}

func TestAPendingWorkCreatesNothing(t *testing.T) {
	g := NewWithT(t)
	w, err := manifestwork.DesiredWork(workfixture.PullApp(), nil, manifestwork.Target{Cluster: "cluster1", AppNamespace: "argocd"}, manifestwork.Deliveries{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(manifestwork.Held(w)).To(BeFalse())
	var app App
	status := agentStatus(w, &app, time.Now())
	w.Status = *status
	g.Expect(manifestwork.Absent(w)).To(BeTrue())
	g.Expect(manifestwork.ClaimOf(w)).To(Equal(manifestwork.ClaimFree))
}

func TestArgoCDComparesAgainEachResync(t *testing.T) {
	g := NewWithT(t)
	b := Behaviour{SyncDuration: time.Second, Resync: 10 * time.Second}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := heldWork(t, workfixture.PullApp(), "")
	manifest, _ := applicationManifest(w)
	var app App
	app.Apply(manifest, now, b)
	next, _ := app.Step(now, b)
	g.Expect(next).To(Equal(now.Add(time.Second)), "the sync ends first")
	next, _ = app.Step(next, b)
	g.Expect(next).To(Equal(now.Add(10*time.Second)), "then the next comparison")
	_, changed := app.Step(next, b)
	g.Expect(changed).To(BeTrue())
	g.Expect(app.Object["status"].(map[string]any)["reconciledAt"]).To(Equal("2026-01-01T00:00:10Z"))
}

func TestArgoCDWritesAComparisonOnlyOnceItEnds(t *testing.T) {
	g := NewWithT(t)
	b := Behaviour{SyncDuration: time.Second, Compare: 500 * time.Millisecond}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	hub := workfixture.PullApp(func(u *unstructured.Unstructured) {
		delete(u.Object["spec"].(map[string]any), "syncPolicy")
	})
	manifest, _ := applicationManifest(heldWork(t, hub, ""))
	var app App
	g.Expect(app.Apply(manifest, now, b)).To(BeTrue())
	g.Expect(app.Object["status"]).To(BeNil(), "nothing is compared yet")
	next, changed := app.Step(now, b)
	g.Expect(changed).To(BeFalse())
	g.Expect(next).To(Equal(now.Add(500 * time.Millisecond)))
	_, changed = app.Step(next, b)
	g.Expect(changed).To(BeTrue())
	sync, _, _ := unstructured.NestedString(app.Object, "status", "sync", "revision")
	g.Expect(sync).To(Equal(Resolve("main")))

	// A new targetRevision: the status still shows the old commit until the comparison ends.
	g.Expect(unstructured.SetNestedField(manifest, "v2", "spec", "source", "targetRevision")).To(Succeed())
	later := next.Add(time.Second)
	g.Expect(app.Apply(manifest, later, b)).To(BeTrue())
	sync, _, _ = unstructured.NestedString(app.Object, "status", "sync", "revision")
	g.Expect(sync).To(Equal(Resolve("main")))
	next, _ = app.Step(later, b)
	g.Expect(next).To(Equal(later.Add(500 * time.Millisecond)))
	_, changed = app.Step(next, b)
	g.Expect(changed).To(BeTrue())
	sync, _, _ = unstructured.NestedString(app.Object, "status", "sync", "revision")
	g.Expect(sync).To(Equal(Resolve("v2")))
	g.Expect(app.Object["status"].(map[string]any)["reconciledAt"]).To(Equal(next.UTC().Format(time.RFC3339)))
}
