package reportview

// Fuzz target of the status table rendering. `go test` runs its seeds (f.Add and testdata/fuzz)
// as ordinary tests; `make fuzz` runs it as a fuzzer.

import (
	"strings"
	"testing"
	"unicode"

	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
)

// FuzzRender: whatever the clusters wrote into a report (escape sequences, bidi overrides, wide
// characters, names of any length), the table is plain text for a terminal: no control character
// but the line ends and no invisible format character. And on a terminal of at least the default
// width, with the status words Argo CD writes, no line of a report is wider than the terminal but
// one that holds only names, which are never cut because people copy them; the list of reports is
// sized as kubectl sizes its tables: one line per report, names whole.
func FuzzRender(f *testing.F) {
	f.Add("cluster1", uint8(0), "53e28ff20cc530b9ada2173fbbd64d48338583ba", "SyncError", "one or more objects failed", "guestbook", "note", 80)
	f.Add(strings.Repeat("c", 253), uint8(7), "v1.2.3-rc.1+build", "x", "\x1b]0;pwned\x07\x1b[2J", strings.Repeat("a", 300), "\u202eevil", 40)
	f.Add("클러스터", uint8(13), "", "오류", "한국어 메시지가 아주 길어서 줄을 넘깁니다", "앱", "", 50)
	f.Add("", uint8(255), "", "", "", "", "", 0)
	f.Add("a\tb\nc", uint8(99), "\u200b", "\x7f", "\u2028", "\n\n", "\r\n", 20)
	f.Fuzz(func(t *testing.T, cluster string, words uint8, revision, condType, message, name, note string, width int) {
		width = 20 + int(uint(width)%200)
		syncs := []string{"Synced", "OutOfSync", "Unknown", ""}
		healths := []string{"Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown", ""}
		phases := []string{"Succeeded", "Running", "Failed", "Error", "Terminating", ""}
		cc := v1alpha1.ClusterCondition{
			Cluster: cluster, SyncStatus: syncs[int(words)%len(syncs)], HealthStatus: healths[int(words)%len(healths)],
			SyncRevision: revision, OperationStatePhase: phases[int(words)%len(phases)],
			Conditions: []v1alpha1.Condition{{Type: condType, Message: message}},
		}
		r := &v1alpha1.MulticlusterApplicationSetReport{}
		r.Name, r.Namespace = name, name
		r.Statuses.ClusterConditions = []v1alpha1.ClusterCondition{cc, cc}
		r.Statuses.Summary = v1alpha1.ReportSummary{Clusters: "2", Healthy: "1"}
		r.Statuses.Notes = []string{note}
		names := map[string]bool{sanitize(cluster): true, sanitize(name) + gap + sanitize(name): true}
		list := List([]v1alpha1.MulticlusterApplicationSetReport{*r, *r}, Options{Width: width, AllNamespaces: true})
		for what, out := range map[string]string{"report": Report(r, Options{Width: width}), "list": list} {
			for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
				for _, c := range line {
					if unicode.IsControl(c) || unicode.Is(unicode.Cf, c) {
						t.Fatalf("%s: line %q holds %U", what, line, c)
					}
				}
				if w := displayWidth(line); what == "report" && width >= DefaultWidth && w > width && !names[line] {
					t.Fatalf("%s: line %q is %d columns wide, the terminal %d", what, line, w, width)
				}
			}
		}
		// The list is laid out as kubectl lays out its tables: a header and one line per report,
		// whatever the names' length, each name whole.
		lines := strings.Split(strings.TrimSuffix(list, "\n"), "\n")
		if len(lines) != 3 {
			t.Fatalf("list: %d lines for 2 reports:\n%s", len(lines), list)
		}
		for _, line := range lines[1:] {
			if !strings.Contains(line, sanitize(name)) {
				t.Fatalf("list: line %q does not hold the name %q whole", line, sanitize(name))
			}
		}
	})
}
