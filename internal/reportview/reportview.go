// Package reportview renders MulticlusterApplicationSetReports as text for `argocd-pull status`:
// one report as a table of clusters, or many as one line each. Rendering is a pure function of
// the reports, a width and a colour flag, so every layout decision is unit-tested without an
// apiserver.
package reportview

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
	"github.com/argocd-pull/argocd-pull/internal/report"
)

// DefaultWidth is the terminal width the output fits when Options.Width is not set.
const DefaultWidth = 80

// Options control the rendering.
type Options struct {
	// Width is the number of columns every line fits (DefaultWidth when 0).
	Width int
	// Color wraps statuses and errors in ANSI colours; only for terminals.
	Color bool
	// AllNamespaces adds a NAMESPACE column to List.
	AllNamespaces bool
}

func (o Options) width() int {
	if o.Width <= 0 {
		return DefaultWidth
	}
	return o.Width
}

// ANSI colours.
const (
	green  = "\x1b[32m"
	yellow = "\x1b[33m"
	red    = "\x1b[31m"
	reset  = "\x1b[0m"
)

const (
	gap = "  "
	// minError is the width the ERROR column keeps before long cluster names move to a line of
	// their own.
	minError = 24
	// minKey is the narrowest a CLUSTER, NAMESPACE or NAME column gets.
	minKey = 12
	// maxRevision caps revisions that are not git SHAs (Helm chart versions, tags).
	maxRevision = 12
	// shortSHA is how much of a git SHA is shown, as git and Argo CD do.
	shortSHA = 7
	ellipsis = "..."
)

// Report renders one report: a row per cluster (CLUSTER, SYNC, HEALTH, REVISION, PHASE and its
// first error), then the summary counts and the report's notes.
func Report(r *v1alpha1.MulticlusterApplicationSetReport, o Options) string {
	var b strings.Builder
	clusters := r.Statuses.ClusterConditions
	if len(clusters) == 0 {
		b.WriteString("No clusters in the report yet.\n")
	} else {
		t := table{
			cols: []column{
				{header: "CLUSTER", key: true},
				{header: "SYNC"}, {header: "HEALTH"}, {header: "REVISION"}, {header: "PHASE"},
				{header: "ERROR", flex: true},
			},
		}
		for _, c := range clusters {
			t.rows = append(t.rows, []cell{
				{text: c.Cluster},
				{text: orDash(c.SyncStatus), color: syncColor(c.SyncStatus)},
				{text: orDash(c.HealthStatus), color: healthColor(c.HealthStatus)},
				{text: orDash(shortRevision(c.SyncRevision))},
				{text: orDash(c.OperationStatePhase), color: phaseColor(c.OperationStatePhase)},
				{text: firstError(c.Conditions), color: conditionColor(c.Conditions)},
			})
		}
		t.write(&b, o)
	}
	b.WriteString("\n")
	writeWrapped(&b, summaryLine(r.Statuses.Summary), "", "  ", o.width())
	if len(r.Statuses.Notes) > 0 {
		b.WriteString("\nNotes:\n")
		for _, n := range r.Statuses.Notes {
			writeWrapped(&b, sanitize(n), "- ", "  ", o.width())
		}
	}
	return b.String()
}

