package appstatus

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

// work builds a ManifestWork at generation gen, applied at appliedGen, with feedback values.
func work(gen, appliedGen int64, values map[string]string) *workv1.ManifestWork {
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Generation: gen}}
	if appliedGen > 0 {
		w.Status.Conditions = []metav1.Condition{{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, ObservedGeneration: appliedGen}}
	}
	var fv []workv1.FeedbackValue
	for k, v := range values {
		typ := workv1.String
		val := workv1.FieldValue{Type: typ, String: ptr.To(v)}
		if k == manifestwork.FeedbackOperation || k == manifestwork.FeedbackResources {
			val = workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: ptr.To(v)}
		}
		fv = append(fv, workv1.FeedbackValue{Name: k, Value: val})
	}
	w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{
		{ResourceMeta: workv1.ManifestResourceMeta{Group: "", Kind: "ConfigMap"}},
		{ResourceMeta: workv1.ManifestResourceMeta{Group: "argoproj.io", Kind: "Application"}, StatusFeedbacks: workv1.StatusFeedbackResult{Values: fv}},
	}
	return w
}

var v2 = &Source{RepoURL: "https://git.example/repo", TargetRevision: "v2", Path: "app"}

func feedback(health, sync, comparedRevision string) map[string]string {
	return map[string]string{
		manifestwork.FeedbackHealth:           health,
		manifestwork.FeedbackSync:             sync,
		manifestwork.FeedbackRevision:         "sha-" + comparedRevision,
		manifestwork.FeedbackComparedRepoURL:  "https://git.example/repo",
		manifestwork.FeedbackComparedRevision: comparedRevision,
		manifestwork.FeedbackComparedPath:     "app",
	}
}

func TestDerive(t *testing.T) {
	tests := map[string]struct {
		work              *workv1.ManifestWork
		wanted            *Source
		health, sync, rev string
	}{
		"healthy at the wanted source":                 {work(2, 2, feedback("Healthy", "Synced", "v2")), v2, "Healthy", "Synced", "sha-v2"},
		"degraded passes through":                      {work(2, 2, feedback("Degraded", "Synced", "v2")), v2, "Degraded", "Synced", "sha-v2"},
		"not yet applied: old health not believed":     {work(2, 1, feedback("Healthy", "Synced", "v1")), v2, "Progressing", "OutOfSync", "sha-v1"},
		"never reported":                               {work(1, 0, nil), v2, "Unknown", "Unknown", ""},
		"applied, spoke compared the old source":       {work(2, 2, feedback("Healthy", "Synced", "v1")), v2, "Progressing", "OutOfSync", "sha-v1"},
		"applied, no feedback yet":                     {work(2, 2, nil), v2, "Unknown", "Unknown", ""},
		"multi-source app: comparedTo not checked":     {work(2, 2, feedback("Healthy", "Synced", "v1")), nil, "Healthy", "Synced", "sha-v1"},
		"no comparedTo reported: trusted once applied": {work(2, 2, map[string]string{manifestwork.FeedbackHealth: "Healthy", manifestwork.FeedbackSync: "Synced"}), v2, "Healthy", "Synced", ""},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			st := Derive(Observe(tt.work), tt.wanted)
			g.Expect(st.Health).To(Equal(tt.health))
			g.Expect(st.Sync).To(Equal(tt.sync))
			g.Expect(st.Revision).To(Equal(tt.rev))
		})
	}
}

func TestMultiSourceRevisions(t *testing.T) {
	g := NewWithT(t)
	w := work(1, 1, map[string]string{manifestwork.FeedbackHealth: "Healthy", manifestwork.FeedbackSync: "Synced"})
	v := workv1.FeedbackValue{Name: manifestwork.FeedbackRevisions, Value: workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: ptr.To(`["abc","def"]`)}}
	w.Status.ResourceStatus.Manifests[1].StatusFeedbacks.Values = append(w.Status.ResourceStatus.Manifests[1].StatusFeedbacks.Values, v)
	g.Expect(Observe(w).Revision).To(Equal("abc,def"))
}

