package metrics

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
)

func TestApplicationSetSamples(t *testing.T) {
	report := func(name string, labelled bool, s v1alpha1.ReportSummary) v1alpha1.MulticlusterApplicationSetReport {
		r := v1alpha1.MulticlusterApplicationSetReport{ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: name}}
		if labelled {
			r.Labels = map[string]string{api.HostingApplicationSetLabel: "argocd." + name}
		}
		r.Statuses.Summary = s
		return r
	}
	for name, tc := range map[string]struct {
		reports []v1alpha1.MulticlusterApplicationSetReport
		want    []Sample
	}{
		"the documents' example: every count": {
			reports: []v1alpha1.MulticlusterApplicationSetReport{report("guestbook", true, v1alpha1.ReportSummary{
				Clusters: "3", Healthy: "0", InProgress: "2", NotHealthy: "3", NotSynced: "1", Synced: "2"})},
			want: []Sample{
				{"argocd", "guestbook", "clusters", 3}, {"argocd", "guestbook", "healthy", 0}, {"argocd", "guestbook", "synced", 2},
				{"argocd", "guestbook", "notHealthy", 3}, {"argocd", "guestbook", "notSynced", 1}, {"argocd", "guestbook", "inProgress", 2},
			},
		},
		"a report argocd-pull did not write is not counted": {
			reports: []v1alpha1.MulticlusterApplicationSetReport{report("by-hand", false, v1alpha1.ReportSummary{Clusters: "3"})},
		},
		"a count that is not a number is left out, not reported as zero": {
			reports: []v1alpha1.MulticlusterApplicationSetReport{report("odd", true, v1alpha1.ReportSummary{Clusters: "2", Healthy: "two"})},
			want:    []Sample{{"argocd", "odd", "clusters", 2}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(ApplicationSetSamples(tc.reports)).To(Equal(tc.want))
		})
	}
}

func TestSinceKeepsTheFirstPendingChange(t *testing.T) {
	g := NewWithT(t)
	var s Since[string]
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	_, ok := s.Done("a", t0)
	g.Expect(ok).To(BeFalse(), "nothing pending")

	s.Observe("a", t0)
	s.Observe("a", t0.Add(time.Second)) // a later change rides with the first
	waited, ok := s.Done("a", t0.Add(3*time.Second))
	g.Expect(ok).To(BeTrue())
	g.Expect(waited).To(Equal(3 * time.Second))

	_, ok = s.Done("a", t0.Add(4*time.Second))
	g.Expect(ok).To(BeFalse(), "a write clears the pending change")
}

// notStarted answers like a manager's cache before it started.
type notStarted struct{}

func (notStarted) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("the cache is not started, can not read objects")
}

func (notStarted) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("the cache is not started, can not read objects")
}

// A scrape before the cache can answer still succeeds: the gauges are left out, never a failed
// scrape (which would hide every other metric too).
func TestScrapeBeforeTheCacheAnswers(t *testing.T) {
	g := NewWithT(t)
	c := &cacheCollector{}
	c.reader.Store(&scrapeSource{reader: notStarted{}, staleAfter: time.Minute})
	reg := prometheus.NewPedanticRegistry()
	g.Expect(reg.Register(c)).To(Succeed())
	families, err := reg.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(families).To(BeEmpty())
}

