package appstatus

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	. "github.com/onsi/gomega"

	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

// A compromised work agent writes every feedback value as a 1 MiB String (the ManifestWork CRD
// bounds only JsonRaw values): what the hub Application gets stays small, and says it was cut.
func TestTheHubWriteIsBoundedWhateverTheClusterReports(t *testing.T) {
	for name, fill := range map[string]string{
		"plain text": "x",
		// "<" is escaped as \u003c in JSON: six bytes written for each byte read.
		"text JSON escapes": "<",
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			huge := strings.Repeat(fill, 1<<20)
			values := map[string]string{}
			for _, name := range []string{
				manifestwork.FeedbackHealth, manifestwork.FeedbackSync, manifestwork.FeedbackRevision,
				manifestwork.FeedbackPhase, manifestwork.FeedbackStartedAt, manifestwork.FeedbackFinishedAt,
				manifestwork.FeedbackMessage, manifestwork.FeedbackSyncStarted, manifestwork.FeedbackSyncResultRevision,
			} {
				values[name] = huge
			}
			values[manifestwork.FeedbackOperation] = fmt.Sprintf(`{"sync":{"revision":%q}}`, huge)
			// A resource list of a thousand entries, names as long as Kubernetes allows, the health
			// message huge, and fields Argo CD never writes; then as many of them invalid.
			var entries []string
			for i := range 1001 {
				name := fmt.Sprintf("%s-%04d", strings.Repeat("n", 248), i)
				entries = append(entries, fmt.Sprintf(`{"kind":"ConfigMap","name":%q,"status":"Synced","health":{"status":"Healthy","message":%q},"extra":%q}`, name, huge[:4096], huge[:4096]),
					fmt.Sprintf(`{"kind":%q,"name":%q,"status":%q,"health":{"status":%q,"message":%q},"extra":%q}`, huge[:4096], huge[:4096], huge[:4096], huge[:4096], huge[:4096], huge[:4096]))
			}
			values[manifestwork.FeedbackResources] = "[" + strings.Join(entries, ",") + "]"
			// A history of a thousand entries, each value huge.
			for k, v := range historyColumns(1, 1000) {
				values[k] = v
			}
			column, _ := json.Marshal(strings.Split(strings.TrimSuffix(strings.Repeat(huge[:4096]+",", 1000), ","), ","))
			values[manifestwork.FeedbackHistoryRevisions], values[manifestwork.FeedbackHistoryRepoURLs] = string(column), string(column)
			values[manifestwork.FeedbackImages], values[manifestwork.FeedbackExternalURLs] = string(column), string(column)
			values[manifestwork.FeedbackSourceType] = huge
			// A multi-source Application's lists, and the last sync's resources, as huge.
			for _, name := range []string{manifestwork.FeedbackRevisions, manifestwork.FeedbackSourceTypes, manifestwork.FeedbackSyncResultRevisions} {
				values[name] = string(column)
			}
			source := fmt.Sprintf(`{"repoURL":%q,"path":%q,"targetRevision":%q,"chart":%q,"ref":%q,"name":%q,"helm":{"values":%q}}`, huge[:4096], huge[:4096], huge[:4096], huge[:4096], huge[:4096], huge[:4096], huge[:4096])
			values[manifestwork.FeedbackComparedSources] = "[" + strings.Repeat(source+",", 1000) + source + "]"
			values[manifestwork.FeedbackSyncResultSources] = values[manifestwork.FeedbackComparedSources]
			result := fmt.Sprintf(`{"kind":%q,"name":%q,"status":%q,"message":%q,"hookPhase":%q,"extra":%q}`, huge[:4096], huge[:4096], huge[:4096], huge[:4096], huge[:4096], huge[:4096])
			values[manifestwork.FeedbackSyncResultResources] = "[" + strings.Repeat(result+",", 1000) + result + "]"
			lists, _ := json.Marshal(slices.Repeat([][]string{slices.Repeat([]string{huge[:100]}, 40)}, 1000))
			values[manifestwork.FeedbackHistoryRevisionLists] = string(lists)
			values[manifestwork.FeedbackHistorySources("repoURL")] = string(column)
			values[manifestwork.FeedbackHistoryInitiatedBy] = "[" + strings.Repeat(fmt.Sprintf(`{"username":%q},`, huge[:4096]), 999) + `{"automated":true}]`
			for _, name := range []string{manifestwork.FeedbackComparedRepoURL, manifestwork.FeedbackComparedPath, manifestwork.FeedbackComparedRevision, manifestwork.FeedbackComparedChart} {
				values[name] = huge
			}
			obs := Observe(work(1, 1, values))
			app := argocd.NewApplication()
			app.Object["spec"] = map[string]any{"destination": map[string]any{"server": argocd.LocalServer, "namespace": "guestbook"}}
			updated, changed := WithStatus(app, Derive(obs, nil))
			g.Expect(changed).To(BeTrue())
			g.Expect(nested(updated, "status", "sync", "comparedTo", "source", "repoURL")).To(HaveLen(MaxComparedToLength))
			if fill == "x" {
				images, _, _ := unstructured.NestedSlice(updated.Object, "status", "summary", "images")
				g.Expect(images).NotTo(BeEmpty(), "the first images that fit are copied")
			}

			data, err := json.Marshal(updated.Object["status"])
			g.Expect(err).NotTo(HaveOccurred())
			limit := 121 * 1024
			if fill == "<" {
				limit *= 6
			}
			g.Expect(len(data)).To(BeNumerically("<", limit), "the sum of the caps, escaped")
			g.Expect(nested(updated, "status", "operationState", "message")).To(HaveSuffix(fmt.Sprintf("[cut from %d bytes]", 1<<20)))
			g.Expect(nested(updated, "status", "sync", "revision")).To(HaveSuffix(fmt.Sprintf("[cut from %d bytes]", 1<<20)))
			g.Expect(nested(updated, "status", "health", "status")).To(HaveSuffix(fmt.Sprintf("[cut from %d bytes]", 1<<20)))
			g.Expect(string(data)).To(ContainSubstring(FeedbackWarningCondition), "a condition says what was cut")
			resources, _, _ := unstructured.NestedSlice(updated.Object, "status", "resources")
			g.Expect(resources).NotTo(BeEmpty(), "what fits is copied")
			g.Expect(len(resources)).To(BeNumerically("<", 1001))
			g.Expect(resources[0]).NotTo(HaveKey("extra"), "only Argo CD's fields")
			// The warning names the first cuts within its own cap (MaxWarningLength): here, too many.
			g.Expect(obs.ResourcesTrimmed).To(ContainElement(HavePrefix("resources: the first")), "the list's cut is named")
			history, _, _ := unstructured.NestedSlice(updated.Object, "status", "history")
			if fill == "x" {
				// Escaped six times, one entry's 32 revisions are over the history's cap: none is copied.
				g.Expect(history).NotTo(BeEmpty(), "the newest entries that fit are copied")
			}
			for _, path := range [][]string{{"sync", "revisions"}, {"sync", "comparedTo", "sources"}, {"sourceTypes"}} {
				list, _, _ := unstructured.NestedSlice(updated.Object, append([]string{"status"}, path...)...)
				if fill == "x" || path[len(path)-1] != "sources" { // escaped, one huge source is over its list's cap
					g.Expect(list).NotTo(BeEmpty(), "the first of %v that fit are copied", path)
				}
			}
		})
	}
}

