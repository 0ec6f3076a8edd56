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
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

// Write operations, the values of the operation label.
const (
	OpCreate = "create"
	OpUpdate = "update"
	OpDelete = "delete"

	// The steps of a takeover (Takeovers).
	TakeoverReleased = "released"
	TakeoverAdopted  = "adopted"

	// The rebuilds of a report (ReportEntriesComputed).
	RebuildFull   = "full"
	RebuildMember = "member"
)

// latencyBuckets span an event-driven path (tens of milliseconds) to a throttled or paced one
// (tens of seconds).
var latencyBuckets = []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// The sources of a tree (TreeWrites' source label): what the cluster reports (the display tree,
// internal/resourcetree), or the cluster's own objects (internal/resourceviews).
const (
	TreeSourceDisplay = "display"
	TreeSourceCluster = "cluster"
)

// The results of a cluster's probe (ClusterProbes' result label).
const (
	ProbeAnswered = "answered"
	ProbeFailed   = "failed"
)

var (
	// WorkWrites counts ManifestWork writes by operation.
	WorkWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "argocd_pull_manifestwork_writes_total",
		Help: "ManifestWorks written by the propagation controller, by operation (create, update, delete).",
	}, []string{"operation"})

	// Takeovers counts the steps of taking Applications over from the upstream pull controllers:
	// their works released, and deleted once the Application is argocd-pull's.
	Takeovers = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "argocd_pull_takeover_steps_total",
		Help: "Upstream pull-model ManifestWorks taken over, by step (released: the managed-cluster Application orphaned by it; adopted: it is deleted and argocd-pull's work alone delivers the Application).",
	}, []string{"step"})

	// ReportWrites counts MulticlusterApplicationSetReport writes by operation.
	ReportWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "argocd_pull_report_writes_total",
		Help: "MulticlusterApplicationSetReports written by the report controller, by operation (create, update, delete).",
	}, []string{"operation"})

	// ReportEntriesComputed counts the report entries computed from a member's Application, work and
	// cluster, by rebuild: full (every member, at a report's first rebuild after a start) or
	// member (one changed member).
	ReportEntriesComputed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "argocd_pull_report_entries_computed_total",
		Help: "Cluster entries of MulticlusterApplicationSetReports computed from their Application, ManifestWork and ManagedCluster, by rebuild: full (every member of a report, at its first rebuild after a start) or member (a changed member).",
	}, []string{"rebuild"})

	// TreeWrites counts the resource-tree writes to the hub Argo CD's redis (internal/resourcetree).
	TreeWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "argocd_pull_resource_tree_writes_total",
		Help: "Resource trees written to the hub Argo CD's cache, by operation (put: a changed tree; renew: an unchanged one before its TTL ends; delete), result (ok, error) and source (display: what the cluster reports; cluster: the cluster's own objects, read through OCM's channel; empty for a delete).",
	}, []string{"operation", "result", "source"})

	// ManagedResourcesWrites counts the managed-resources writes to the hub Argo CD's redis, made
	// beside the trees read from the cluster (internal/resourceviews).
	ManagedResourcesWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "argocd_pull_managed_resources_writes_total",
		Help: "Managed resources (each resource's live state from its cluster, and its diff from Git) written to the hub Argo CD's cache with a tree read from the cluster, by operation (put, renew, delete) and result (ok, error).",
	}, []string{"operation", "result"})

	// ClusterTreeReads counts the requests made to managed clusters through OCM's channel to read
	// their own trees (internal/resourceviews).
	ClusterTreeReads = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "argocd_pull_cluster_tree_reads_total",
		Help: "Requests made to managed clusters through OCM's channel (cluster-proxy, as the managed-serviceaccount) to read the cluster's own resource tree of an Application.",
	})

	// ClusterProbes counts the probes of the clusters whose own trees the hub holds (one request
	// each through OCM's channel, internal/resourceviews.Probe), by result.
	ClusterProbes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "argocd_pull_cluster_probes_total",
		Help: "Probes of the managed clusters whose own resource trees the hub holds, one GET /api each through OCM's channel with the cluster secret's token (--cluster-probe-interval), by result (answered; failed: the cluster's trees turned to the display tree).",
	}, []string{"result"})

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

// ReportWriteErrors counts report writes the apiserver refused (conflicts, which are retried
// at once, excepted): a report that cannot be written freezes what a fleet shows.
var ReportWriteErrors = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "argocd_pull_report_write_errors_total",
	Help: "MulticlusterApplicationSetReport writes that failed (conflicts excepted).",
})

