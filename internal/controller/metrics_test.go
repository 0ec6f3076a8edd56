package controller

import (
	"testing"

	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// metricSamples returns the samples of one metric family from the manager's registry.
func metricSamples(t testing.TB, name string) []*dto.Metric {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering metrics: %v", err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()
		}
	}
	return nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// sampleValue is the value of the sample of family name whose labels include want; -1 when
// there is none.
func sampleValue(t testing.TB, name string, want map[string]string) float64 {
	t.Helper()
next:
	for _, m := range metricSamples(t, name) {
		for k, v := range want {
			if label(m, k) != v {
				continue next
			}
		}
		switch {
		case m.GetCounter() != nil:
			return m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			return m.GetGauge().GetValue()
		case m.GetHistogram() != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	return -1
}

// The manager's metrics endpoint shows what the controllers wrote, how long changes waited, and
// per ApplicationSet the clusters' health and sync read from the cache at scrape time.
func TestMetricsFollowTheFleet(t *testing.T) {
	h := start(t)
	created := sampleValue(t, "argocd_pull_manifestwork_writes_total", map[string]string{"operation": "create"})
	propagations := sampleValue(t, "argocd_pull_propagation_latency_seconds", nil)
	reportLatencies := sampleValue(t, "argocd_pull_report_latency_seconds", nil)
	op := func(name string) map[string]string { return map[string]string{"operation": name} }
	reportsCreated := sampleValue(t, "argocd_pull_report_writes_total", op("create"))
	reportsUpdated := sampleValue(t, "argocd_pull_report_writes_total", op("update"))
	worksDeleted := sampleValue(t, "argocd_pull_manifestwork_writes_total", op("delete"))

	set := h.appSet("metrics")
	c1, c2 := h.cluster(), h.cluster()
	h.app("metrics-"+c1, c1, ownedBy(set))
	h.app("metrics-"+c2, c2, ownedBy(set))
	h.work("metrics-"+c1, c1)
	h.work("metrics-"+c2, c2)

	h.g.Expect(sampleValue(t, "argocd_pull_manifestwork_writes_total", map[string]string{"operation": "create"})).To(BeNumerically(">=", max(created, 0)+2))
	h.g.Expect(sampleValue(t, "argocd_pull_propagation_latency_seconds", nil)).To(BeNumerically(">=", max(propagations, 0)+2),
		"each work created observes how long its Application's change waited")
	h.g.Eventually(func() float64 { return sampleValue(t, "argocd_pull_propagated_applications", nil) }, timeout, interval).
		Should(BeNumerically(">=", 2), "read from the cache at scrape time")

	h.report("metrics-"+c1, c1, 1, feedback("Healthy", "Synced"))
	h.report("metrics-"+c2, c2, 1, feedback("Progressing", "OutOfSync"))
	appSet := map[string]string{"namespace": h.ns, "applicationset": "metrics"}
	gauge := func(status string) func() float64 {
		return func() float64 {
			return sampleValue(t, "argocd_pull_applicationset_clusters", map[string]string{"namespace": h.ns, "applicationset": "metrics", "status": status})
		}
	}
	// The gauges are read one at a time while the report may still change: wait for all of them at
	// once (reading each after the other raced with the report's next write).
	summary := func() []float64 {
		return []float64{gauge("clusters")(), gauge("healthy")(), gauge("synced")(), gauge("inProgress")(), gauge("notHealthy")()}
	}
	h.g.Eventually(summary, timeout, interval).Should(Equal([]float64{2, 1, 1, 1, 1}))
	h.g.Expect(sampleValue(t, "argocd_pull_report_latency_seconds", nil)).To(BeNumerically(">", max(reportLatencies, 0)),
		"a feedback change that reached the report observes how long it waited")
	h.g.Expect(sampleValue(t, "argocd_pull_report_writes_total", op("create"))).To(BeNumerically(">=", max(reportsCreated, 0)+1))
	// The report may have been created with both clusters' feedback in it: one more change is an update.
	h.report("metrics-"+c2, c2, 1, feedback("Healthy", "Synced"))
	h.g.Eventually(gauge("healthy"), timeout, interval).Should(Equal(2.0))
	h.g.Expect(sampleValue(t, "argocd_pull_report_writes_total", op("update"))).To(BeNumerically(">", max(reportsUpdated, 0)))

	// An Application without the resources finalizer goes: its work is deleted, and counted.
	h.g.Expect(h.c.Delete(t.Context(), h.getApp("metrics-"+c1))).To(Succeed())
	h.workGone("metrics-"+c1, c1)
	h.g.Eventually(func() float64 { return sampleValue(t, "argocd_pull_manifestwork_writes_total", op("delete")) }, timeout, interval).
		Should(BeNumerically(">=", max(worksDeleted, 0)+1))

	// A deleted ApplicationSet's gauges go with its report: nothing stale is scraped.
	h.g.Expect(h.c.Delete(t.Context(), set)).To(Succeed())
	h.g.Eventually(func() float64 { return sampleValue(t, "argocd_pull_applicationset_clusters", appSet) }, timeout, interval).Should(Equal(-1.0))
}
