package report

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

var now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func available(name string) *clusterv1.ManagedCluster {
	return &clusterv1.ManagedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: clusterv1.ManagedClusterStatus{Conditions: []metav1.Condition{{
			Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionTrue, Reason: "ManagedClusterAvailable"}}},
	}
}

// reported is a work applied at its generation with the given feedback; raw values are those of
// the list/object rules.
func reported(values map[string]string) *workv1.ManifestWork {
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Generation: 1}}
	w.Status.Conditions = []metav1.Condition{{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, ObservedGeneration: 1}}
	var fv []workv1.FeedbackValue
	for k, v := range values {
		val := workv1.FieldValue{Type: workv1.String, String: ptr.To(v)}
		if k == manifestwork.FeedbackResources || k == manifestwork.FeedbackConditions {
			val = workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: ptr.To(v)}
		}
		fv = append(fv, workv1.FeedbackValue{Name: k, Value: val})
	}
	w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
		ResourceMeta:    workv1.ManifestResourceMeta{Group: "argoproj.io", Kind: "Application"},
		StatusFeedbacks: workv1.StatusFeedbackResult{Values: fv},
	}}
	return w
}

func m(cluster string, work *workv1.ManifestWork) Member {
	return Member{Cluster: cluster, AppNamespace: "openshift-gitops", AppName: "guestbook-" + cluster, WorkName: "guestbook-" + cluster + "-1a2b3c4d",
		Work: work, ManagedCluster: available(cluster)}
}

const syncErrorMessage = `Failed sync attempt to 53e28ff20cc530b9ada2173fbbd64d48338583ba: one or more objects failed to apply, reason: services is forbidden: User "system:serviceaccount:openshift-gitops:openshift-gitops-argocd-application-controller" cannot create resource "services" in API group "" in the namespace "guestbook"`

// The documents' example: cluster1 failed to sync (forbidden), pcluster1 and pcluster2 are still
// Progressing.
func TestBuildReproducesTheDocumentsExample(t *testing.T) {
	g := NewWithT(t)
	out, _ := Build([]Member{
		m("pcluster2", reported(map[string]string{manifestwork.FeedbackHealth: "Progressing", manifestwork.FeedbackSync: "Synced"})),
		m("cluster1", reported(map[string]string{
			manifestwork.FeedbackHealth: "Missing", manifestwork.FeedbackSync: "OutOfSync",
			manifestwork.FeedbackConditions: mustJSON([]map[string]string{{"type": "SyncError", "message": syncErrorMessage, "lastTransitionTime": "2026-11-21T10:00:00Z"}}),
		})),
		m("pcluster1", reported(map[string]string{manifestwork.FeedbackHealth: "Progressing", manifestwork.FeedbackSync: "Synced"})),
	}, Options{Now: now})

	g.Expect(out.Summary).To(Equal(v1alpha1.ReportSummary{Clusters: "3", Healthy: "0", InProgress: "2", NotHealthy: "3", NotSynced: "1", Synced: "2"}))
	g.Expect(out.ClusterConditions).To(HaveLen(3))
	g.Expect([]string{out.ClusterConditions[0].Cluster, out.ClusterConditions[1].Cluster, out.ClusterConditions[2].Cluster}).To(Equal([]string{"cluster1", "pcluster1", "pcluster2"}))
	c1 := out.ClusterConditions[0]
	g.Expect(c1.HealthStatus).To(Equal("Missing"))
	g.Expect(c1.SyncStatus).To(Equal("OutOfSync"))
	g.Expect(c1.App).To(Equal("openshift-gitops/guestbook-cluster1/cluster1/guestbook-cluster1-1a2b3c4d"))
	g.Expect(c1.Conditions).To(Equal([]v1alpha1.Condition{{Type: "SyncError", Message: syncErrorMessage}}))
	g.Expect(out.ClusterConditions[1].Conditions).To(BeEmpty(), "as in the documents: Progressing with no message to show")
}

func TestSummarize(t *testing.T) {
	cc := func(health, sync string) v1alpha1.ClusterCondition {
		return v1alpha1.ClusterCondition{HealthStatus: health, SyncStatus: sync}
	}
	tests := map[string]struct {
		in   []v1alpha1.ClusterCondition
		want v1alpha1.ReportSummary
	}{
		"none":        {nil, v1alpha1.ReportSummary{Clusters: "0", Healthy: "0", InProgress: "0", NotHealthy: "0", NotSynced: "0", Synced: "0"}},
		"healthy":     {[]v1alpha1.ClusterCondition{cc("Healthy", "Synced")}, v1alpha1.ReportSummary{Clusters: "1", Healthy: "1", InProgress: "0", NotHealthy: "0", NotSynced: "0", Synced: "1"}},
		"progressing": {[]v1alpha1.ClusterCondition{cc("Progressing", "Synced")}, v1alpha1.ReportSummary{Clusters: "1", Healthy: "0", InProgress: "1", NotHealthy: "1", NotSynced: "0", Synced: "1"}},
		"degraded, unknown, suspended, missing": {
			[]v1alpha1.ClusterCondition{cc("Degraded", "OutOfSync"), cc("Unknown", "Unknown"), cc("Suspended", "Synced"), cc("Missing", "OutOfSync")},
			v1alpha1.ReportSummary{Clusters: "4", Healthy: "0", InProgress: "0", NotHealthy: "4", NotSynced: "3", Synced: "1"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(Summarize(tt.in)).To(Equal(tt.want))
		})
	}
}