var (
	refusedDesc = prometheus.NewDesc("argocd_pull_refused_applications",
		"Pull-model Applications the hub does not deliver, by the reason of their PullPropagationError condition, read from the cache at scrape time.",
		[]string{"reason"}, nil)
	pausedDesc = prometheus.NewDesc("argocd_pull_paused_applications",
		"Pull-model Applications whose delivery is paused (PullPausedWarning condition), read from the cache at scrape time.", nil, nil)
	waitingDesc = prometheus.NewDesc("argocd_pull_waiting_applications",
		"New pull-model Applications that waited longer than --stale-after for their cluster to answer its claim probe, or whose cluster is not Available (PullWaitingWarning condition), read from the cache at scrape time.", nil, nil)
	staleDesc = prometheus.NewDesc("argocd_pull_stale_clusters",
		"Managed clusters with a ManifestWork of argocd-pull whose status is stale: the cluster is not Available, or has not applied a work written longer ago than --stale-after. Read from the cache at scrape time.", nil, nil)
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
// points the scrape-time gauges at reader, normally the manager's cache; staleAfter is the
// controller's --stale-after. A later call (a new manager in the same process, as in tests) moves
// the gauges to its reader.
func Register(reader client.Reader, staleAfter time.Duration) {
	register.Do(func() {
		ctrlmetrics.Registry.MustRegister(WorkWrites, Takeovers, ReportWrites, ReportEntriesComputed, APIRequests, TreeWrites, ManagedResourcesWrites, ClusterTreeReads, ClusterProbes, ReportWriteErrors, PropagationLatency, ReportLatency, collector)
		// Every operation is exported from the start, at 0: rate() and alerts see a series
		// before the first write.
		for _, op := range []string{OpCreate, OpUpdate, OpDelete} {
			WorkWrites.WithLabelValues(op)
			ReportWrites.WithLabelValues(op)
		}
		ReportEntriesComputed.WithLabelValues(RebuildFull)
		ReportEntriesComputed.WithLabelValues(RebuildMember)
		Takeovers.WithLabelValues(TakeoverReleased)
		Takeovers.WithLabelValues(TakeoverAdopted)
		ClusterProbes.WithLabelValues(ProbeAnswered)
		ClusterProbes.WithLabelValues(ProbeFailed)
		for _, result := range []string{"ok", "error"} {
			for _, op := range []string{"put", "renew"} {
				TreeWrites.WithLabelValues(op, result, TreeSourceDisplay)
				TreeWrites.WithLabelValues(op, result, TreeSourceCluster)
			}
			TreeWrites.WithLabelValues("delete", result, "")
			for _, op := range []string{"put", "renew", "delete"} {
				ManagedResourcesWrites.WithLabelValues(op, result)
			}
		}
	})
	collector.reader.Store(&scrapeSource{reader: reader, staleAfter: staleAfter})
}

type scrapeSource struct {
	reader     client.Reader
	staleAfter time.Duration
}

// cacheCollector reads the gauges that describe objects from the cache when scraped.
type cacheCollector struct {
	reader atomic.Pointer[scrapeSource]
}

func (c *cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- propagatedDesc
	ch <- clustersDesc
	ch <- refusedDesc
	ch <- pausedDesc
	ch <- waitingDesc
	ch <- staleDesc
}

// scrapeTimeout bounds a scrape's cache reads (a cache that is not synced yet answers at once with
// an error; this guards the rest).
const scrapeTimeout = 5 * time.Second

func (c *cacheCollector) Collect(ch chan<- prometheus.Metric) {
	src := c.reader.Load()
	if src == nil {
		return
	}
	reader := src.reader
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()

	// A cache that cannot answer yet (not started or not synced: a scrape right after start)
	// yields no samples rather than failing the whole scrape with an invalid metric.
	works := &workv1.ManifestWorkList{}
	// The cache holds only argocd-pull's ManifestWorks; one per propagated Application.
	if err := reader.List(ctx, works, client.UnsafeDisableDeepCopy); err == nil {
		ch <- prometheus.MustNewConstMetric(propagatedDesc, prometheus.GaugeValue, float64(len(works.Items)))
		clusters := &clusterv1.ManagedClusterList{}
		if err := reader.List(ctx, clusters, client.UnsafeDisableDeepCopy); err == nil {
			ch <- prometheus.MustNewConstMetric(staleDesc, prometheus.GaugeValue, float64(StaleClusters(works.Items, clusters.Items, src.staleAfter, time.Now())))
		}
	}
	apps := &unstructured.UnstructuredList{}
	apps.SetGroupVersionKind(argocd.ApplicationGVK.GroupVersion().WithKind("ApplicationList"))
	if err := reader.List(ctx, apps, client.UnsafeDisableDeepCopy); err == nil {
		refused, paused, waiting := ApplicationConditions(apps.Items)
		for reason, n := range refused {
			ch <- prometheus.MustNewConstMetric(refusedDesc, prometheus.GaugeValue, float64(n), reason)
		}
		ch <- prometheus.MustNewConstMetric(pausedDesc, prometheus.GaugeValue, float64(paused))
		ch <- prometheus.MustNewConstMetric(waitingDesc, prometheus.GaugeValue, float64(waiting))
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

// ApplicationConditions counts the Applications refused, by reason (the message's prefix up to
// ":"), those paused, and those waiting too long for their cluster's answer.
func ApplicationConditions(apps []unstructured.Unstructured) (refused map[string]int, paused, waiting int) {
	refused = map[string]int{}
	for i := range apps {
		conditions, _, _ := unstructured.NestedSlice(apps[i].Object, "status", "conditions")
		for _, c := range conditions {
			m, _ := c.(map[string]any)
			msg, _ := m["message"].(string)
			switch m["type"] {
			case api.PropagationErrorCondition:
				reason, _, _ := strings.Cut(msg, ":")
				refused[reason]++
			case api.PausedCondition:
				paused++
			case api.WaitingCondition:
				waiting++
			}
		}
	}
	return refused, paused, waiting
}

// StaleClusters counts the clusters with a work whose status is stale at now: the ManagedCluster
// is missing or not Available, or the work is not applied at its generation though written more
// than staleAfter ago (the report's rule, per cluster).
func StaleClusters(works []workv1.ManifestWork, clusters []clusterv1.ManagedCluster, staleAfter time.Duration, now time.Time) int {
	available := make(map[string]bool, len(clusters))
	for _, c := range clusters {
		available[c.Name] = meta.IsStatusConditionTrue(c.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)
	}
	stale := map[string]bool{}
	for i := range works {
		w := &works[i]
		if stale[w.Namespace] {
			continue
		}
		if !available[w.Namespace] {
			stale[w.Namespace] = true
			continue
		}
		if manifestwork.AppliedAtGeneration(w) {
			continue
		}
		if written, ok := manifestwork.WrittenAt(w); ok && now.Sub(written) > staleAfter {
			stale[w.Namespace] = true
		}
	}
	return len(stale)
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
