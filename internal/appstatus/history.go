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
