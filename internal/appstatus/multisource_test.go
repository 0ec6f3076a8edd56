package appstatus

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/test/simagent"
)

// historyOf is what the work agent reports of a managed Application whose status.history is
// entries and whose status.sync.comparedTo.sources is compared.
func historyOf(t *testing.T, entries []any, compared []any) map[string]string {
	t.Helper()
	app := argocd.NewApplication()
	app.Object["status"] = map[string]any{"history": entries, "sync": map[string]any{"comparedTo": map[string]any{"sources": compared}}}
	return simagent.FeedbackOf(app.Object)
}

func multiEntry(id int, sources []any, revisions ...any) map[string]any {
	return map[string]any{"id": int64(id), "deployedAt": "2026-11-27T10:00:00Z", "revisions": revisions, "sources": sources,
		"source": map[string]any{"repoURL": ""}}
}

func TestMultiSourceHistoryIsRebuiltFromItsColumns(t *testing.T) {
	app := map[string]any{"repoURL": "https://git.example/app", "path": "guestbook", "targetRevision": "main"}
	chart := map[string]any{"repoURL": "https://charts.example", "chart": "redis", "targetRevision": "19.0.1"}
	values := map[string]any{"repoURL": "https://git.example/values", "targetRevision": "v2", "ref": "values"}
	tests := map[string]struct {
		entries, compared []any
		want              []any // each entry's sources
		warning           string
	}{
		"one entry of one source (each column a single value)": {
			entries: []any{multiEntry(0, []any{app}, "a")},
			want:    []any{[]any{app}},
		},
		"sources whose fields differ, as compared now": {
			entries:  []any{multiEntry(0, []any{chart, values}, "a", "b"), multiEntry(1, []any{chart, values}, "c", "d")},
			compared: []any{chart, values},
			want:     []any{[]any{chart, values}, []any{chart, values}},
		},
		"sources whose fields differ, and changed since": {
			entries:  []any{multiEntry(0, []any{values, chart}, "a", "b"), multiEntry(1, []any{chart, values, app}, "c", "d", "e")},
			compared: []any{chart, values, app},
			// The charts' column has two values, and the sources compared now say one (the first
			// entry's chart is at another index): left out. The one path is the app's, which is
			// where it is now.
			want: []any{
				[]any{map[string]any{"repoURL": "https://git.example/values", "targetRevision": "v2"}, map[string]any{"repoURL": "https://charts.example", "targetRevision": "19.0.1"}},
				[]any{map[string]any{"repoURL": "https://charts.example", "targetRevision": "19.0.1"}, map[string]any{"repoURL": "https://git.example/values", "targetRevision": "v2"},
					app},
			},
			warning: "historySources.chart left out, not one per source",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			history, trimmed := hubHistory(historyOf(t, tt.entries, tt.compared))
			g.Expect(history).To(HaveLen(len(tt.entries)))
			for i, e := range history {
				entry := e.(map[string]any)
				g.Expect(entry["revisions"]).To(Equal(tt.entries[i].(map[string]any)["revisions"]))
				g.Expect(entry["sources"]).To(Equal(tt.want[i]), "entry %d", i)
				g.Expect(entry).NotTo(HaveKey("source"))
			}
			if tt.warning == "" {
				g.Expect(trimmed).To(BeEmpty())
			} else {
				g.Expect(trimmed).To(ContainElement(ContainSubstring(tt.warning)))
			}
		})
	}
}

// A managed cluster that reports sources out of line with its revisions, or revisions that are not
// strings, gets no sources on the hub, and a warning; the rest of the history is kept.
func TestMultiSourceHistoryOutOfLineIsLeftOut(t *testing.T) {
	base := func() map[string]string {
		return map[string]string{
			manifestwork.FeedbackHistoryIDs:           "[0,1]",
			manifestwork.FeedbackHistoryDeployedAt:    `["2026-11-27T10:00:00Z","2026-11-27T10:01:00Z"]`,
			manifestwork.FeedbackHistoryRevisionLists: `[["a"],["b"]]`,
		}
	}
	tests := map[string]struct {
		set     map[string]string
		warning string
	}{
		"a repoURL short":         {map[string]string{manifestwork.FeedbackHistorySources("repoURL"): "https://git.example/app"}, "sources left out"},
		"revisions not strings":   {map[string]string{manifestwork.FeedbackHistoryRevisionLists: `[[1],[2]]`}, "not strings"},
		"revisions not per entry": {map[string]string{manifestwork.FeedbackHistoryRevisionLists: `[["a"]]`}, "not a list per entry"},
		"revisions not JSON":      {map[string]string{manifestwork.FeedbackHistoryRevisionLists: `[[`}, "not a list per entry"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			values := base()
			values[manifestwork.FeedbackHistorySources("repoURL")] = `["https://git.example/app","https://git.example/app"]`
			for k, v := range tt.set {
				values[k] = v
			}
			history, trimmed := hubHistory(values)
			g.Expect(history).To(HaveLen(2), "the entries are kept")
			for _, e := range history {
				g.Expect(e).NotTo(HaveKey("sources"))
			}
			g.Expect(trimmed).To(ContainElement(ContainSubstring(tt.warning)))
		})
	}
}
