package metrics

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	var reader client.Reader = notStarted{}
	c.reader.Store(&reader)
	reg := prometheus.NewPedanticRegistry()
	g.Expect(reg.Register(c)).To(Succeed())
	families, err := reg.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(families).To(BeEmpty())
}
