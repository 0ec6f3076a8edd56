package report

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
	"github.com/argocd-pull/argocd-pull/internal/appstatus"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
)

// bound shrinks the report until it encodes within budget bytes, one step at a time, from what
// readers miss least to what they miss most, and adds a note for each step taken. The summary
// always counts every cluster.
//
// Every input ends within budget, whatever the clusters report: resources take at most a quarter
// of it (capResources), capEntries keeps the cluster entries that fit in the rest, and
// dropResources, should the notes leave too little, the resources that fit. What no step cuts, the
// summary and the notes (one per step taken and two from Build, each of bounded length), takes
// under minSizeBudget.
func bound(out *v1alpha1.AppConditions, budget int) {
	steps := []func(*v1alpha1.AppConditions) string{
		shortenMessages,
		trimHealthyEntries,
		capResources(budget),
		capConditionLists,
		dropHealthyEntries,
		trimAllEntries,
		capEntries(budget),
		dropResources(budget),
	}
	for _, step := range steps {
		if size(out) <= budget {
			return
		}
		if note := step(out); note != "" {
			out.Notes = append(out.Notes, note)
		}
	}
}

// minSizeBudget is the smallest budget bound can always reach: the summary and the notes (see
// bound) take about 3 KiB at most.
const minSizeBudget = 8 * 1024

func size(out any) int {
	data, err := json.Marshal(out)
	if err != nil {
		return 0
	}
	return len(data)
}

func healthyAndSynced(c v1alpha1.ClusterCondition) bool {
	return c.HealthStatus == argocd.HealthHealthy && c.SyncStatus == argocd.SyncSynced
}

func shortenMessages(out *v1alpha1.AppConditions) string {
	for i := range out.ClusterConditions {
		c := &out.ClusterConditions[i]
		if len(c.Conditions) == 0 {
			continue
		}
		// A copy: the entries' condition lists are shared with the Tracker that listed them.
		c.Conditions = slices.Clone(c.Conditions[:min(len(c.Conditions), 2)])
		for j := range c.Conditions {
			c.Conditions[j].Message = appstatus.Truncate(c.Conditions[j].Message, 128)
		}
	}
	return "condition messages cut to 128 characters and 2 per cluster to bound the report's size"
}

func trimHealthyEntries(out *v1alpha1.AppConditions) string {
	for i := range out.ClusterConditions {
		c := &out.ClusterConditions[i]
		if healthyAndSynced(*c) {
			c.App, c.OperationStatePhase, c.OperationStateStartedAt = "", "", ""
		}
	}
	return "app and operation fields omitted for Synced and Healthy clusters to bound the report's size"
}

// maxResources is how many resources a report lists at most, and resourceShare the share of
// its budget they may take (a quarter): the cluster entries are what readers look at first.
const (
	maxResources  = 500
	resourceShare = 4
)

func capResources(budget int) func(*v1alpha1.AppConditions) string {
	return func(out *v1alpha1.AppConditions) string {
		n := len(out.Resources)
		keep, used := 0, 0
		for keep < min(n, maxResources) {
			used += size(out.Resources[keep]) + 1 // and a comma
			if used > budget/resourceShare {
				break
			}
			keep++
		}
		if keep == n {
			return ""
		}
		out.Resources = out.Resources[:keep]
		return fmt.Sprintf("%d of %d resources listed to bound the report's size", keep, n)
	}
}

const maxClustersWithConditions = 100

func capConditionLists(out *v1alpha1.AppConditions) string {
	seen, cut := 0, 0
	for i := range out.ClusterConditions {
		c := &out.ClusterConditions[i]
		if len(c.Conditions) == 0 {
			continue
		}
		if seen < maxClustersWithConditions {
			seen++
			continue
		}
		c.Conditions = nil
		cut++
	}
	if cut == 0 {
		return ""
	}
	return fmt.Sprintf("conditions shown for the first %d clusters with errors; %d more clusters have errors (see their Applications)", maxClustersWithConditions, cut)
}

func dropHealthyEntries(out *v1alpha1.AppConditions) string {
	kept := out.ClusterConditions[:0]
	dropped := 0
	for _, c := range out.ClusterConditions {
		if healthyAndSynced(c) {
			dropped++
			continue
		}
		kept = append(kept, c)
	}
	out.ClusterConditions = kept
	if dropped == 0 {
		return ""
	}
	return fmt.Sprintf("%d "+noteHealthyNotListed, dropped)
}

// The notes of the steps that leave clusters out of a report's list.
const (
	noteHealthyNotListed = "Synced and Healthy clusters not listed to bound the report's size (the summary counts them)"
	noteClustersCut      = "clusters listed to bound the report's size (the summary counts all)"
)

// UnlistedAreHealthy reports whether every cluster of a report with these notes that the report
// does not list is Synced and Healthy: bound left out those entries, and only those.
func UnlistedAreHealthy(notes []string) bool {
	healthyOut := false
	for _, n := range notes {
		if strings.HasSuffix(n, noteClustersCut) {
			return false
		}
		healthyOut = healthyOut || strings.HasSuffix(n, noteHealthyNotListed)
	}
	return healthyOut
}

func trimAllEntries(out *v1alpha1.AppConditions) string {
	for i := range out.ClusterConditions {
		c := &out.ClusterConditions[i]
		c.App, c.OperationStateStartedAt = "", ""
	}
	return "app and operation start omitted for every cluster to bound the report's size"
}

func capEntries(budget int) func(*v1alpha1.AppConditions) string {
	return func(out *v1alpha1.AppConditions) string {
		return fitList(out, budget, &out.ClusterConditions, "%d of %d "+noteClustersCut)
	}
}

func dropResources(budget int) func(*v1alpha1.AppConditions) string {
	return func(out *v1alpha1.AppConditions) string {
		return fitList(out, budget, &out.Resources, "%d of %d resources listed to bound the report's size")
	}
}

// fitList keeps the longest head of the list (a field of out) with which out fits budget, and
// returns the note saying so (format takes kept and all); "" for an empty list.
func fitList[T any](out *v1alpha1.AppConditions, budget int, list *[]T, format string) string {
	all := *list
	n := len(all)
	if n == 0 {
		return ""
	}
	note := func(kept int) string { return fmt.Sprintf(format, kept, n) }
	return note(fit(out, budget, n, func(k int) { *list = all[:k] }, note))
}

// fit finds the most items, of n, that out keeps (through keep) while it encodes within budget
// with the note saying so, keeps them and returns how many. Its size grows with the items kept, so
// a binary search finds it in log n encodings.
func fit(out *v1alpha1.AppConditions, budget, n int, keep func(int), note func(kept int) string) int {
	// The note is measured at its longest: with fewer items kept it has no more digits.
	out.Notes = append(out.Notes, note(n))
	defer func() { out.Notes = out.Notes[:len(out.Notes)-1] }()
	lo, hi := 0, n
	for lo < hi {
		mid := (lo + hi + 1) / 2
		keep(mid)
		if size(out) <= budget {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	keep(lo)
	return lo
}
