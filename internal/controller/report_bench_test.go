package controller

import (
	"fmt"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

// BenchmarkFeedbackToReport measures the time from a feedback change written on a ManifestWork
// (as the work agent writes it) to the report showing it, over 100 changes spread over 10
// clusters, with the real manager and apiserver. Run it with -benchtime=1x: one run is the 100
// changes.
//
//	go test -run '^$' -bench FeedbackToReport -benchtime=1x ./internal/controller
func BenchmarkFeedbackToReport(b *testing.B) {
	const clusters, changes = 10, 100
	h := start(b)
	set := h.appSet("latency")
	var names []string
	for range clusters {
		c := h.cluster()
		names = append(names, c)
		h.app("latency-"+c, c, ownedBy(set))
		h.work("latency-"+c, c)
	}
	h.g.Eventually(func() string { return h.summary("latency").Clusters }, timeout, interval).Should(Equal(fmt.Sprint(clusters)))

	revisionIn := func(cluster string) string {
		r, err := h.getReport("latency")
		if err != nil {
			return ""
		}
		for _, cc := range r.Statuses.ClusterConditions {
			if cc.Cluster == cluster {
				return cc.SyncRevision
			}
		}
		return ""
	}
	var latencies []time.Duration
	for range b.N {
		for i := range changes {
			c := names[i%clusters]
			rev := fmt.Sprintf("rev-%d", i)
			h.report("latency-"+c, c, 1, map[string]string{manifestwork.FeedbackHealth: "Healthy", manifestwork.FeedbackSync: "Synced", manifestwork.FeedbackRevision: rev})
			written := time.Now()
			for revisionIn(c) != rev {
				if time.Since(written) > timeout {
					b.Fatalf("change %d did not reach the report within %s", i, timeout)
				}
				time.Sleep(2 * time.Millisecond)
			}
			latencies = append(latencies, time.Since(written))
		}
	}
	slices.Sort(latencies)
	pct := func(p float64) time.Duration { return latencies[int(p*float64(len(latencies)-1))] }
	b.ReportMetric(float64(pct(0.5).Milliseconds()), "p50-ms")
	b.ReportMetric(float64(pct(0.9).Milliseconds()), "p90-ms")
	b.ReportMetric(float64(pct(0.99).Milliseconds()), "p99-ms")
	b.Logf("feedback -> report over %d changes: p50 %s, p90 %s, p99 %s, max %s (coalescing delay %s, poll resolution 2ms)",
		len(latencies), pct(0.5), pct(0.9), pct(0.99), latencies[len(latencies)-1], DefaultOptions().ReportCoalesce)
}