func TestConditionsOnlyForClustersNotSyncedAndHealthy(t *testing.T) {
	g := NewWithT(t)
	failed := reported(map[string]string{
		manifestwork.FeedbackHealth: "Degraded", manifestwork.FeedbackSync: "Synced",
		manifestwork.FeedbackPhase: "Failed", manifestwork.FeedbackStartedAt: "2026-11-21T10:00:00Z",
		manifestwork.FeedbackMessage: strings.Repeat("é", 400),
	})
	healthy := reported(map[string]string{
		manifestwork.FeedbackHealth: "Healthy", manifestwork.FeedbackSync: "Synced",
		manifestwork.FeedbackConditions: mustJSON([]map[string]string{{"type": "SharedResourceWarning", "message": "ignored while healthy"}}),
	})
	out, _ := Build([]Member{m("a", failed), m("b", healthy)}, Options{Now: now})
	a, b := out.ClusterConditions[0], out.ClusterConditions[1]
	g.Expect(a.OperationStatePhase).To(Equal("Failed"))
	g.Expect(a.OperationStateStartedAt).To(Equal("2026-11-21T10:00:00Z"))
	g.Expect(a.Conditions).To(HaveLen(1))
	g.Expect(a.Conditions[0].Type).To(Equal(ConditionSyncError))
	g.Expect(len(a.Conditions[0].Message)).To(BeNumerically("<=", 512))
	g.Expect(a.Conditions[0].Message).To(HaveSuffix("..."))
	g.Expect(strings.ToValidUTF8(a.Conditions[0].Message, "?")).To(Equal(a.Conditions[0].Message), "not cut inside a character")
	g.Expect(b.Conditions).To(BeEmpty())
}

func TestRetriedSyncIsASyncError(t *testing.T) {
	g := NewWithT(t)
	// As Argo CD v3.2 words it.
	retrying := "one or more objects failed to apply, reason: ConfigMap \"guestbook-extra\" is invalid: data: Forbidden: field is immutable. Retrying attempt #4 at 2:52AM."
	out, _ := Build([]Member{
		m("a", reported(map[string]string{manifestwork.FeedbackHealth: "Healthy", manifestwork.FeedbackSync: "OutOfSync",
			manifestwork.FeedbackPhase: "Running", manifestwork.FeedbackStartedAt: "t", manifestwork.FeedbackMessage: retrying})),
		m("b", reported(map[string]string{manifestwork.FeedbackHealth: "Progressing", manifestwork.FeedbackSync: "OutOfSync",
			manifestwork.FeedbackPhase: "Running", manifestwork.FeedbackStartedAt: "t", manifestwork.FeedbackMessage: "one or more tasks are running"})),
	}, Options{Now: now})
	g.Expect(out.ClusterConditions[0].Conditions).To(Equal([]v1alpha1.Condition{{Type: ConditionSyncError, Message: retrying}}))
	g.Expect(out.ClusterConditions[1].Conditions).To(BeEmpty(), "a sync in progress is not an error")
}

func TestConditionListIsCapped(t *testing.T) {
	g := NewWithT(t)
	var many []map[string]string
	for i := range 9 {
		many = append(many, map[string]string{"type": fmt.Sprintf("Error%d", i), "message": "m"})
	}
	out, _ := Build([]Member{m("a", reported(map[string]string{manifestwork.FeedbackHealth: "Degraded", manifestwork.FeedbackSync: "OutOfSync",
		manifestwork.FeedbackConditions: mustJSON(many)}))}, Options{Now: now})
	conds := out.ClusterConditions[0].Conditions
	g.Expect(conds).To(HaveLen(5))
	g.Expect(conds[4]).To(Equal(v1alpha1.Condition{Type: "More", Message: "5 more conditions not shown"}))
}