func TestDeriveOperationState(t *testing.T) {
	g := NewWithT(t)
	values := feedback("Healthy", "Synced", "v2")
	values[manifestwork.FeedbackPhase] = "Succeeded"
	values[manifestwork.FeedbackStartedAt] = "2026-11-21T10:00:00Z"
	values[manifestwork.FeedbackMessage] = "successfully synced (all tasks run)"
	st := Derive(Observe(work(1, 1, values)), v2)
	g.Expect(st.Operation).To(Equal(&OperationState{
		Operation: map[string]any{"sync": map[string]any{}},
		Phase:     "Succeeded", StartedAt: "2026-11-21T10:00:00Z", Message: "successfully synced (all tasks run)",
	}))

	values[manifestwork.FeedbackOperation] = `{"sync":{"revision":"abc"},"initiatedBy":{"username":"admin"}}`
	st = Derive(Observe(work(1, 1, values)), v2)
	g.Expect(st.Operation.Operation).To(Equal(map[string]any{"sync": map[string]any{"revision": "abc"}, "initiatedBy": map[string]any{"username": "admin"}}))

	g.Expect(Derive(Observe(work(1, 1, feedback("Healthy", "Synced", "v2"))), v2).Operation).To(BeNil(), "no operation reported")
}

func TestApplyKeepsOtherFieldsAndReportsNoChange(t *testing.T) {
	g := NewWithT(t)
	app := argocd.NewApplication()
	app.Object["status"] = map[string]any{
		"health":     map[string]any{"status": "Unknown", "message": "kept"},
		"sync":       map[string]any{"status": "Unknown", "comparedTo": map[string]any{"source": map[string]any{}}},
		"conditions": []any{map[string]any{"type": "X", "message": "kept"}},
	}
	st := Status{Health: "Healthy", Sync: "Synced", Revision: "abc", Operation: &OperationState{Operation: map[string]any{"sync": map[string]any{}}, Phase: "Succeeded", StartedAt: "t"}}
	updated, changed := WithStatus(app, st)
	g.Expect(changed).To(BeTrue())
	g.Expect(nested(updated, "status", "health", "status")).To(Equal("Healthy"))
	g.Expect(nested(updated, "status", "health", "message")).To(Equal("kept"))
	g.Expect(nested(updated, "status", "sync", "revision")).To(Equal("abc"))
	g.Expect(nested(updated, "status", "operationState", "phase")).To(Equal("Succeeded"))
	g.Expect(updated.Object["status"].(map[string]any)).To(HaveKey("conditions"))
	g.Expect(app.Object["status"].(map[string]any)["health"].(map[string]any)["status"]).To(Equal("Unknown"), "input not modified")

	_, changed = WithStatus(updated, st)
	g.Expect(changed).To(BeFalse())
}

func nested(u *unstructured.Unstructured, path ...string) string {
	v, _, _ := unstructured.NestedString(u.Object, path...)
	return v
}

// A requested sync that finished on the managed cluster, whose Argo CD has not compared since,
// still reads Running on the hub: the hub shows it finished only in the write that clears it.
func TestFinishedButUnsettledSyncStillRuns(t *testing.T) {
	g := NewWithT(t)
	carried := manifestwork.Deliveries{Sync: &manifestwork.Delivery{ID: "d1", Hash: "h"}}
	obs := Observed{Applied: true, ContentApplied: true, Seen: true, Reported: true, Health: argocd.HealthHealthy, Sync: argocd.SyncOutOfSync,
		Phase: "Succeeded", StartedAt: "2026-11-23T10:00:00Z", FinishedAt: "2026-11-23T10:00:05Z", Carried: carried,
		Delivery: manifestwork.Reported{SyncStarted: "d1", Phase: "Succeeded", FinishedAt: "2026-11-23T10:00:05Z", ReconciledAt: "2026-11-23T10:00:01Z"}}
	st := Derive(obs, nil)
	g.Expect(st.Operation.Phase).To(Equal("Running"))
	g.Expect(st.Operation.FinishedAt).To(BeEmpty())
	g.Expect(st.Health).To(Equal(argocd.HealthHealthy), "OutOfSync: no RollingSync step counts it done, its health is its cluster's")
	g.Expect(manifestwork.DeliveryID(st.Operation.Operation)).To(Equal("d1"))
	synced := obs
	synced.Sync = argocd.SyncSynced
	g.Expect(Derive(synced, nil).Health).To(Equal(argocd.HealthProgressing), "Synced, its health is about what ran before the request: a step must not advance on it")

	obs.Delivery.ReconciledAt = "2026-11-23T10:00:06Z"
	st = Derive(obs, nil)
	g.Expect(st.Operation.Phase).To(Equal("Succeeded"))
	g.Expect(st.Operation.FinishedAt).To(Equal("2026-11-23T10:00:05Z"))
}

