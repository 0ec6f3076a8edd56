package appstatus

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

// The managed Application's status.history (what argocd app history lists and argocd app
// rollback reads) arrives one column per field (see propagation's feedback paths), and is copied
// to the hub rebuilt, entry by entry, within its caps.
const (
	// MaxHistory caps the entries copied: Argo CD keeps 10 by default (revisionHistoryLimit).
	MaxHistory = 10
	// MaxHistoryValueLength caps each value of an entry (a revision, a time, a source's fields).
	MaxHistoryValueLength = 512
	// MaxHistorySize caps status.history (JSON): the newest entries are copied while they fit.
	MaxHistorySize = 16 * 1024
)

// historyFields are the columns of an entry besides its ID, and where each goes in the entry.
var historyFields = []struct {
	feedback string
	path     []string
}{
	{manifestwork.FeedbackHistoryRevisions, []string{"revision"}},
	{manifestwork.FeedbackHistoryDeployedAt, []string{"deployedAt"}},
	{manifestwork.FeedbackHistoryDeployStartedAt, []string{"deployStartedAt"}},
	{manifestwork.FeedbackHistoryRepoURLs, []string{"source", "repoURL"}},
	{manifestwork.FeedbackHistoryPaths, []string{"source", "path"}},
	{manifestwork.FeedbackHistoryTargetRevisions, []string{"source", "targetRevision"}},
	{manifestwork.FeedbackHistoryCharts, []string{"source", "chart"}},
}

// hubHistory rebuilds status.history from its columns: nil when the cluster reported none. A
// column that is not one value per entry (a field some entries lack, or a list over the work
// agent's cap, which it does not report) is left out of every entry; without deployedAt, which
// the Application CRD requires, nothing is copied. trimmed says what was cut or left out.
func hubHistory(values map[string]string) (out []any, trimmed []string) {
	rawIDs, ok := values[manifestwork.FeedbackHistoryIDs]
	if !ok {
		return nil, nil
	}
	ids, ok := column(rawIDs)
	if !ok {
		return nil, []string{fmt.Sprintf("%s ignored: not a list (%d bytes)", manifestwork.FeedbackHistoryIDs, len(rawIDs))}
	}
	entries := make([]map[string]any, len(ids))
	for i, v := range ids {
		id, ok := historyID(v)
		if !ok {
			return nil, []string{fmt.Sprintf("%s ignored: not a list of IDs", manifestwork.FeedbackHistoryIDs)}
		}
		entries[i] = map[string]any{"id": id}
	}
	cut := 0
	for _, f := range historyFields {
		raw, ok := values[f.feedback]
		if !ok {
			continue // no entry has it
		}
		col, ok := column(raw)
		if !ok || len(col) != len(entries) {
			if f.feedback == manifestwork.FeedbackHistoryDeployedAt {
				return nil, []string{fmt.Sprintf("history ignored: %s is not one per entry", f.feedback)}
			}
			trimmed = append(trimmed, fmt.Sprintf("history: %s left out, not one per entry", f.feedback))
			continue
		}
		for i, v := range col {
			s, ok := cutValue(v, MaxHistoryValueLength, &cut)
			if !ok {
				continue
			}
			entry := entries[i]
			for _, k := range f.path[:len(f.path)-1] {
				inner, _ := entry[k].(map[string]any)
				if inner == nil {
					inner = map[string]any{}
					entry[k] = inner
				}
				entry = inner
			}
			entry[f.path[len(f.path)-1]] = s
		}
	}
	trimmed = append(trimmed, historyInitiatedBy(values, entries, &cut)...)
	trimmed = append(trimmed, historySources(values, entries, &cut)...)
	if cut > 0 {
		trimmed = append(trimmed, fmt.Sprintf("history: %d values cut to their caps", cut))
	}
	// Argo CD appends: the newest last. Keep the newest that fit.
	keep := entries
	if len(keep) > MaxHistory {
		keep = keep[len(keep)-MaxHistory:]
	}
	size, first := len("[]"), len(keep)
	for first > 0 {
		encoded, _ := json.Marshal(keep[first-1])
		if size+len(encoded)+1 > MaxHistorySize {
			break
		}
		size += len(encoded) + 1
		first--
	}
	if dropped := len(entries) - (len(keep) - first); dropped > 0 {
		trimmed = append(trimmed, fmt.Sprintf("history: the newest %d of %d entries copied", len(keep)-first, len(entries)))
	}
	out = make([]any, 0, len(keep)-first)
	for _, e := range keep[first:] {
		out = append(out, e)
	}
	return out, trimmed
}

// column reads a column of status.history: the work agent reports a JSON list when the path
// matched several entries, and the value itself when it matched one. ok is false for a list
// that does not parse.
func column(raw string) (values []any, ok bool) {
	if !strings.HasPrefix(raw, "[") {
		return []any{raw}, true
	}
	if err := json.Unmarshal([]byte(raw), &values); err != nil {
		return nil, false
	}
	return values, true
}

// historyID reads an entry's ID: a number in a JSON list, or the text of a single one.
func historyID(v any) (int64, bool) {
	switch id := v.(type) {
	case float64:
		if id >= 0 && id == float64(int64(id)) {
			return int64(id), true
		}
	case string:
		n, err := strconv.ParseInt(id, 10, 64)
		return n, err == nil && n >= 0
	}
	return 0, false
}

