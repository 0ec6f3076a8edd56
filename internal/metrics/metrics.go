// Package metrics defines argocd-pull's own Prometheus metrics, served on the manager's metrics
// endpoint beside controller-runtime's. All names start with argocd_pull_; labels are few and of
// low cardinality (an operation, a status, and for the per-ApplicationSet gauges the
// ApplicationSet itself).
//
// Counters and latency histograms are updated by the controllers as they write. Everything that
// describes objects (how many Applications are propagated, how many clusters of an ApplicationSet
// are healthy) is read from the manager's cache when Prometheus scrapes, so it never goes stale
// and costs nothing between scrapes.
package metrics

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
)

// Write operations, the values of the operation label.
const (
	OpCreate = "create"
	OpUpdate = "update"
	OpDelete = "delete"
)

// latencyBuckets span an event-driven path (tens of milliseconds) to a throttled or paced one
// (tens of seconds).
var latencyBuckets = []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

var (
	// WorkWrites counts ManifestWork writes by operation.
	WorkWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "argocd_pull_manifestwork_writes_total",
		Help: "ManifestWorks written by the propagation controller, by operation (create, update, delete).",
	}, []string{"operation"})

	// ReportWrites counts MulticlusterApplicationSetReport writes by operation.
	ReportWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "argocd_pull_report_writes_total",
		Help: "MulticlusterApplicationSetReports written by the report controller, by operation (create, update, delete).",
	}, []string{"operation"})

	// PropagationLatency is the time from a hub Application change seen by the controller to its
	// ManifestWork written.
	PropagationLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "argocd_pull_propagation_latency_seconds",
		Help:    "Time from a pull-model Application change observed on the hub to its ManifestWork written.",
		Buckets: latencyBuckets,
	})

	// ReportLatency is the time from the first change behind a report update (feedback, an
	// Application, a cluster's availability) to the report written.
	ReportLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "argocd_pull_report_latency_seconds",
		Help:    "Time from the first change observed for an ApplicationSet (ManifestWork feedback, Application, cluster availability) to its MulticlusterApplicationSetReport written.",
		Buckets: latencyBuckets,
	})
)

var (
	propagatedDesc = prometheus.NewDesc("argocd_pull_propagated_applications",
		"Pull-model Applications that have a ManifestWork on the hub, read from the cache at scrape time.", nil, nil)
	clustersDesc = prometheus.NewDesc("argocd_pull_applicationset_clusters",
		"Clusters of a pull-model ApplicationSet by status (clusters, healthy, synced, notHealthy, notSynced, inProgress), from its MulticlusterApplicationSetReport in the cache at scrape time.",
		[]string{"namespace", "applicationset", "status"}, nil)
)

var (
	register  sync.Once
	collector = &cacheCollector{}
)

// Register adds argocd-pull's metrics to controller-runtime's registry (once per process) and
// points the scrape-time gauges at reader, normally the manager's cache. A later call (a new
// manager in the same process, as in tests) moves the gauges to its reader.
func Register(reader client.Reader) {
	register.Do(func() {
		ctrlmetrics.Registry.MustRegister(WorkWrites, ReportWrites, PropagationLatency, ReportLatency, collector)
	})
	collector.reader.Store(&reader)
}

// cacheCollector reads the gauges that describe objects from the cache when scraped.
type cacheCollector struct {
	reader atomic.Pointer[client.Reader]
}

func (c *cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- propagatedDesc
	ch <- clustersDesc
}

// scrapeTimeout bounds a scrape's cache reads (a cache that is not synced yet answers at once with
// an error; this guards the rest).
const scrapeTimeout = 5 * time.Second

func (c *cacheCollector) Collect(ch chan<- prometheus.Metric) {
	p := c.reader.Load()
	if p == nil {
		return
	}
	reader := *p
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()

	// A cache that cannot answer yet (not started or not synced: a scrape right after start)
	// yields no samples rather than failing the whole scrape with an invalid metric.
	works := &workv1.ManifestWorkList{}
	// The cache holds only argocd-pull's ManifestWorks; one per propagated Application.
	if err := reader.List(ctx, works); err == nil {
		ch <- prometheus.MustNewConstMetric(propagatedDesc, prometheus.GaugeValue, float64(len(works.Items)))
	}
	reports := &v1alpha1.MulticlusterApplicationSetReportList{}
	if err := reader.List(ctx, reports); err != nil {
		return
	}
	for _, s := range ApplicationSetSamples(reports.Items) {
		ch <- prometheus.MustNewConstMetric(clustersDesc, prometheus.GaugeValue, s.Value, s.Namespace, s.ApplicationSet, s.Status)
	}
}

// Sample is one value of the per-ApplicationSet gauge.
type Sample struct {
	Namespace, ApplicationSet, Status string
	Value                             float64
}

// ApplicationSetSamples turns reports into the per-ApplicationSet gauge's samples: one per
// summary count. A count the report does not hold (an unparsable string) is left out rather than
// reported as zero.
func ApplicationSetSamples(reports []v1alpha1.MulticlusterApplicationSetReport) []Sample {
	var out []Sample
	for i := range reports {
		r := &reports[i]
		if _, ours := r.Labels[api.HostingApplicationSetLabel]; !ours {
			continue
		}
		s := r.Statuses.Summary
		for _, kv := range []struct{ status, count string }{
			{"clusters", s.Clusters}, {"healthy", s.Healthy}, {"synced", s.Synced},
			{"notHealthy", s.NotHealthy}, {"notSynced", s.NotSynced}, {"inProgress", s.InProgress},
		} {
			n, err := strconv.ParseFloat(kv.count, 64)
			if err != nil {
				continue
			}
			out = append(out, Sample{Namespace: r.Namespace, ApplicationSet: r.Name, Status: kv.status, Value: n})
		}
	}
	return out
}

// Since tracks, per key, when the first change not yet written was observed, so that a write can
// report how long the change waited for it (queueing, coalescing, pacing and retries included).
type Since[K comparable] struct {
	mu    sync.Mutex
	first map[K]time.Time
}

// Observe records that a change of key was seen at now, unless an earlier one is still pending.
func (s *Since[K]) Observe(key K, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.first == nil {
		s.first = map[K]time.Time{}
	}
	if _, pending := s.first[key]; !pending {
		s.first[key] = now
	}
}

// Done forgets key's pending change and returns how long ago it was first seen; false when none
// was pending (a write nobody waited for, such as a periodic recheck).
func (s *Since[K]) Done(key K, now time.Time) (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.first[key]
	if !ok {
		return 0, false
	}
	delete(s.first, key)
	return now.Sub(at), true
}