func TestUnanswered(t *testing.T) {
	withStatus := func(status map[string]any) *unstructured.Unstructured {
		app := argocd.NewApplication()
		if status != nil {
			app.Object["status"] = status
		}
		return app
	}
	refused := map[string]any{"conditions": []any{map[string]any{"type": "PullPropagationError"}}}
	answered := map[string]any{"health": map[string]any{"status": "Healthy"}, "sync": map[string]any{"status": "Synced"}}
	for name, tc := range map[string]struct {
		app  *unstructured.Unstructured
		work *workv1.ManifestWork
		want bool
	}{
		"new Application, work not seen by the agent":     {withStatus(nil), work(1, 0, nil), true},
		"only a refusal condition from before":            {withStatus(refused), work(1, 0, nil), true},
		"an earlier answer shown: reset to Unknown":       {withStatus(answered), work(1, 0, nil), false},
		"the agent acted on the work":                     {withStatus(nil), work(1, 1, nil), false},
		"feedback arrived before the Applied condition":   {withStatus(nil), work(1, 0, feedback("Healthy", "Synced", "v2")), false},
		"the agent applied an older generation, no value": {withStatus(nil), work(2, 1, nil), false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := Unanswered(tc.app, Observe(tc.work)); got != tc.want {
				t.Errorf("Unanswered = %v, want %v", got, tc.want)
			}
		})
	}
}