func TestStaleClusters(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	cluster := func(name string, available metav1.ConditionStatus) clusterv1.ManagedCluster {
		return clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: clusterv1.ManagedClusterStatus{
			Conditions: []metav1.Condition{{Type: clusterv1.ManagedClusterConditionAvailable, Status: available}}}}
	}
	work := func(cluster string, generation, applied int64, written time.Time) workv1.ManifestWork {
		w := workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: "w", Generation: generation,
			Annotations: map[string]string{api.WrittenAtAnnotation: written.Format(time.RFC3339)}}}
		if applied > 0 {
			w.Status.Conditions = []metav1.Condition{{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, ObservedGeneration: applied}}
		}
		return w
	}
	clusters := []clusterv1.ManagedCluster{cluster("fine", "True"), cluster("lost", "Unknown"), cluster("slow", "True"), cluster("busy", "True")}
	works := []workv1.ManifestWork{
		work("fine", 2, 2, now.Add(-time.Hour)),
		work("lost", 2, 2, now.Add(-time.Hour)),      // its cluster is not Available
		work("slow", 3, 2, now.Add(-10*time.Minute)), // not applied, written long ago
		work("slow", 1, 1, now.Add(-time.Hour)),      // counted once
		work("busy", 3, 2, now.Add(-10*time.Second)), // not applied yet, written a moment ago
		work("gone", 1, 1, now.Add(-time.Hour)),      // no ManagedCluster at all
	}
	g.Expect(StaleClusters(works, clusters, 5*time.Minute, now)).To(Equal(3))
}

func TestApplicationConditions(t *testing.T) {
	g := NewWithT(t)
	app := func(conditions ...map[string]any) unstructured.Unstructured {
		u := unstructured.Unstructured{Object: map[string]any{}}
		list := make([]any, len(conditions))
		for i, c := range conditions {
			list[i] = c
		}
		_ = unstructured.SetNestedSlice(u.Object, list, "status", "conditions")
		return u
	}
	refused, paused, waiting := ApplicationConditions([]unstructured.Unstructured{
		app(map[string]any{"type": api.PropagationErrorCondition, "message": "ManagedClusterNotFound: ManagedCluster x does not exist"}),
		app(map[string]any{"type": api.PropagationErrorCondition, "message": "ManagedClusterNotFound: y"}, map[string]any{"type": "SyncError", "message": "x"}),
		app(map[string]any{"type": api.PropagationErrorCondition, "message": "PayloadTooLarge: ..."}),
		app(map[string]any{"type": api.PausedCondition, "message": "delivery paused by the controller (x)"}),
		app(map[string]any{"type": api.WaitingCondition, "message": "not delivered yet: cluster c1 must first say ..."}),
		app(),
	})
	g.Expect(refused).To(Equal(map[string]int{"ManagedClusterNotFound": 2, "PayloadTooLarge": 1}))
	g.Expect(paused).To(Equal(1))
	g.Expect(waiting).To(Equal(1))
}

func TestRequestsAreNamedAsTheApiserverNamesThem(t *testing.T) {
	for _, tt := range []struct{ method, path, watch, verb, resource string }{
		{"PATCH", "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/guestbook", "", "patch", "applications"},
		{"PUT", "/apis/work.open-cluster-management.io/v1/namespaces/cluster1/manifestworks/w", "", "update", "manifestworks"},
		{"PATCH", "/apis/work.open-cluster-management.io/v1/namespaces/cluster1/manifestworks/w/status", "", "patch", "manifestworks/status"},
		{"POST", "/apis/events.k8s.io/v1/namespaces/argocd/events", "", "create", "events"},
		{"GET", "/api/v1/namespaces/argocd/secrets", "", "list", "secrets"},
		{"GET", "/api/v1/namespaces/argocd/secrets", "true", "watch", "secrets"},
		{"GET", "/apis/cluster.open-cluster-management.io/v1/managedclusters/c1", "", "get", "managedclusters"},
		{"GET", "/api/v1/namespaces/argocd", "", "get", "namespaces"},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/argocd/leases/argocd-pull", "", "update", "leases"},
	} {
		verb, resource, ok := RequestOf(tt.method, tt.path, tt.watch)
		if !ok || verb != tt.verb || resource != tt.resource {
			t.Errorf("%s %s: %q %q %v, want %q %q", tt.method, tt.path, verb, resource, ok, tt.verb, tt.resource)
		}
	}
	for _, path := range []string{"/healthz", "/apis", "/api/v1", "/apis/argoproj.io/v1alpha1"} {
		if _, _, ok := RequestOf("GET", path, ""); ok {
			t.Errorf("%s named as a resource's request", path)
		}
	}
}
