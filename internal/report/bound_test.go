package report

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

// longResources is a resource list of about size bytes (valid JSON) whose names, each of
// nameLength bytes of fill, start with prefix.
func longResources(prefix, fill string, nameLength, size int) string {
	var list []map[string]any
	for i := 0; i*nameLength < size; i++ {
		list = append(list, map[string]any{"version": "v1", "kind": "ConfigMap", "namespace": "guestbook",
			"name": fmt.Sprintf("%s-%04d-%s", prefix, i, strings.Repeat(fill, nameLength)), "status": "Synced"})
	}
	return mustJSON(list)
}

// compromised is a member whose work agent wrote values into its feedback as it liked.
func compromised(cluster string, values map[string]string) Member {
	all := map[string]string{manifestwork.FeedbackHealth: "Degraded", manifestwork.FeedbackSync: "OutOfSync", manifestwork.FeedbackRevision: "r1"}
	for k, v := range values {
		all[k] = v
	}
	return m(cluster, reported(all))
}

// One cluster writes what it likes into its works' status: the report it shares with a healthy
// cluster stays within its budget, still lists the healthy cluster as it is, and says what it cut.
func TestOneClusterCannotOverflowTheReport(t *testing.T) {
	mib := 1 << 20
	tests := map[string][]Member{
		"a 1 MiB revision": {compromised("bad", map[string]string{manifestwork.FeedbackRevision: strings.Repeat("r", mib)})},
		"a 1 MiB health":   {compromised("bad", map[string]string{manifestwork.FeedbackHealth: strings.Repeat("h", mib)})},
		"1.3 MB of resources with 4 KB names": {compromised("bad", map[string]string{
			manifestwork.FeedbackResources: longResources("a", "x", 4096, 1_300_000)})},
		"1.3 MB of resources that JSON escapes": {compromised("bad", map[string]string{
			manifestwork.FeedbackResources: longResources("a", "<", 200, 1_300_000)})},
		"two works of 1.3 MB of resources on one cluster": {
			compromised("bad", map[string]string{manifestwork.FeedbackResources: longResources("a", "x", 4096, 1_300_000)}),
			compromised("bad", map[string]string{manifestwork.FeedbackResources: longResources("b", "x", 4096, 1_300_000)}),
		},
		"1.3 MB of resources that do not parse": {compromised("bad", map[string]string{
			manifestwork.FeedbackResources: "[" + strings.Repeat(`{"name":"x"},`, 100_000)})},
		"a condition with a 1 MiB type": {compromised("bad", map[string]string{
			manifestwork.FeedbackConditions: mustJSON([]map[string]string{{"type": strings.Repeat("T", mib), "message": "m"}})})},
	}
	for name, bad := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			good := m("good", reported(map[string]string{manifestwork.FeedbackHealth: "Degraded", manifestwork.FeedbackSync: "OutOfSync",
				manifestwork.FeedbackRevision: "53e28ff2"}))
			out, _ := Build(append([]Member{good}, bad...), Options{Now: now})
			data, err := json.Marshal(out)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(len(data)).To(BeNumerically("<=", 768*1024), "within the default budget")
			g.Expect(out.ClusterConditions).To(ContainElement(And(HaveField("Cluster", "good"), HaveField("SyncRevision", "53e28ff2"),
				HaveField("App", "openshift-gitops/guestbook-good/good/guestbook-good-1a2b3c4d"))), "the healthy cluster's entry is whole")
			g.Expect(out.Notes).To(ContainElement(And(ContainSubstring("bad"), ContainSubstring("cut"))), "the report says it cut the cluster's feedback")
			t.Logf("%d bytes, notes: %q", len(data), out.Notes)
		})
	}
}

// Whatever the members report and whatever the budget, bound reaches it: the last steps take what
// it takes.
func TestBoundReachesTheBudget(t *testing.T) {
	worst := func() []Member {
		members := fleet(2000, 3, map[string]string{manifestwork.FeedbackRevision: strings.Repeat("<", 4096)})
		for i := range 4 {
			members = append(members, compromised(fmt.Sprintf("bad-%d", i), map[string]string{
				manifestwork.FeedbackResources:  longResources(fmt.Sprint(i), "<", 240, 1_300_000),
				manifestwork.FeedbackMessage:    strings.Repeat("<", 1<<20),
				manifestwork.FeedbackPhase:      "Failed",
				manifestwork.FeedbackStartedAt:  strings.Repeat("<", 1<<20),
				manifestwork.FeedbackConditions: mustJSON([]map[string]string{{"type": strings.Repeat("<", 1<<20), "message": strings.Repeat("<", 1<<20)}}),
			}))
		}
		return members
	}()
	for _, budget := range []int{1024, 16 * 1024, 64 * 1024, 256 * 1024, 768 * 1024} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) {
			g := NewWithT(t)
			out, _ := Build(worst, Options{Now: now, SizeBudget: budget})
			data, err := json.Marshal(out)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(len(data)).To(BeNumerically("<=", max(budget, minSizeBudget)), "a budget below minSizeBudget is raised to it")
			g.Expect(out.Summary.Clusters).To(Equal(fmt.Sprint(len(worst))), "the summary counts every cluster")
			g.Expect(out.Notes).NotTo(BeEmpty())
			t.Logf("%d bytes, %d clusters and %d resources listed, notes: %q", len(data), len(out.ClusterConditions), len(out.Resources), out.Notes)
		})
	}
}