func TestCut(t *testing.T) {
	tests := map[string]struct {
		in    string
		limit int
		want  string
		cut   bool
	}{
		"fits":                 {in: "Healthy", limit: 64, want: "Healthy"},
		"exactly at the limit": {in: strings.Repeat("a", 64), limit: 64, want: strings.Repeat("a", 64)},
		"cut, with a marker":   {in: strings.Repeat("a", 100), limit: 64, want: strings.Repeat("a", 40) + "... [cut from 100 bytes]", cut: true},
		"not inside a character": {in: strings.Repeat("é", 50), limit: 64,
			want: strings.Repeat("é", 20) + "... [cut from 100 bytes]", cut: true},
		"no room for the marker": {in: strings.Repeat("a", 100), limit: 10, want: "aaaaaaa...", cut: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got, cut := Cut(tt.in, tt.limit)
			g.Expect(cut).To(Equal(tt.cut))
			g.Expect(got).To(Equal(tt.want))
			g.Expect(len(got)).To(BeNumerically("<=", tt.limit))
		})
	}
}

func TestTruncate(t *testing.T) {
	tests := map[string]struct {
		in    string
		limit int
		want  string
	}{
		"fits":             {"abc", 3, "abc"},
		"cut":              {"abcdef", 5, "ab..."},
		"whole characters": {"ééé", 5, "é..."},
		"tiny limit":       {"abcdef", 2, ".."},
		"zero":             {"abcdef", 0, ""},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(Truncate(tt.in, tt.limit)).To(Equal(tt.want))
		})
	}
}