func TestResourcesAreDeployedOnesDeduplicated(t *testing.T) {
	g := NewWithT(t)
	resources := func(extra ...map[string]any) string {
		list := []map[string]any{
			{"version": "v1", "kind": "Service", "namespace": "guestbook", "name": "guestbook-ui", "status": "Synced", "health": map[string]any{"status": "Healthy"}},
			{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "guestbook", "name": "guestbook-ui", "status": "OutOfSync", "health": map[string]any{"status": "Progressing"}},
		}
		list = append(list, extra...)
		return mustJSON(list)
	}
	failedToDeploy := map[string]any{"version": "v1", "kind": "ConfigMap", "namespace": "guestbook", "name": "forbidden", "status": "OutOfSync", "health": map[string]any{"status": "Missing"}}
	out, _ := Build([]Member{
		m("a", reported(map[string]string{manifestwork.FeedbackHealth: "Healthy", manifestwork.FeedbackSync: "Synced", manifestwork.FeedbackResources: resources()})),
		m("b", reported(map[string]string{manifestwork.FeedbackHealth: "Degraded", manifestwork.FeedbackSync: "OutOfSync", manifestwork.FeedbackResources: resources(failedToDeploy)})),
	}, Options{Now: now})
	g.Expect(out.Resources).To(Equal([]v1alpha1.ResourceRef{
		{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui"},
		{APIVersion: "v1", Kind: "Service", Namespace: "guestbook", Name: "guestbook-ui"},
	}))
	g.Expect(out.Notes).To(BeEmpty())
}

func TestMissingResourceFeedbackIsExplained(t *testing.T) {
	g := NewWithT(t)
	out, _ := Build([]Member{
		m("a", reported(map[string]string{manifestwork.FeedbackHealth: "Healthy", manifestwork.FeedbackSync: "Synced"})),
		m("b", nil), // not propagated yet: nothing expected from it
	}, Options{Now: now})
	g.Expect(out.Resources).To(BeEmpty())
	g.Expect(out.Notes).To(ConsistOf(ContainSubstring("resources unknown for 1 of 2 clusters")))
}

func TestSearchFillsWhatFeedbackLacks(t *testing.T) {
	g := NewWithT(t)
	searched := m("a", reported(map[string]string{manifestwork.FeedbackHealth: "Degraded", manifestwork.FeedbackSync: "OutOfSync",
		manifestwork.FeedbackConditions: mustJSON([]map[string]string{{"type": "SyncError", "message": "from feedback"}})}))
	searched.Searched = true
	searched.SearchResources = []v1alpha1.ResourceRef{{APIVersion: "v1", Kind: "Service", Name: "ui", Namespace: "guestbook"}}
	searched.SearchConditions = []v1alpha1.Condition{{Type: "SyncError", Message: "from search"}, {Type: "SharedResourceWarning", Message: "shared"}}
	out, _ := Build([]Member{searched}, Options{Now: now})
	g.Expect(out.Resources).To(Equal(searched.SearchResources))
	g.Expect(out.ClusterConditions[0].Conditions).To(Equal([]v1alpha1.Condition{
		{Type: "SyncError", Message: "from feedback"}, {Type: "SharedResourceWarning", Message: "shared"},
	}), "feedback wins for a type both have")
	g.Expect(out.Notes).To(BeEmpty(), "Search answered for the resources")
}

func TestStaleClusters(t *testing.T) {
	healthy := map[string]string{manifestwork.FeedbackHealth: "Healthy", manifestwork.FeedbackSync: "Synced", manifestwork.FeedbackRevision: "abc"}
	down := available("down")
	down.Status.Conditions[0].Status = metav1.ConditionUnknown
	down.Status.Conditions[0].Reason = "ManagedClusterLeaseUpdateStopped"
	down.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-10 * time.Minute))

	notApplied := reported(healthy)
	notApplied.Generation = 2
	// A refresh written at generation 2 over generation 1's content: not applied either.
	refreshNotApplied := reported(healthy)
	refreshNotApplied.Generation = 2
	refreshNotApplied.Annotations = map[string]string{api.RequestsOnlyAnnotation: "1/2"}

	tests := map[string]struct {
		member  Member
		health  string
		message string
		recheck time.Time
	}{
		"available and current": {member: m("up", reported(healthy)), health: "Healthy"},
		"cluster not available": {
			member: func() Member { x := m("down", reported(healthy)); x.ManagedCluster = down; return x }(),
			health: "Unknown", message: "no status from down since 2026-11-21T11:50:00Z: the ManagedCluster is not available (ManagedClusterLeaseUpdateStopped)",
		},
		"work not applied within the window": {
			member: func() Member { x := m("slow", notApplied); x.WorkWrittenAt = now.Add(-6 * time.Minute); return x }(),
			health: "Unknown", message: "no status from slow since 2026-11-21T11:54:00Z: its work agent has not applied the ManifestWork written then",
		},
		"a request not applied within the window": {
			member: func() Member {
				x := m("refresh", refreshNotApplied)
				x.WorkWrittenAt = now.Add(-6 * time.Minute)
				return x
			}(),
			health: "Unknown", message: "no status from refresh since 2026-11-21T11:54:00Z: its work agent has not applied the ManifestWork written then",
		},
		"a request not applied, window not over": {
			member: func() Member { x := m("refresh", refreshNotApplied); x.WorkWrittenAt = now.Add(-time.Minute); return x }(),
			health: "Healthy", recheck: now.Add(4 * time.Minute),
		},
		"work not applied, window not over": {
			member: func() Member { x := m("soon", notApplied); x.WorkWrittenAt = now.Add(-time.Minute); return x }(),
			health: "Progressing", recheck: now.Add(4 * time.Minute),
		},
		"cluster gone": {
			member: func() Member { x := m("gone", reported(healthy)); x.ManagedCluster = nil; return x }(),
			health: "Unknown", message: "ManagedCluster gone does not exist on the hub",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			out, recheck := Build([]Member{tt.member}, Options{Now: now, StaleAfter: 5 * time.Minute})
			cc := out.ClusterConditions[0]
			g.Expect(cc.HealthStatus).To(Equal(tt.health))
			g.Expect(recheck).To(Equal(tt.recheck))
			if tt.message == "" {
				g.Expect(cc.Conditions).NotTo(ContainElement(HaveField("Type", ConditionStale)))
				return
			}
			g.Expect(cc.SyncRevision).To(Equal("abc"), "the last known revision is kept")
			g.Expect(cc.Conditions).To(ContainElement(v1alpha1.Condition{Type: ConditionStale, Message: tt.message}))
		})
	}
}

