package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
	"github.com/argocd-pull/argocd-pull/internal/appstatus"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

// reportAsStrings writes work status as a compromised work agent could: every feedback value as a
// String, which the ManifestWork CRD does not bound (it bounds JsonRaw values to 1024 bytes).
func (h *harness) reportAsStrings(name, cluster string, values map[string]string) {
	h.t.Helper()
	h.g.Eventually(func() error {
		w := &workv1.ManifestWork{}
		if err := h.c.Get(context.Background(), workKey(h.ns, name, cluster), w); err != nil {
			return err
		}
		testenv.SetAgentStatus(w, w.Generation, h.ns, name, values)
		for i, v := range w.Status.ResourceStatus.Manifests[0].StatusFeedbacks.Values {
			w.Status.ResourceStatus.Manifests[0].StatusFeedbacks.Values[i].Value = workv1.FieldValue{Type: workv1.String, String: ptr.To(values[v.Name])}
		}
		return h.c.Status().Update(context.Background(), w)
	}, timeout, interval).Should(Succeed())
}

// resourceList is a valid .status.resources of about 1.3 MB: ConfigMaps with 4 KB names.
func resourceList(prefix string) string {
	var list []map[string]any
	for i := range 1_300_000 / 4096 {
		list = append(list, map[string]any{"version": "v1", "kind": "ConfigMap", "namespace": "guestbook",
			"name": fmt.Sprintf("%s-%04d-%s", prefix, i, strings.Repeat("x", 4096)), "status": "Synced"})
	}
	data, _ := json.Marshal(list)
	return string(data)
}

// A compromised managed cluster, which hosts three Applications of an ApplicationSet (as a matrix
// generator makes), writes a 1 MiB operation message and two 1.3 MB resource lists into its works'
// status. Copied as they were, the report shared with a healthy cluster would pass etcd's request
// limit and never change again. The hub Application gets a value cut with a marker, and the
// report keeps following the healthy cluster and says what it cut.
func TestACompromisedClusterCannotFreezeTheReport(t *testing.T) {
	h := start(t)
	set := h.appSet("web")
	good, bad := h.cluster(), h.cluster()
	for _, app := range []struct{ name, cluster string }{{"web-" + good, good}, {"web-" + bad, bad}, {"api-" + bad, bad}, {"db-" + bad, bad}} {
		h.app(app.name, app.cluster, ownedBy(set))
		h.work(app.name, app.cluster)
	}
	h.report("web-"+good, good, h.work("web-"+good, good).Generation, feedback("Healthy", "Synced"))
	h.g.Eventually(func() string { return h.summary("web").Healthy }, timeout, interval).Should(Equal("1"))

	failed := feedback("Degraded", "OutOfSync")
	failed[manifestwork.FeedbackPhase] = "Failed"
	failed[manifestwork.FeedbackStartedAt] = "2026-11-21T10:00:00Z"
	failed[manifestwork.FeedbackMessage] = strings.Repeat("m", 1<<20)
	h.reportAsStrings("web-"+bad, bad, failed)
	for _, app := range []string{"api-" + bad, "db-" + bad} {
		values := feedback("Degraded", "OutOfSync")
		values[manifestwork.FeedbackResources] = resourceList(app)
		h.reportAsStrings(app, bad, values)
	}

	// The healthy cluster changes later: the report follows.
	later := feedback("Degraded", "OutOfSync")
	later[manifestwork.FeedbackRevision] = "9f1c2a7e"
	h.report("web-"+good, good, h.work("web-"+good, good).Generation, later)
	h.g.Eventually(func() []v1alpha1.ClusterCondition {
		r, _ := h.getReport("web")
		return r.Statuses.ClusterConditions
	}, timeout, interval).Should(ContainElement(And(HaveField("Cluster", good), HaveField("HealthStatus", "Degraded"), HaveField("SyncRevision", "9f1c2a7e"))),
		"the report keeps following the healthy cluster")
	h.g.Eventually(func() v1alpha1.ReportSummary { return h.summary("web") }, timeout, interval).Should(Equal(
		v1alpha1.ReportSummary{Clusters: "4", Healthy: "0", InProgress: "0", NotHealthy: "4", NotSynced: "4", Synced: "0"}))
	r, err := h.getReport("web")
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(r.Statuses.Notes).To(ContainElement(And(ContainSubstring(bad), ContainSubstring("cut"))), "the report says it cut the cluster's feedback")
	data, err := json.Marshal(r)
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(len(data)).To(BeNumerically("<", 768*1024+16*1024), "the report's budget, and its metadata")
	t.Logf("report of %d bytes, notes: %q", len(data), r.Statuses.Notes)

	// The hub Application gets the message cut, marked, and a condition saying why.
	h.g.Eventually(func() string { return statusField(h.getApp("web-"+bad), "operationState", "message") }, timeout, interval).Should(
		HaveSuffix(fmt.Sprintf("[cut from %d bytes]", 1<<20)))
	app := h.getApp("web-" + bad)
	h.g.Expect(len(statusField(app, "operationState", "message"))).To(BeNumerically("<=", appstatus.MaxMessageLength))
	conditions, _, _ := unstructured.NestedSlice(app.Object, "status", "conditions")
	h.g.Expect(conditions).To(ContainElement(And(HaveKeyWithValue("type", appstatus.FeedbackWarningCondition),
		HaveKeyWithValue("message", ContainSubstring(manifestwork.FeedbackMessage)))))
}

