package reportview

import (
	"os"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
)

// docReport is the documents' sample report: 3 clusters, one OutOfSync/Missing with a SyncError.
func docReport(t *testing.T) *v1alpha1.MulticlusterApplicationSetReport {
	t.Helper()
	data, err := os.ReadFile("../../test/testdata/docs/multiclusterapplicationsetreport.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := &v1alpha1.MulticlusterApplicationSetReport{}
	if err := yaml.UnmarshalStrict(data, r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestReportRendersTheDocumentsExample(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Report(docReport(t), Options{})).To(Equal(`CLUSTER    SYNC       HEALTH       REVISION  PHASE  ERROR
cluster1   OutOfSync  Missing      -         -      SyncError: Failed sync at...
pcluster1  Synced     Progressing  -         -
pcluster2  Synced     Progressing  -         -

3 clusters: 2 synced, 0 healthy, 2 in progress, 3 not healthy, 1 not synced
`))
}

func TestReportShowsRevisionPhaseAndNotes(t *testing.T) {
	g := NewWithT(t)
	r := docReport(t)
	r.Statuses.ClusterConditions[1].SyncRevision = "4b2c3d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c"
	r.Statuses.ClusterConditions[1].OperationStatePhase = "Succeeded"
	r.Statuses.Notes = []string{
		"cluster pcluster2 returned no resource list: the work agent needs --feature-gates=RawFeedbackJsonString=true and the list must fit in its --max-json-raw-length",
		"2 more clusters not shown",
	}
	g.Expect(Report(r, Options{})).To(Equal(`CLUSTER    SYNC       HEALTH       REVISION  PHASE      ERROR
cluster1   OutOfSync  Missing      -         -          SyncError: Failed syn...
pcluster1  Synced     Progressing  4b2c3d5   Succeeded
pcluster2  Synced     Progressing  -         -

3 clusters: 2 synced, 0 healthy, 2 in progress, 3 not healthy, 1 not synced

Notes:
- cluster pcluster2 returned no resource list: the work agent needs
  --feature-gates=RawFeedbackJsonString=true and the list must fit in its
  --max-json-raw-length
- 2 more clusters not shown
`))
}

func TestReportWithoutClusters(t *testing.T) {
	g := NewWithT(t)
	r := &v1alpha1.MulticlusterApplicationSetReport{}
	r.Statuses.Summary = v1alpha1.ReportSummary{Clusters: "0"}
	g.Expect(Report(r, Options{})).To(Equal(`No clusters in the report yet.

0 clusters: 0 synced, 0 healthy, 0 in progress, 0 not healthy, 0 not synced
`))
}

func TestReportSummaryOfOneCluster(t *testing.T) {
	g := NewWithT(t)
	r := &v1alpha1.MulticlusterApplicationSetReport{}
	r.Statuses.ClusterConditions = []v1alpha1.ClusterCondition{{Cluster: "cluster1", SyncStatus: "Synced", HealthStatus: "Healthy"}}
	r.Statuses.Summary = v1alpha1.ReportSummary{Clusters: "1", Synced: "1", Healthy: "1", NotHealthy: "0", NotSynced: "0", InProgress: "0"}
	g.Expect(Report(r, Options{})).To(HaveSuffix("\n1 cluster: 1 synced, 1 healthy, 0 in progress, 0 not healthy, 0 not synced\n"))
}

func TestReportFitsTheWidth(t *testing.T) {
	long := strings.Repeat("one or more objects failed to apply ", 20)
	tests := map[string]struct {
		cluster   v1alpha1.ClusterCondition
		width     int
		wantError string // the ERROR cell as printed
	}{
		"long message is cut with an ellipsis": {
			cluster:   v1alpha1.ClusterCondition{Cluster: "cluster1", SyncStatus: "OutOfSync", HealthStatus: "Missing", Conditions: []v1alpha1.Condition{{Type: "SyncError", Message: long}}},
			wantError: "  SyncError: one or more objects...",
		},
		"every column at its widest": {
			cluster: v1alpha1.ClusterCondition{Cluster: "cluster-with-a-name-of-28ch", SyncStatus: "OutOfSync", HealthStatus: "Progressing",
				SyncRevision: "v1.2.3-rc.1+build.20240101", OperationStatePhase: "Terminating",
				Conditions: []v1alpha1.Condition{{Type: "ComparisonError", Message: long}}},
			wantError: "  ComparisonEr...",
		},
		"message with line breaks and escape sequences becomes one safe line": {
			cluster: v1alpha1.ClusterCondition{Cluster: "c1", SyncStatus: "OutOfSync", HealthStatus: "Degraded",
				Conditions: []v1alpha1.Condition{{Type: "SyncError", Message: "first line\n\tsecond \x1b[2Jline\u202e"}}},
			wantError: "  SyncError: first line second [...",
		},
		"wide characters count twice": {
			cluster: v1alpha1.ClusterCondition{Cluster: "c1", SyncStatus: "OutOfSync", HealthStatus: "Degraded",
				Conditions: []v1alpha1.Condition{{Type: "SyncError", Message: strings.Repeat("동기화 실패 ", 20)}}},
			wantError: "  SyncError: 동기화 실패 동기화 ...",
		},
		"narrow terminal": {
			cluster:   v1alpha1.ClusterCondition{Cluster: "cluster1", SyncStatus: "OutOfSync", HealthStatus: "Missing", Conditions: []v1alpha1.Condition{{Type: "SyncError", Message: long}}},
			width:     60,
			wantError: "  SyncError:...",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			width := tc.width
			if width == 0 {
				width = DefaultWidth
			}
			r := &v1alpha1.MulticlusterApplicationSetReport{}
			r.Statuses.ClusterConditions = []v1alpha1.ClusterCondition{tc.cluster}
			r.Statuses.Notes = []string{long, "a-note-that-is-one-word-" + strings.Repeat("x", 100)}
			out := Report(r, Options{Width: tc.width})
			for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
				g.Expect(displayWidth(line)).To(BeNumerically("<=", width), "line %q", line)
			}
			table, _, _ := strings.Cut(out, "\n\n")
			g.Expect(table).To(HaveSuffix(tc.wantError))
			g.Expect(out).NotTo(ContainSubstring("\x1b"))
		})
	}
}