// Each value copied to the hub is cut to its cap and named in Trimmed; values only compared are
// left as reported.
func TestObserveCapsWhatIsCopiedToTheHub(t *testing.T) {
	huge := strings.Repeat("v", 100_000)
	tests := map[string]struct {
		value string
		limit int
		read  func(Observed) string
		// also is what else is said of it: a value copied twice (joined, and as a list) is cut twice.
		also []string
	}{
		manifestwork.FeedbackHealth:      {limit: MaxWordLength, read: func(o Observed) string { return o.Health }},
		manifestwork.FeedbackSync:        {limit: MaxWordLength, read: func(o Observed) string { return o.Sync }},
		manifestwork.FeedbackRevision:    {limit: MaxRevisionLength, read: func(o Observed) string { return o.Revision }},
		manifestwork.FeedbackPhase:       {limit: MaxWordLength, read: func(o Observed) string { return o.Phase }},
		manifestwork.FeedbackStartedAt:   {limit: MaxTimeLength, read: func(o Observed) string { return o.StartedAt }},
		manifestwork.FeedbackFinishedAt:  {limit: MaxTimeLength, read: func(o Observed) string { return o.FinishedAt }},
		manifestwork.FeedbackMessage:     {limit: MaxMessageLength, read: func(o Observed) string { return o.Message }},
		manifestwork.FeedbackSyncStarted: {limit: MaxWordLength, read: func(o Observed) string { return o.Delivery.SyncStarted }},
		manifestwork.FeedbackRevisions: {value: fmt.Sprintf("[%q,%q]", huge, huge), limit: MaxRevisionLength,
			read: func(o Observed) string { return o.Revision }, also: []string{"syncRevisions: 2 values cut to their caps"}},
		manifestwork.FeedbackSourceType:      {limit: MaxWordLength, read: func(o Observed) string { return o.SourceType }},
		manifestwork.FeedbackComparedRepoURL: {limit: MaxComparedToLength, read: func(o Observed) string { return o.HubComparedTo.RepoURL }},
		manifestwork.FeedbackComparedPath:    {limit: MaxComparedToLength, read: func(o Observed) string { return o.HubComparedTo.Path }},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			value := tt.value
			if value == "" {
				value = huge
			}
			obs := Observe(work(1, 1, map[string]string{name: value}))
			g.Expect(len(tt.read(obs))).To(BeNumerically("<=", tt.limit))
			g.Expect(tt.read(obs)).To(HaveSuffix(" bytes]"))
			want := []any{HavePrefix(name + " cut from ")}
			for _, a := range tt.also {
				want = append(want, a)
			}
			g.Expect(obs.Trimmed).To(ConsistOf(want...))

			fits := Observe(work(1, 1, map[string]string{name: `["a"]`}))
			g.Expect(fits.Trimmed).To(BeEmpty())
		})
	}

	g := NewWithT(t)
	obs := Observe(work(1, 1, map[string]string{manifestwork.FeedbackComparedRepoURL: huge, manifestwork.FeedbackReconciledAt: huge}))
	g.Expect(obs.ComparedTo.RepoURL).To(Equal(huge), "compared with the hub's whole: a cut could only make the comparison wrong")
	g.Expect(obs.HubComparedTo.RepoURL).To(HaveLen(MaxComparedToLength), "copied to the hub within its cap")
}