// The lists a cluster reports are read within caps, and what was cut is said, for that cluster.
func TestFeedbackListsAreReadWithinCaps(t *testing.T) {
	resource := func(name string) map[string]any {
		return map[string]any{"version": "v1", "kind": "ConfigMap", "namespace": "guestbook", "name": name, "status": "Synced"}
	}
	many := make([]map[string]any, 0, 3000)
	for i := range 3000 {
		many = append(many, resource(fmt.Sprintf("cm-%04d", i)))
	}
	tests := map[string]struct {
		values    map[string]string
		resources int
		condition v1alpha1.Condition
		note      string
	}{
		"more resources than the cap": {
			values:    map[string]string{manifestwork.FeedbackResources: mustJSON(many)},
			resources: MaxResourcesPerCluster, note: "resources: the first 2000 of 3000 read",
		},
		"a name longer than Kubernetes allows": {
			values:    map[string]string{manifestwork.FeedbackResources: mustJSON([]map[string]any{resource("ok"), resource(strings.Repeat("n", 254))})},
			resources: 1, note: "resources: 1 with a field over 253 bytes ignored",
		},
		"resources that do not parse": {
			values: map[string]string{manifestwork.FeedbackResources: `[{"name":`},
			note:   "resources ignored: not a JSON list (9 bytes)",
		},
		"a condition type over the cap": {
			values:    map[string]string{manifestwork.FeedbackConditions: mustJSON([]map[string]string{{"type": strings.Repeat("T", 1000), "message": "m"}})},
			condition: v1alpha1.Condition{Type: strings.Repeat("T", 39) + "... [cut from 1000 bytes]", Message: "m"},
			note:      "conditions: 1 with a type over 64 bytes cut",
		},
		"conditions that do not parse": {
			values: map[string]string{manifestwork.FeedbackConditions: `{"type":"SyncError"}`},
			note:   "conditions ignored: not a JSON list (20 bytes)",
		},
		"a 1 MiB message": {
			values:    map[string]string{manifestwork.FeedbackPhase: "Failed", manifestwork.FeedbackStartedAt: "t", manifestwork.FeedbackMessage: strings.Repeat("m", 1<<20)},
			condition: v1alpha1.Condition{Type: ConditionSyncError, Message: strings.Repeat("m", 509) + "..."},
			note:      "operationStateMessage cut from 1048576 to 8192 bytes",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			out, _ := Build([]Member{compromised("bad", tt.values), m("good", reported(map[string]string{
				manifestwork.FeedbackHealth: "Healthy", manifestwork.FeedbackSync: "Synced", manifestwork.FeedbackResources: "[]"}))}, Options{Now: now})
			g.Expect(out.Resources).To(HaveLen(tt.resources))
			bad := out.ClusterConditions[0]
			g.Expect(bad.Cluster).To(Equal("bad"))
			g.Expect(bad.Conditions).To(ContainElement(v1alpha1.Condition{Type: ConditionFeedbackTrimmed, Message: tt.note}))
			if tt.condition != (v1alpha1.Condition{}) {
				g.Expect(bad.Conditions).To(ContainElement(tt.condition))
			}
			g.Expect(out.Notes).To(ContainElement("feedback of 1 of 2 clusters cut or ignored, over argocd-pull's caps or not parsing (see their FeedbackTrimmed condition): bad: " + tt.note))
		})
	}

	g := NewWithT(t)
	out, _ := Build([]Member{m("good", reported(map[string]string{manifestwork.FeedbackHealth: "Degraded", manifestwork.FeedbackSync: "OutOfSync",
		manifestwork.FeedbackResources: mustJSON(many[:10])}))}, Options{Now: now})
	g.Expect(out.Notes).To(BeEmpty(), "nothing said of honest feedback")
	g.Expect(out.ClusterConditions[0].Conditions).To(BeEmpty())
}