// An adopting work writes the hub status only once its cluster reports the Application as it is.
func TestSettled(t *testing.T) {
	wanted := &Source{RepoURL: "https://git.example/apps", TargetRevision: "main", Path: "guestbook"}
	reported := Observed{Applied: true, ContentApplied: true, Seen: true, Reported: true, Health: "Healthy", Sync: "Synced", Revision: "abc", ComparedTo: wanted}
	for name, tt := range map[string]struct {
		obs  func(o *Observed)
		want bool
	}{
		"applied and reported":        {obs: func(*Observed) {}, want: true},
		"reported OutOfSync as it is": {obs: func(o *Observed) { o.Sync = "OutOfSync" }, want: true},
		"not applied yet":             {obs: func(o *Observed) { o.Applied, o.ContentApplied = false, false }},
		"nothing reported yet":        {obs: func(o *Observed) { o.Reported, o.Health, o.Sync = false, "", "" }},
		"compared against another source": {obs: func(o *Observed) {
			o.ComparedTo = &Source{RepoURL: "https://git.example/apps", TargetRevision: "v1", Path: "guestbook"}
		}},
		"what is not the hub's (a foreign claim)": {obs: func(o *Observed) { o.Foreign = true }},
	} {
		t.Run(name, func(t *testing.T) {
			obs := reported
			tt.obs(&obs)
			if got := Settled(obs, wanted); got != tt.want {
				t.Errorf("Settled = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAStatusHoldsWhileARequestTravels(t *testing.T) {
	g := NewWithT(t)
	w := work(4, 3, feedback("Healthy", "Synced", "v2"))
	w.Annotations = map[string]string{"apps.open-cluster-management.io/pull-requests-only": "3/4"}
	st := Derive(Observe(w), v2)
	g.Expect(st.Health).To(Equal("Healthy"), "a refresh on its way changes nothing until the managed cluster answers")
	g.Expect(st.Sync).To(Equal("Synced"))

	delete(w.Annotations, "apps.open-cluster-management.io/pull-requests-only")
	st = Derive(Observe(w), v2)
	g.Expect([]string{st.Health, st.Sync}).To(Equal([]string{"Progressing", "OutOfSync"}), "a new content not applied yet")
}

func TestReconciledAt(t *testing.T) {
	tests := map[string]struct {
		reconciled, finished, want string
	}{
		"compared after the operation": {"2026-11-25T10:00:05Z", "2026-11-25T10:00:03Z", "2026-11-25T10:00:05Z"},
		"compared before it finished":  {"2026-11-25T10:00:01Z", "2026-11-25T10:00:03Z", "2026-11-25T10:00:03Z"},
		"no operation":                 {"2026-11-25T10:00:05Z", "", "2026-11-25T10:00:05Z"},
		"a zone offset":                {"2026-11-25T11:00:05+01:00", "", "2026-11-25T10:00:05Z"},
		"not a time (a forged value)":  {"<script>", "2026-11-25T10:00:03Z", "2026-11-25T10:00:03Z"},
		"neither a time":               {"soon", "later", ""},
		"nothing reported":             {"", "", ""},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(ReconciledAt(Observed{ReconciledAt: tt.reconciled, FinishedAt: tt.finished})).To(Equal(tt.want))
		})
	}
}

// argocd app get prints its resources table from status.resources.
func TestResourcesAreCopiedToTheHub(t *testing.T) {
	g := NewWithT(t)
	values := feedback("Healthy", "Synced", "v2")
	values[manifestwork.FeedbackResources] = `[{"version":"v1","kind":"ConfigMap","namespace":"guestbook","name":"guestbook-ui","status":"Synced","health":{"status":"Healthy"},"syncWave":-1,"requiresPruning":false}]`
	updated, changed := WithStatus(argocd.NewApplication(), Derive(Observe(work(2, 2, values)), v2))
	g.Expect(changed).To(BeTrue())
	resources, _, _ := unstructured.NestedSlice(updated.Object, "status", "resources")
	g.Expect(resources).To(Equal([]any{map[string]any{"version": "v1", "kind": "ConfigMap", "namespace": "guestbook", "name": "guestbook-ui",
		"status": "Synced", "health": map[string]any{"status": "Healthy"}, "syncWave": int64(-1)}}))

	// A hook is marked as Argo CD marks it (a boolean): the UI's sync panel leaves hooks out of
	// the resources it offers to sync.
	values[manifestwork.FeedbackResources] = `[{"version":"v1","kind":"ConfigMap","namespace":"guestbook","name":"presync","hook":true},{"version":"v1","kind":"ConfigMap","namespace":"guestbook","name":"ui","hook":"yes"}]`
	updated, _ = WithStatus(updated, Derive(Observe(work(2, 2, values)), v2))
	resources, _, _ = unstructured.NestedSlice(updated.Object, "status", "resources")
	g.Expect(resources).To(HaveLen(2))
	g.Expect(resources[0]).To(HaveKeyWithValue("hook", true))
	g.Expect(resources[1]).NotTo(HaveKey("hook"), "not a boolean: not Argo CD's")

	values[manifestwork.FeedbackResources] = `{"not":"a list"}`
	updated, _ = WithStatus(updated, Derive(Observe(work(2, 2, values)), v2))
	g.Expect(updated.Object["status"]).NotTo(HaveKey("resources"), "what does not parse is not copied")
	g.Expect(argocd.ConditionMessage(updated, FeedbackWarningCondition)).To(ContainSubstring("resources ignored: not a JSON list of objects"))
}

// argocd app sync reads status.operationState.syncResult of a finished operation (a nil one
// crashes it); a running operation has none.
func TestAFinishedOperationCarriesItsSyncResult(t *testing.T) {
	g := NewWithT(t)
	values := feedback("Healthy", "Synced", "v2")
	values[manifestwork.FeedbackPhase] = "Succeeded"
	values[manifestwork.FeedbackStartedAt] = "2026-11-25T10:00:00Z"
	values[manifestwork.FeedbackFinishedAt] = "2026-11-25T10:00:01Z"
	updated, _ := WithStatus(argocd.NewApplication(), Derive(Observe(work(2, 2, values)), v2))
	g.Expect(nested(updated, "status", "operationState", "syncResult", "revision")).To(Equal("sha-v2"))

	// A rollback (or sync --revision) synced another revision than the one the Application compares.
	values[manifestwork.FeedbackSyncResultRevision] = "sha-v1"
	updated, _ = WithStatus(updated, Derive(Observe(work(2, 2, values)), v2))
	g.Expect(nested(updated, "status", "operationState", "syncResult", "revision")).To(Equal("sha-v1"))
	g.Expect(nested(updated, "status", "sync", "revision")).To(Equal("sha-v2"))
	delete(values, manifestwork.FeedbackSyncResultRevision)

	values[manifestwork.FeedbackPhase] = "Running"
	delete(values, manifestwork.FeedbackFinishedAt)
	updated, _ = WithStatus(updated, Derive(Observe(work(2, 2, values)), v2))
	g.Expect(updated.Object["status"].(map[string]any)["operationState"]).NotTo(HaveKey("syncResult"))
}

// ObserveSync reads a RollingSync sibling by what the barrier compares (MemberOf), as Observe
// reads it, for every state a work can be in.
func TestObserveSyncReadsWhatObserveReads(t *testing.T) {
	revisions := work(2, 2, feedback("Healthy", "OutOfSync", "v2"))
	revisions.Status.ResourceStatus.Manifests[1].StatusFeedbacks.Values = append(revisions.Status.ResourceStatus.Manifests[1].StatusFeedbacks.Values,
		workv1.FeedbackValue{Name: manifestwork.FeedbackRevisions, Value: workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: ptr.To(`["abc","def"]`)}})
	works := map[string]*workv1.ManifestWork{
		"reported":         work(2, 2, feedback("Healthy", "Synced", "v2")),
		"OutOfSync":        work(2, 2, feedback("Progressing", "OutOfSync", "v3")),
		"not applied":      work(2, 1, feedback("Healthy", "Synced", "v1")),
		"never reported":   work(1, 0, nil),
		"no feedback":      work(2, 2, nil),
		"several sources":  revisions,
		"an overlong word": work(2, 2, feedback("Healthy", strings.Repeat("x", 2*MaxWordLength), "v2")),
	}
	for name, w := range works {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			full, light := Observe(w), ObserveSync(w)
			g.Expect(light.ContentApplied).To(Equal(full.ContentApplied))
			g.Expect(light.Health).To(Equal(full.Health))
			g.Expect(light.Sync).To(Equal(full.Sync))
			g.Expect(light.Revision).To(Equal(full.Revision))
			app := hubApp(argocd.SyncSynced, "v1")
			lightMember, _ := MemberOf(app, light)
			fullMember, _ := MemberOf(app, full)
			g.Expect(lightMember).To(Equal(fullMember))
			g.Expect(ReportedResources(w)).To(Equal(full.Resources), "ReportedResources reads what Observe reads")
		})
	}
}