// historySources sets a multi-source history's revisions and sources in entries. Its revisions
// arrive as one list per entry, and say how many sources each entry has; each field of the
// sources arrives as one column over all entries' sources, split at those counts. A field only
// some sources have (a chart, a ref) makes a shorter column: it is put in line with the sources
// the cluster compares against now (see below), or else left out of every source, with a
// warning. Without repoURLs, which the CRD requires of a source, no sources are written.
func historySources(values map[string]string, entries []map[string]any, cut *int) (trimmed []string) {
	raw, ok := values[manifestwork.FeedbackHistoryRevisionLists]
	if !ok {
		return nil
	}
	lists, ok := revisionLists(raw, len(entries))
	if !ok {
		return []string{fmt.Sprintf("history: %s left out, not a list per entry", manifestwork.FeedbackHistoryRevisionLists)}
	}
	long := 0
	for i, list := range lists {
		if len(list) > MaxSources {
			list = list[:MaxSources]
			long++
		}
		revisions := make([]any, 0, len(list))
		for _, v := range list {
			if s, ok := cutValue(v, MaxHistoryValueLength, cut); ok {
				revisions = append(revisions, s)
			}
		}
		if len(revisions) != len(list) {
			return append(trimmed, fmt.Sprintf("history: %s left out, not strings", manifestwork.FeedbackHistoryRevisionLists))
		}
		entries[i]["revisions"] = revisions
	}
	if long > 0 {
		trimmed = append(trimmed, fmt.Sprintf("history: the revisions and sources of %d entries cut to their first %d", long, MaxSources))
	}
	var current []map[string]any // the sources compared now, as reported
	_ = json.Unmarshal([]byte(values[manifestwork.FeedbackComparedSources]), &current)
	sources := make([][]map[string]any, len(entries))
	for _, field := range manifestwork.HistorySourceFields {
		name := manifestwork.FeedbackHistorySources(field)
		raw, ok := values[name]
		if !ok {
			continue // no source has it
		}
		col, ok := column(raw)
		has := func(int, int) bool { return true }
		if ok && len(col) != countSources(lists, has) && field != "repoURL" {
			// A field only some sources have: in line if each source that has it is, by index and
			// repoURL, one the cluster compares against now that has it (a history whose sources
			// never changed), which the column's length confirms.
			has = func(i, j int) bool {
				return j < len(current) && j < len(sources[i]) && current[j][field] != nil && sources[i][j]["repoURL"] == current[j]["repoURL"]
			}
		}
		if !ok || len(col) != countSources(lists, has) {
			if field == "repoURL" {
				return append(trimmed, fmt.Sprintf("history: sources left out, %s is not one per source", name))
			}
			trimmed = append(trimmed, fmt.Sprintf("history: %s left out, not one per source", name))
			continue
		}
		next := 0
		for i, list := range lists {
			if sources[i] == nil {
				sources[i] = make([]map[string]any, min(len(list), MaxSources))
				for j := range sources[i] {
					sources[i][j] = map[string]any{}
				}
			}
			for j := range list {
				if !has(i, j) {
					continue
				}
				if j < MaxSources {
					putString(sources[i][j], field, col[next], MaxHistoryValueLength, cut)
				}
				next++
			}
		}
	}
	for i, list := range sources {
		kept := make([]any, 0, len(list))
		for _, src := range list {
			if src["repoURL"] == nil {
				kept = nil // the CRD requires it: none of this entry's sources
				break
			}
			kept = append(kept, src)
		}
		if len(kept) > 0 {
			entries[i]["sources"] = kept
		}
	}
	return trimmed
}

// countSources counts the sources of all entries that has says have a field.
func countSources(lists [][]any, has func(entry, source int) bool) int {
	n := 0
	for i, list := range lists {
		for j := range list {
			if has(i, j) {
				n++
			}
		}
	}
	return n
}

// revisionLists reads the revisions column of a multi-source history: a list of lists, one per
// entry; a history of one entry arrives as its list alone.
func revisionLists(raw string, entries int) ([][]any, bool) {
	var lists [][]any
	if err := json.Unmarshal([]byte(raw), &lists); err == nil && len(lists) == entries {
		return lists, true
	}
	var one []any
	if err := json.Unmarshal([]byte(raw), &one); err == nil && entries == 1 {
		return [][]any{one}, true
	}
	return nil, false
}

// historyInitiatedBy sets each entry's initiatedBy (who started the deployment: a user, or the
// automated sync), from a column of objects, one per entry; a history of one entry arrives as
// its object alone.
func historyInitiatedBy(values map[string]string, entries []map[string]any, cut *int) (trimmed []string) {
	raw, ok := values[manifestwork.FeedbackHistoryInitiatedBy]
	if !ok {
		return nil
	}
	var col []map[string]any
	if err := json.Unmarshal([]byte(raw), &col); err != nil || len(col) != len(entries) {
		var one map[string]any
		if err := json.Unmarshal([]byte(raw), &one); err != nil || len(entries) != 1 {
			return []string{fmt.Sprintf("history: %s left out, not one per entry", manifestwork.FeedbackHistoryInitiatedBy)}
		}
		col = []map[string]any{one}
	}
	for i, by := range col {
		out := map[string]any{}
		putString(out, "username", by["username"], MaxHistoryValueLength, cut)
		if automated, ok := by["automated"].(bool); ok && automated {
			out["automated"] = true
		}
		if len(out) > 0 {
			entries[i]["initiatedBy"] = out
		}
	}
	return nil
}