// A cluster name is never cut (people copy it): when it does not fit, it gets a line of its own.
func TestReportLongClusterNameGetsItsOwnLine(t *testing.T) {
	g := NewWithT(t)
	name := "a-very-long-cluster-name-in-production-eu-west-1-abcdef"
	r := docReport(t)
	r.Statuses.ClusterConditions[2].Cluster = name
	g.Expect(Report(r, Options{})).To(HavePrefix(`CLUSTER        SYNC       HEALTH       REVISION  PHASE  ERROR
cluster1       OutOfSync  Missing      -         -      SyncError: Failed syn...
pcluster1      Synced     Progressing  -         -
` + name + `
               Synced     Progressing  -         -
`))
}

func TestShortRevision(t *testing.T) {
	tests := map[string]struct{ in, want string }{
		"git sha":           {"4b2c3d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c", "4b2c3d5"},
		"short sha":         {"4b2c3d5", "4b2c3d5"},
		"chart version":     {"1.2.3", "1.2.3"},
		"long tag":          {"release-2024-01-01-final", "release-2..."},
		"empty":             {"", ""},
		"hex-looking short": {"cafe", "cafe"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(shortRevision(tc.in)).To(Equal(tc.want))
		})
	}
}

func TestColors(t *testing.T) {
	r := docReport(t)
	r.Statuses.ClusterConditions[1].OperationStatePhase = "Succeeded"
	list := []v1alpha1.MulticlusterApplicationSetReport{*r}
	tests := map[string]struct {
		out  func(Options) string
		want []string
	}{
		"report": {
			out: func(o Options) string { return Report(r, o) },
			want: []string{yellow + "OutOfSync" + reset, red + "Missing" + reset, green + "Synced" + reset,
				yellow + "Progressing" + reset, green + "Succeeded" + reset, red + "SyncError: Failed"},
		},
		"list": {
			out:  func(o Options) string { return List(list, o) },
			want: []string{yellow + "2" + reset, red + "3" + reset},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			plain := tc.out(Options{})
			g.Expect(plain).NotTo(ContainSubstring("\x1b"))
			colored := tc.out(Options{Color: true})
			for _, w := range tc.want {
				g.Expect(colored).To(ContainSubstring(w))
			}
			// Colours do not move the columns.
			g.Expect(stripANSI(colored)).To(Equal(plain))
		})
	}
}

func TestList(t *testing.T) {
	report := func(ns, name string, s v1alpha1.ReportSummary) v1alpha1.MulticlusterApplicationSetReport {
		return v1alpha1.MulticlusterApplicationSetReport{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Statuses:   v1alpha1.AppConditions{Summary: s},
		}
	}
	reports := []v1alpha1.MulticlusterApplicationSetReport{
		report("openshift-gitops", "guestbook-allclusters-app-set", v1alpha1.ReportSummary{Clusters: "3", Healthy: "0", InProgress: "2", NotHealthy: "3", NotSynced: "1", Synced: "2"}),
		report("argocd", "podinfo", v1alpha1.ReportSummary{Clusters: "1200", Healthy: "1200", InProgress: "0", NotHealthy: "0", NotSynced: "0", Synced: "1200"}),
		report("argocd", "empty", v1alpha1.ReportSummary{}),
	}
	tests := map[string]struct {
		opts Options
		want string
	}{
		"one namespace": {
			want: `NAME                           CLUSTERS  SYNCED  HEALTHY  IN-PROGRESS  NOT-HEALTHY
empty                          0         0       0        0            0
podinfo                        1200      1200    1200     0            0
guestbook-allclusters-app-set  3         2       0        2            3
`,
		},
		// As kubectl: a row wider than the terminal (80 columns by default) is neither split nor
		// narrowed; the terminal wraps it.
		"all namespaces": {
			opts: Options{AllNamespaces: true},
			want: `NAMESPACE         NAME                           CLUSTERS  SYNCED  HEALTHY  IN-PROGRESS  NOT-HEALTHY
argocd            empty                          0         0       0        0            0
argocd            podinfo                        1200      1200    1200     0            0
openshift-gitops  guestbook-allclusters-app-set  3         2       0        2            3
`,
		},
		"wide terminal": {
			opts: Options{AllNamespaces: true, Width: 120},
			want: `NAMESPACE         NAME                           CLUSTERS  SYNCED  HEALTHY  IN-PROGRESS  NOT-HEALTHY
argocd            empty                          0         0       0        0            0
argocd            podinfo                        1200      1200    1200     0            0
openshift-gitops  guestbook-allclusters-app-set  3         2       0        2            3
`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(List(reports, tc.opts)).To(Equal(tc.want))
		})
	}
}

func TestSanitize(t *testing.T) {
	tests := map[string]struct{ in, want string }{
		"plain":              {"Synced", "Synced"},
		"escape sequence":    {"a\x1b]0;title\x07b", "a ]0;title b"},
		"newlines and tabs":  {"  one\n\ttwo\r\n", "one two"},
		"bidi override gone": {"abc\u202edef", "abcdef"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(sanitize(tc.in)).To(Equal(tc.want))
		})
	}
}

func stripANSI(s string) string {
	for _, c := range []string{green, yellow, red, reset} {
		s = strings.ReplaceAll(s, c, "")
	}
	return s
}