// Feedback that does not parse (an operation and a revision list that are not JSON) or holds
// terminal control sequences: the hub Application gets what parses, a PullFeedbackWarning
// condition says what was ignored, and the report's entry for the cluster says it too.
func TestMalformedFeedbackIsIgnoredWithAWarning(t *testing.T) {
	h := start(t)
	set := h.appSet("web")
	cluster := h.cluster()
	name := "web-" + cluster
	h.app(name, cluster, ownedBy(set))
	h.work(name, cluster)
	values := feedback("Degraded", "OutOfSync")
	delete(values, manifestwork.FeedbackRevision)
	values[manifestwork.FeedbackRevisions] = `["53e28ff2", 1`
	values[manifestwork.FeedbackPhase] = "Failed"
	values[manifestwork.FeedbackStartedAt] = "2026-11-21T10:00:00Z"
	values[manifestwork.FeedbackOperation] = `{"sync": `
	values[manifestwork.FeedbackMessage] = "\x1b[2J\x1b]0;owned\x07one or more objects failed"
	h.reportAsStrings(name, cluster, values)

	h.g.Eventually(func() string { return statusField(h.getApp(name), "operationState", "phase") }, timeout, interval).Should(Equal("Failed"))
	app := h.getApp(name)
	h.g.Expect(statusField(app, "health", "status")).To(Equal("Degraded"), "what parses is written")
	h.g.Expect(statusField(app, "sync", "revision")).To(BeEmpty(), "a revision list that does not parse is not guessed at")
	op, _, _ := unstructured.NestedMap(app.Object, "status", "operationState", "operation")
	h.g.Expect(op).To(Equal(map[string]any{"sync": map[string]any{}}), "an operation that does not parse is not copied")
	conditions, _, _ := unstructured.NestedSlice(app.Object, "status", "conditions")
	h.g.Expect(conditions).To(ContainElement(And(HaveKeyWithValue("type", appstatus.FeedbackWarningCondition),
		HaveKeyWithValue("message", And(
			ContainSubstring(manifestwork.FeedbackOperation+" ignored: not a JSON object"),
			ContainSubstring(manifestwork.FeedbackRevisions+" ignored: not a JSON list of strings"))))))

	h.g.Eventually(func() []v1alpha1.ClusterCondition {
		r, _ := h.getReport("web")
		return r.Statuses.ClusterConditions
	}, timeout, interval).Should(ContainElement(And(HaveField("Cluster", cluster), HaveField("HealthStatus", "Degraded"),
		HaveField("Conditions", ContainElement(HaveField("Type", "FeedbackTrimmed"))))), "the report says it too")
}
