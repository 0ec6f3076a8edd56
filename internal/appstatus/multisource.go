package appstatus

import (
	"encoding/json"
	"fmt"

	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

// A multi-source Application (spec.sources, as the documents' ApplicationSet writes it) reports
// lists where a single-source one reports scalars: a revision per source (status.sync.revisions,
// the last sync's syncResult.revisions and each history entry's revisions), the sources compared
// and synced, and a source type per source. They are copied to the hub within these caps.
const (
	// MaxSources caps the entries of each list copied (revisions, sources, source types).
	MaxSources = 32
	// MaxSourceRevisionLength caps each revision of such a list: an OCI digest has 71 characters.
	MaxSourceRevisionLength = 256
	// MaxSourcesSize caps each list (JSON): the revisions, the compared sources, the synced ones.
	MaxSourcesSize = 4 * 1024
	// MaxSyncResourcesSize caps the last sync's per-resource results (JSON), each with Argo CD's
	// fields only, cut as status.resources' are: 16 KiB holds about a hundred.
	MaxSyncResourcesSize = 16 * 1024
)

// sourceFields are the fields of a source copied to the hub: what argocd app history and the
// UI's panels show of it. Its parameters (helm, kustomize, directory, plugin) are not copied.
var sourceFields = []string{"repoURL", "path", "targetRevision", "chart", "ref", "name"}

// multiSource is what a multi-source Application reports, as copied to the hub.
type multiSource struct {
	Revisions, ComparedSources, SourceTypes []any
	SyncedRevisions, SyncedSources          []any
}

// observeMultiSource reads the multi-source lists, cut to their caps.
func (r *feedbackReader) observeMultiSource() multiSource {
	return multiSource{
		Revisions:       r.stringList(manifestwork.FeedbackRevisions, MaxSourceRevisionLength, MaxSourcesSize),
		SourceTypes:     r.stringList(manifestwork.FeedbackSourceTypes, MaxWordLength, MaxSourcesSize),
		SyncedRevisions: r.stringList(manifestwork.FeedbackSyncResultRevisions, MaxSourceRevisionLength, MaxSourcesSize),
		ComparedSources: r.sourceList(manifestwork.FeedbackComparedSources),
		SyncedSources:   r.sourceList(manifestwork.FeedbackSyncResultSources),
	}
}

// stringList reads a list of strings (one entry may arrive as that string), each cut to
// valueLimit, the first MaxSources that fit in sizeLimit; nil when none was reported.
func (r *feedbackReader) stringList(name string, valueLimit, sizeLimit int) []any {
	list, trimmed := cappedStrings(name, r.raw(name), valueLimit, MaxSources, sizeLimit)
	r.trimmed = append(r.trimmed, trimmed...)
	return list
}

// cappedStrings is the list of strings raw holds (one may arrive as that string), each cut to
// valueLimit, the first that fit in maxEntries and sizeLimit (JSON); nil when raw is empty or
// holds none; trimmed says what was cut.
func cappedStrings(name, raw string, valueLimit, maxEntries, sizeLimit int) (out []any, trimmed []string) {
	if raw == "" {
		return nil, nil
	}
	values, ok := column(raw)
	if !ok {
		return nil, []string{fmt.Sprintf("%s ignored: not a list (%d bytes)", name, len(raw))}
	}
	return cappedList(name, values, maxEntries, sizeLimit, func(v any, cut *int) any {
		if s, ok := cutValue(v, valueLimit, cut); ok {
			return s
		}
		return nil
	})
}

// sourceList reads a list of sources: each with sourceFields only, cut to MaxComparedToLength, the
// first MaxSources that fit in MaxSourcesSize; a source without a repoURL (which the CRD requires)
// is left out; nil when none was reported.
func (r *feedbackReader) sourceList(name string) []any {
	raw := r.raw(name)
	if raw == "" {
		return nil
	}
	var list []map[string]any
	if err := json.Unmarshal([]byte(raw), &list); err != nil {
		var one map[string]any // one source arrives as that object
		if err := json.Unmarshal([]byte(raw), &one); err != nil || one == nil {
			r.ignore(name, fmt.Sprintf("not a JSON list of sources (%d bytes)", len(raw)))
			return nil
		}
		list = []map[string]any{one}
	}
	out, trimmed := cappedList(name, list, MaxSources, MaxSourcesSize, func(item map[string]any, cut *int) any {
		src := map[string]any{}
		for _, k := range sourceFields {
			putString(src, k, item[k], MaxComparedToLength, cut)
		}
		if src["repoURL"] == nil {
			return nil
		}
		return src
	})
	r.trimmed = append(r.trimmed, trimmed...)
	return out
}

// syncResources is the last sync's per-resource results (syncResult.resources) as copied to the
// hub: Argo CD's fields only, each cut to its cap, as many as fit in MaxSyncResourcesSize; the
// fields the CRD requires are always written. nil when none was reported.
func (r *feedbackReader) syncResources() []any {
	name := manifestwork.FeedbackSyncResultResources
	raw := r.raw(name)
	if raw == "" {
		return nil
	}
	var list []map[string]any
	if err := json.Unmarshal([]byte(raw), &list); err != nil {
		r.ignore(name, fmt.Sprintf("not a JSON list of objects (%d bytes)", len(raw)))
		return nil
	}
	out, trimmed := cappedList(name, list, len(list), MaxSyncResourcesSize, func(item map[string]any, cut *int) any {
		res := map[string]any{}
		for _, k := range []string{"group", "version", "kind", "namespace", "name"} {
			res[k] = ""
			putString(res, k, item[k], MaxResourceNameLength, cut)
		}
		for _, k := range []string{"status", "hookType", "hookPhase", "syncPhase"} {
			putString(res, k, item[k], MaxWordLength, cut)
		}
		putString(res, "message", item["message"], MaxResourceMessageLength, cut)
		return res
	})
	r.trimmed = append(r.trimmed, trimmed...)
	return out
}

// cappedList copies the entries of a reported list through copyOne (Argo CD's fields only, each
// value cut to its cap, counted in cut; nil leaves an entry out), the first that fit in maxEntries
// and sizeLimit (JSON); nil when none is copied. trimmed says what was cut.
func cappedList[T any](name string, list []T, maxEntries, sizeLimit int, copyOne func(entry T, cut *int) any) (out []any, trimmed []string) {
	out, size, cut := make([]any, 0, min(len(list), maxEntries)), len("[]"), 0
	for _, entry := range list {
		copied := copyOne(entry, &cut)
		if copied == nil {
			continue
		}
		encoded, _ := json.Marshal(copied)
		if len(out) == maxEntries || size+len(encoded)+1 > sizeLimit {
			trimmed = append(trimmed, fmt.Sprintf("%s: the first %d of %d copied (%s)", name, len(out), len(list), listCap(len(out), maxEntries, sizeLimit)))
			break
		}
		size += len(encoded) + 1
		out = append(out, copied)
	}
	if cut > 0 {
		trimmed = append(trimmed, fmt.Sprintf("%s: %d values cut to their caps", name, cut))
	}
	if len(out) == 0 {
		return nil, trimmed
	}
	return out, trimmed
}

// listCap names the cap a list copied n entries under: its number of entries, or its size.
func listCap(n, maxEntries, sizeLimit int) string {
	if n == maxEntries {
		return fmt.Sprintf("%d-entry cap", maxEntries)
	}
	return fmt.Sprintf("%d-byte cap", sizeLimit)
}