// The feedback a rollout waits on is told from the bulk a commit brings.
func TestAnswers(t *testing.T) {
	withPhase := func(values map[string]string, phase string) map[string]string {
		values[manifestwork.FeedbackPhase] = phase
		return values
	}
	atRest := work(2, 2, feedback("Healthy", "Synced", "v1"))
	for name, tc := range map[string]struct {
		before, after *workv1.ManifestWork
		want          bool
	}{
		"a sync started":                       {work(3, 3, feedback("Healthy", "OutOfSync", "v2")), work(3, 3, withPhase(feedback("Healthy", "OutOfSync", "v2"), "Running")), true},
		"a sync ended":                         {work(3, 3, withPhase(feedback("Healthy", "OutOfSync", "v2"), "Running")), work(3, 3, withPhase(feedback("Healthy", "Synced", "v2"), "Succeeded")), true},
		"healthy again":                        {work(3, 3, withPhase(feedback("Progressing", "Synced", "v2"), "Succeeded")), work(3, 3, withPhase(feedback("Healthy", "Synced", "v2"), "Succeeded")), true},
		"synced without an operation":          {work(3, 3, feedback("Healthy", "OutOfSync", "v2")), work(3, 3, feedback("Healthy", "Synced", "v2")), true},
		"the first feedback":                   {work(1, 0, nil), work(1, 1, feedback("Healthy", "Synced", "v1")), true},
		"a commit: OutOfSync":                  {atRest, work(3, 3, feedback("Healthy", "OutOfSync", "v2")), false},
		"a commit: the new generation applied": {atRest, work(3, 3, feedback("Healthy", "Synced", "v1")), false},
		"nothing new":                          {atRest, atRest, false},
		"no feedback since":                    {atRest, work(3, 2, nil), false},
	} {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(Answers(tc.before, tc.after)).To(Equal(tc.want))
		})
	}
}

