package appstatus

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

// Caps on what a managed cluster reports. Its work agent writes its works' status, and a
// compromised one writes what it likes there: the ManifestWork CRD bounds a JsonRaw feedback value
// (1024 bytes) but not a String one, and the agent chooses which it writes. Every feedback value
// copied to the hub Application is cut to its cap, with a marker saying so (see Cut); the caps
// are generous for what Argo CD writes.
//
// The guarantee: the values argocd-pull copies into a hub Application's status add up to at
// most the sum of the caps below (eight words or times, two revisions, a message, an operation,
// the resources, the history (history.go), the summary's two lists, the compared source's four
// fields, a warning, and a multi-source Application's five lists and the last sync's resources
// (multisource.go)): 123,456 bytes, under 121 KiB. JSON writes at most 6 bytes for each of them
// (\u003c for "<"), so the status argocd-pull writes stays below 724 KiB, far below etcd's request
// limit (1.5 MiB), whatever the cluster writes.
const (
	// MaxWordLength caps values Argo CD takes from short fixed lists, health and sync status and
	// operation phase (the longest, "Progressing" and "Terminating", have 11 characters), and the
	// delivery ID copied into the operation (argocd-pull's have 16).
	MaxWordLength = 64
	// MaxTimeLength caps timestamps: RFC 3339 with nanoseconds and a zone offset has 35 characters.
	MaxTimeLength = 64
	// MaxRevisionLength caps the revisions (the compared one, and the one the last operation
	// synced): a Git SHA-1 has 40 characters, a SHA-256 64, an
	// OCI digest 71; a multi-source Application reports one per source, joined: 2 KiB holds 28
	// digests.
	MaxRevisionLength = 2 * 1024
	// MaxMessageLength caps the operation's message. Argo CD's sync failures name each resource
	// that failed with its error: 8 KiB holds dozens.
	MaxMessageLength = 8 * 1024
	// MaxOperationSize caps the operation (JSON): sync options, retry, info, and for a selective
	// sync the resources it names, about 100 bytes each: 16 KiB holds over a hundred. A larger
	// one is not copied.
	MaxOperationSize = 16 * 1024
	// MaxWarningLength caps the message of the FeedbackWarningCondition: a phrase for each value
	// cut, about 50 bytes each.
	MaxWarningLength = 2048
	// MaxResourcesSize caps status.resources (JSON), the table argocd app get prints: the
	// resources are copied in order while they fit, each with its known fields only, names cut to
	// MaxResourceNameLength and the health message to MaxResourceMessageLength. (OCM's work agent
	// returns a list of up to 1024 bytes, about six resources; a larger one is not reported.)
	MaxResourcesSize         = 32 * 1024
	MaxResourceNameLength    = 253
	MaxResourceMessageLength = 512
	// MaxSummaryListSize caps each list of status.summary (JSON), the images and external URLs
	// the UI shows: the first that fit are copied, each cut to MaxSummaryValueLength.
	MaxSummaryListSize    = 2 * 1024
	MaxSummaryValueLength = 512
	// MaxComparedToLength caps each field of status.sync.comparedTo's source (repoURL, path,
	// targetRevision, chart) as copied; the comparison (Derive) reads them whole.
	MaxComparedToLength = 512
)

// FeedbackWarningCondition is the condition type argocd-pull sets on a hub Application whose
// managed cluster reported values over the caps (cut) or that do not parse (ignored). Argo CD
// shows conditions whose type ends in "Warning" as warnings.
const FeedbackWarningCondition = "PullFeedbackWarning"

// CredentialWarningCondition is the condition type argocd-pull sets on a hub Application whose
// repositories would use a hub credential that does not reach its cluster for it
// (docs/design-private-repositories.md): its project or namespace is not the credential's, or the
// cluster holds a Secret of that name that argocd-pull did not write. Only names and URLs, never a
// value. A warning, to Argo CD.
const CredentialWarningCondition = "PullCredentialWarning"

// StaleCondition is the condition type argocd-pull sets on a hub Application whose cluster's
// status is not current: its ManagedCluster is not available, or its work agent has not applied
// the current ManifestWork in time (the report's StaleStatus says the same). A warning, to Argo CD.
const StaleCondition = "PullStatusStaleWarning"

