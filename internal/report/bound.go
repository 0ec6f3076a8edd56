package report

import (
	"encoding/json"
	"fmt"

	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
	"github.com/argocd-pull/argocd-pull/internal/appstatus"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
)

// bound shrinks the report until it encodes within budget bytes, one step at a time, from what
// readers miss least to what they miss most, and adds a note for each step taken. The summary
// always counts every cluster.
func bound(out *v1alpha1.AppConditions, budget int) {
	steps := []func(*v1alpha1.AppConditions) string{
		shortenMessages,
		trimHealthyEntries,
		capResources,
		capConditionLists,
		dropHealthyEntries,
		trimAllEntries,
		capEntries(budget),
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

func size(out *v1alpha1.AppConditions) int {
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
		if len(c.Conditions) > 2 {
			c.Conditions = c.Conditions[:2]
		}
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

const maxResources = 500

func capResources(out *v1alpha1.AppConditions) string {
	if len(out.Resources) <= maxResources {
		return ""
	}
	n := len(out.Resources)
	out.Resources = out.Resources[:maxResources]
	return fmt.Sprintf("%d of %d resources listed to bound the report's size", maxResources, n)
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
	return fmt.Sprintf("%d Synced and Healthy clusters not listed to bound the report's size (the summary counts them)", dropped)
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
		n := len(out.ClusterConditions)
		if n == 0 {
			return ""
		}
		// Entries are about the same size: keep the share that fits, then trim to be sure.
		keep := n * budget / (size(out) + 1) * 9 / 10
		out.ClusterConditions = out.ClusterConditions[:keep]
		for keep > 0 && size(out) > budget {
			keep--
			out.ClusterConditions = out.ClusterConditions[:keep]
		}
		return fmt.Sprintf("%d of %d clusters listed to bound the report's size (the summary counts all)", keep, n)
	}
}