// An operation over its cap or that does not parse is not copied, and the hub is told why.
func TestBadOperationsAreIgnoredWithAWarning(t *testing.T) {
	tests := map[string]struct {
		raw, warning string
	}{
		"not JSON":             {`{"sync":`, "operationStateOperation ignored: not a JSON object"},
		"not an object":        {`["sync"]`, "operationStateOperation ignored: not a JSON object"},
		"null":                 {`null`, "operationStateOperation ignored: not a JSON object"},
		"over the cap":         {fmt.Sprintf(`{"sync":{"revision":%q}}`, strings.Repeat("r", MaxOperationSize)), fmt.Sprintf("operationStateOperation ignored: %d bytes, over its 16384-byte cap", MaxOperationSize+24)},
		"revisions not a list": {"", ""},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			values := feedback("Healthy", "Synced", "v2")
			values[manifestwork.FeedbackPhase], values[manifestwork.FeedbackStartedAt] = "Succeeded", "2026-11-21T10:00:00Z"
			if tt.raw == "" {
				delete(values, manifestwork.FeedbackRevision)
				values[manifestwork.FeedbackRevisions] = "abc"
				obs := Observe(work(1, 1, values))
				g.Expect(obs.Revision).To(BeEmpty())
				g.Expect(obs.Trimmed).To(ConsistOf("syncRevisions ignored: not a JSON list of strings (3 bytes)"))
				return
			}
			values[manifestwork.FeedbackOperation] = tt.raw
			st := Derive(Observe(work(1, 1, values)), v2)
			g.Expect(st.Operation.Operation).To(Equal(map[string]any{"sync": map[string]any{}}), "the CRD needs one: an empty sync, never the raw value")
			g.Expect(st.Warnings).To(ConsistOf(tt.warning))
		})
	}
}

// The warning condition is set while values are cut, removed when they are not, and other
// conditions are left alone.
func TestApplyWarnsOfCutFeedback(t *testing.T) {
	g := NewWithT(t)
	app := argocd.NewApplication()
	app.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "SharedResourceWarning", "message": "kept"}}}
	st := Status{Health: "Healthy", Sync: "Synced", Warnings: []string{"operationStateMessage cut from 1048576 to 8192 bytes"}}
	warned, changed := WithStatus(app, st)
	g.Expect(changed).To(BeTrue())
	conditions, _, _ := unstructured.NestedSlice(warned.Object, "status", "conditions")
	g.Expect(conditions).To(ConsistOf(
		map[string]any{"type": "SharedResourceWarning", "message": "kept"},
		map[string]any{"type": FeedbackWarningCondition, "message": "the managed cluster reported values over argocd-pull's caps or that do not parse: " +
			"operationStateMessage cut from 1048576 to 8192 bytes"},
	))
	_, changed = WithStatus(warned, st)
	g.Expect(changed).To(BeFalse())

	st.Warnings = nil
	cleared, changed := WithStatus(warned, st)
	g.Expect(changed).To(BeTrue())
	conditions, _, _ = unstructured.NestedSlice(cleared.Object, "status", "conditions")
	g.Expect(conditions).To(ConsistOf(map[string]any{"type": "SharedResourceWarning", "message": "kept"}))

	none, _ := WithStatus(argocd.NewApplication(), st)
	g.Expect(none.Object["status"]).NotTo(HaveKey("conditions"), "no empty list where there was none")
	alone, _ := WithStatus(argocd.NewApplication(), Status{Warnings: []string{"x"}})
	cleared, _ = WithStatus(alone, st)
	g.Expect(cleared.Object["status"]).NotTo(HaveKey("conditions"))
}