// The hub's resource tree is built from status.resources: an entry naming no object Kubernetes
// could hold, with a status Argo CD never writes, or listed twice, is dropped and counted, and
// the valid ones are kept.
func TestInvalidResourcesAreDroppedAndCounted(t *testing.T) {
	g := NewWithT(t)
	valid := `{"version":"v1","kind":"ConfigMap","namespace":"guestbook","name":"ui","status":"Synced","health":{"status":"Healthy"}}`
	rbac := `{"group":"rbac.authorization.k8s.io","version":"v1","kind":"ClusterRole","name":"system:guestbook"}`
	for name, entry := range map[string]string{
		"a name over 253 characters":     fmt.Sprintf(`{"version":"v1","kind":"ConfigMap","namespace":"guestbook","name":%q}`, strings.Repeat("n", 254)),
		"a name with a slash":            `{"version":"v1","kind":"ConfigMap","namespace":"guestbook","name":"../argocd/argocd-secret"}`,
		"a name with a newline":          `{"version":"v1","kind":"ConfigMap","namespace":"guestbook","name":"ui\nx"}`,
		"no name":                        `{"version":"v1","kind":"ConfigMap","namespace":"guestbook"}`,
		"no kind":                        `{"version":"v1","namespace":"guestbook","name":"ui2"}`,
		"a kind that is no kind":         `{"version":"v1","kind":"Config Map","namespace":"guestbook","name":"ui2"}`,
		"a namespace over 63 characters": fmt.Sprintf(`{"version":"v1","kind":"ConfigMap","namespace":%q,"name":"ui2"}`, strings.Repeat("n", 64)),
		"a group that is no group":       `{"group":"Apps!","version":"v1","kind":"Deployment","namespace":"guestbook","name":"ui2"}`,
		"a version that is no version":   `{"version":"V 1","kind":"ConfigMap","namespace":"guestbook","name":"ui2"}`,
		"a name that is not a string":    `{"version":"v1","kind":"ConfigMap","namespace":"guestbook","name":7}`,
		"an unknown health status":       `{"version":"v1","kind":"ConfigMap","namespace":"guestbook","name":"ui2","health":{"status":"Fabulous"}}`,
		"an unknown sync status":         `{"version":"v1","kind":"ConfigMap","namespace":"guestbook","name":"ui2","status":"Pending"}`,
		"a health that is no object":     `{"version":"v1","kind":"ConfigMap","namespace":"guestbook","name":"ui2","health":"Healthy"}`,
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			values := feedback("Healthy", "Synced", "v2")
			values[manifestwork.FeedbackResources] = "[" + valid + "," + entry + "," + rbac + "]"
			updated, _ := WithStatus(argocd.NewApplication(), Derive(Observe(work(2, 2, values)), v2))
			resources, _, _ := unstructured.NestedSlice(updated.Object, "status", "resources")
			g.Expect(resources).To(HaveLen(2), "the valid ones are kept")
			g.Expect(resources[1]).To(HaveKeyWithValue("name", "system:guestbook"), "an RBAC name is a Kubernetes name")
			g.Expect(argocd.ConditionMessage(updated, FeedbackWarningCondition)).To(ContainSubstring("resources: 1 invalid entries dropped (the first: "))
		})
	}

	values := feedback("Healthy", "Synced", "v2")
	values[manifestwork.FeedbackResources] = "[" + valid + "," + valid + "," + rbac + "]"
	updated, _ := WithStatus(argocd.NewApplication(), Derive(Observe(work(2, 2, values)), v2))
	resources, _, _ := unstructured.NestedSlice(updated.Object, "status", "resources")
	g.Expect(resources).To(HaveLen(2))
	g.Expect(argocd.ConditionMessage(updated, FeedbackWarningCondition)).To(ContainSubstring("resources: 1 entries listed twice dropped"))
}