// List renders one line per report: NAMESPACE (with AllNamespaces), NAME and the summary counts,
// in columns sized as kubectl sizes them (a long name widens its column, never splits a row).
// Reports are sorted by namespace and name.
func List(reports []v1alpha1.MulticlusterApplicationSetReport, o Options) string {
	sorted := make([]v1alpha1.MulticlusterApplicationSetReport, len(reports))
	copy(sorted, reports)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].Namespace != sorted[j].Namespace {
			return sorted[i].Namespace < sorted[j].Namespace
		}
		return sorted[i].Name < sorted[j].Name
	})
	t := table{wide: true}
	if o.AllNamespaces {
		t.cols = append(t.cols, column{header: "NAMESPACE", key: true})
	}
	t.cols = append(t.cols, column{header: "NAME", key: true},
		column{header: "CLUSTERS"}, column{header: "SYNCED", narrowGap: true},
		column{header: "HEALTHY", narrowGap: true}, column{header: "IN-PROGRESS", narrowGap: true},
		column{header: "NOT-HEALTHY", narrowGap: true})
	for _, r := range sorted {
		s := r.Statuses.Summary
		clusters := count(s.Clusters)
		var row []cell
		if o.AllNamespaces {
			row = append(row, cell{text: r.Namespace})
		}
		row = append(row,
			cell{text: r.Name},
			cell{text: countText(s.Clusters)},
			cell{text: countText(s.Synced), color: allColor(count(s.Synced), clusters)},
			cell{text: countText(s.Healthy), color: allColor(count(s.Healthy), clusters)},
			cell{text: countText(s.InProgress), color: nonZeroColor(count(s.InProgress), yellow)},
			cell{text: countText(s.NotHealthy), color: notHealthyColor(count(s.NotHealthy), count(s.InProgress))},
		)
		t.rows = append(t.rows, row)
	}
	var b strings.Builder
	t.write(&b, o)
	return b.String()
}

func summaryLine(s v1alpha1.ReportSummary) string {
	noun := "clusters"
	if count(s.Clusters) == 1 {
		noun = "cluster"
	}
	return fmt.Sprintf("%s %s: %s synced, %s healthy, %s in progress, %s not healthy, %s not synced",
		countText(s.Clusters), noun, countText(s.Synced), countText(s.Healthy), countText(s.InProgress),
		countText(s.NotHealthy), countText(s.NotSynced))
}

// firstError is "<type>: <message>" of the first condition, the one the controller puts first
// because it explains the state best.
func firstError(conds []v1alpha1.Condition) string {
	if len(conds) == 0 {
		return ""
	}
	c := conds[0]
	switch {
	case c.Type == "":
		return c.Message
	case c.Message == "":
		return c.Type
	}
	return c.Type + ": " + c.Message
}

// conditionColor is yellow for a paused cluster (nothing is wrong there), red for the rest.
func conditionColor(conds []v1alpha1.Condition) string {
	if len(conds) > 0 && conds[0].Type == report.ConditionPaused {
		return yellow
	}
	return red
}

// shortRevision shows a git SHA as its first 7 characters and caps anything else.
func shortRevision(rev string) string {
	rev = sanitize(rev)
	if len(rev) > shortSHA && isHex(rev) {
		return rev[:shortSHA]
	}
	return truncateEnd(rev, maxRevision)
}

func isHex(s string) bool {
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return false
		}
	}
	return true
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// count parses a summary count; the documents' schema stores them as strings.
func count(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return n
}

func countText(s string) string {
	if s == "" {
		return "0"
	}
	return s
}

func syncColor(s string) string {
	switch s {
	case "Synced":
		return green
	case "OutOfSync":
		return yellow
	}
	return ""
}

func healthColor(s string) string {
	switch s {
	case "Healthy":
		return green
	case "Progressing":
		return yellow
	case "Degraded", "Missing":
		return red
	}
	return ""
}

func phaseColor(s string) string {
	switch s {
	case "Succeeded":
		return green
	case "Running", "Terminating":
		return yellow
	case "Failed", "Error":
		return red
	}
	return ""
}

func allColor(n, clusters int) string {
	if clusters > 0 && n == clusters {
		return green
	}
	return ""
}

func nonZeroColor(n int, color string) string {
	if n > 0 {
		return color
	}
	return ""
}

// notHealthyColor is yellow while every unhealthy cluster is still progressing, red otherwise.
func notHealthyColor(notHealthy, inProgress int) string {
	switch {
	case notHealthy == 0:
		return ""
	case notHealthy <= inProgress:
		return yellow
	}
	return red
}