func TestBoundedAtFiveThousandClusters(t *testing.T) {
	// The benchmark's resources: each cluster reports a Deployment and a Service.
	resources := `[{"group":"apps","version":"v1","kind":"Deployment","namespace":"guestbook","name":"guestbook-ui","status":"Synced","health":{"status":"Healthy"}},` +
		`{"version":"v1","kind":"Service","namespace":"guestbook","name":"guestbook-ui","status":"Synced","health":{"status":"Healthy"}}]`
	tests := map[string]struct {
		unhealthyEvery int
		extra          map[string]string
	}{
		"all healthy":                       {0, nil},
		"all healthy, with their resources": {0, map[string]string{manifestwork.FeedbackResources: resources}},
		"one in ten failing":                {10, nil},
		"every cluster failing":             {1, nil},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			out, _ := Build(fleet(5000, tt.unhealthyEvery, tt.extra), Options{Now: now})
			data, err := json.Marshal(out)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(len(data)).To(BeNumerically("<=", 768*1024), "well under etcd's 1.5 MiB")
			g.Expect(out.Summary.Clusters).To(Equal("5000"), "the summary counts every cluster")
			if tt.unhealthyEvery == 0 {
				g.Expect(out.Summary.Healthy).To(Equal("5000"))
			}
			if len(out.ClusterConditions) < 5000 || strings.Contains(string(data), "omitted") {
				g.Expect(out.Notes).NotTo(BeEmpty(), "cuts are said")
			}
			t.Logf("%d clusters listed, %d bytes, notes: %q", len(out.ClusterConditions), len(data), out.Notes)
		})
	}
}

// fleet is n members of one ApplicationSet, Synced and Healthy but every failingEvery-th (when
// positive), which failed to sync with the documents' error; extra feedback goes to every member.
func fleet(n, failingEvery int, extra map[string]string) []Member {
	members := make([]Member, 0, n)
	for i := range n {
		cluster := fmt.Sprintf("cluster-%04d", i)
		values := map[string]string{
			manifestwork.FeedbackHealth: "Healthy", manifestwork.FeedbackSync: "Synced",
			manifestwork.FeedbackRevision: "53e28ff20cc530b9ada2173fbbd64d48338583ba",
			manifestwork.FeedbackPhase:    "Succeeded", manifestwork.FeedbackStartedAt: "2026-11-21T10:00:00Z",
		}
		maps.Copy(values, extra)
		if failingEvery > 0 && i%failingEvery == 0 {
			values[manifestwork.FeedbackHealth], values[manifestwork.FeedbackSync] = "Degraded", "OutOfSync"
			values[manifestwork.FeedbackPhase], values[manifestwork.FeedbackMessage] = "Failed", syncErrorMessage
		}
		x := m(cluster, reported(values))
		x.AppName = "guestbook-allclusters-app-set-" + cluster
		x.WorkName = x.AppName + "-1a2b3c4d"
		members = append(members, x)
	}
	return members
}

func mustJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(data)
}