// Truncate cuts s to at most limit bytes, ending in "..." when cut, without splitting a UTF-8
// character.
func Truncate(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	if limit < len("...") {
		return "..."[:max(limit, 0)]
	}
	cut := limit - len("...")
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// Cut cuts a reported value to at most limit bytes, ending in a marker that says it was cut and
// from what size, so that a reader never takes it for the whole value; a limit too small for the
// marker gets "..." alone. cut is false when s fits.
func Cut(s string, limit int) (value string, cut bool) {
	if len(s) <= limit {
		return s, false
	}
	marker := fmt.Sprintf(" [cut from %d bytes]", len(s))
	if limit < len(marker)+len("...") {
		return Truncate(s, limit), true
	}
	return Truncate(s, limit-len(marker)) + marker, true
}

// feedbackReader reads feedback values by name, and records what it cut or ignored.
type feedbackReader struct {
	values  map[string]string
	trimmed []string
}

func (r *feedbackReader) raw(name string) string {
	if r == nil {
		return "" // nothing to read (see observeSync)
	}
	return r.values[name]
}

// capped reads a value copied to the hub, cut to limit.
func (r *feedbackReader) capped(name string, limit int) string {
	return r.cut(name, r.values[name], limit)
}

func (r *feedbackReader) cut(name, value string, limit int) string {
	out, cut := Cut(value, limit)
	if cut {
		r.trimmed = append(r.trimmed, fmt.Sprintf("%s cut from %d to %d bytes", name, len(value), limit))
	}
	return out
}

func (r *feedbackReader) ignore(name, why string) {
	r.trimmed = append(r.trimmed, fmt.Sprintf("%s ignored: %s", name, why))
}

// revision is the synced revision; a multi-source Application reports one per source.
func (r *feedbackReader) revision(single, multi string) string {
	if v := r.raw(single); v != "" {
		return r.capped(single, MaxRevisionLength)
	}
	raw := r.raw(multi)
	if raw == "" {
		return ""
	}
	var revisions []string
	if err := json.Unmarshal([]byte(raw), &revisions); err != nil {
		r.ignore(multi, fmt.Sprintf("not a JSON list of strings (%d bytes)", len(raw)))
		return ""
	}
	return r.cut(multi, strings.Join(revisions, ","), MaxRevisionLength)
}

// operation is the operation the managed cluster ran, nil when it reported none or one that is
// over the cap or does not parse: never copied raw.
func (r *feedbackReader) operation(name string) map[string]any {
	raw := r.raw(name)
	if raw == "" {
		return nil
	}
	if len(raw) > MaxOperationSize {
		r.ignore(name, fmt.Sprintf("%d bytes, over its %d-byte cap", len(raw), MaxOperationSize))
		return nil
	}
	var op map[string]any
	if err := json.Unmarshal([]byte(raw), &op); err != nil || op == nil {
		r.ignore(name, "not a JSON object")
		return nil
	}
	return op
}

// hubSummary is the managed Application's status.summary as copied to the hub: its images and
// external URLs (lists of strings; one entry may arrive as that string), the first that fit in
// MaxSummaryListSize each; nil when it reported neither.
func hubSummary(images, externalURLs string) (out map[string]any, trimmed []string) {
	for _, l := range []struct{ feedback, key, raw string }{
		{manifestwork.FeedbackImages, "images", images},
		{manifestwork.FeedbackExternalURLs, "externalURLs", externalURLs},
	} {
		list, cut := cappedStrings(l.feedback, l.raw, MaxSummaryValueLength, MaxSummaryListSize, MaxSummaryListSize)
		trimmed = append(trimmed, cut...)
		if l.key == "externalURLs" {
			var dropped int
			list, dropped = webLinks(list)
			if dropped > 0 {
				trimmed = append(trimmed, fmt.Sprintf("%s: %d entries dropped: not an http or https URL", l.feedback, dropped))
			}
		}
		if len(list) > 0 {
			if out == nil {
				out = map[string]any{}
			}
			out[l.key] = list
		}
	}
	return out, trimmed
}

// webLinks keeps the http and https URLs with a host, and counts the others: the hub's Argo CD UI
// shows external URLs as links, and a javascript: or data: one would run in its origin.
func webLinks(list []any) (out []any, dropped int) {
	for _, v := range list {
		s, _ := v.(string)
		if u, err := url.Parse(s); err == nil && (strings.EqualFold(u.Scheme, "http") || strings.EqualFold(u.Scheme, "https")) && u.Host != "" {
			out = append(out, v)
		} else {
			dropped++
		}
	}
	return out, dropped
}

// hubComparedTo is the source the managed cluster compared against, as copied to the hub: each
// field cut to MaxComparedToLength.
func (r *feedbackReader) hubComparedTo(src *Source) *Source {
	if src == nil {
		return nil
	}
	out := Source{
		RepoURL:        r.cut(manifestwork.FeedbackComparedRepoURL, src.RepoURL, MaxComparedToLength),
		TargetRevision: r.cut(manifestwork.FeedbackComparedRevision, src.TargetRevision, MaxComparedToLength),
		Path:           r.cut(manifestwork.FeedbackComparedPath, src.Path, MaxComparedToLength),
		Chart:          r.cut(manifestwork.FeedbackComparedChart, src.Chart, MaxComparedToLength),
	}
	return &out
}

// putString sets m[key] to v cut to limit when v is a non-empty string, counting cuts.
func putString(m map[string]any, key string, v any, limit int, cut *int) {
	if s, ok := cutValue(v, limit, cut); ok {
		m[key] = s
	}
}

// cutValue is v cut to limit, counting cuts; ok is false when v is not a non-empty string.
func cutValue(v any, limit int, cut *int) (value string, ok bool) {
	s, ok := v.(string)
	if !ok || s == "" {
		return "", false
	}
	out, wasCut := Cut(s, limit)
	if wasCut {
		*cut++
	}
	return out, true
}

// warningMessage is the FeedbackWarningCondition's message saying what was cut or ignored, "" when
// nothing was.
func warningMessage(warnings []string) string {
	if len(warnings) == 0 {
		return ""
	}
	return Truncate("the managed cluster reported values over argocd-pull's caps or that do not parse: "+strings.Join(warnings, "; "), MaxWarningLength)
}
