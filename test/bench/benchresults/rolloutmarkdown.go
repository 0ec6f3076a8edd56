package benchresults

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// RolloutMarkdown renders the report as the results.md beside its results.json.
func (r RolloutReport) RolloutMarkdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Rollout benchmark results\n\n`%s` on %s, %s (%.0f s).\n\n", r.Command, r.MachineLine(), r.Started, r.Seconds)
	if r.ControllerVersion != "" {
		fmt.Fprintf(&b, "argocd-pull: %s; Argo CD: %s.\n\n", r.ControllerVersion, r.ArgoCDVersion)
	}
	if l := r.LimitRun; l != nil {
		fmt.Fprintf(&b, "The limit, run apart: `%s` on %s, %s, %.0f s of the limit.\n\n", l.Command, l.MachineLine(), l.Started, l.Seconds)
	}
	b.WriteString(r.RolloutTable())
	for _, res := range r.Results {
		fmt.Fprintf(&b, "\n## N=%d: per step of the new revision\n\n", res.Clusters)
		if res.NewRevision != nil {
			b.WriteString(stepTable(res.NewRevision.Steps))
		}
		fmt.Fprintf(&b, "\n## N=%d: requests and writes of each scenario\n\n", res.Clusters)
		b.WriteString(requestTable(res))
		if res.Limit != nil {
			fmt.Fprintf(&b, "\n## N=%d: the limit (no pull model), requests and writes of each scenario\n\n", res.Clusters)
			b.WriteString(requestTable(*res.Limit))
		}
	}
	return b.String()
}

// requestTable lists, per scenario of one size, its Applications, argocd-pull's requests and the
// apiserver's writes (the five largest counts), as its results.json holds them.
func requestTable(res RolloutResult) string {
	var b strings.Builder
	b.WriteString("| scenario | Applications | argocd-pull's requests | the apiserver's writes, most first |\n|---|---|---|---|\n")
	for _, s := range []struct {
		name string
		ro   *Rollout
	}{
		{"a new RollingSync ApplicationSet", res.FirstRollout},
		{"a new revision", res.NewRevision},
		{"a second commit mid-rollout", secondCommitRollout(res.SecondCommit)},
		{"the next revision after a failing one", fixedRollout(res.FailingRevision)},
		{"without RollingSync", res.NoRollingSync},
		{"concurrent RollingSync ApplicationSets", res.Concurrent},
	} {
		if s.ro == nil {
			continue
		}
		requests := "-"
		if len(s.ro.ControllerRequests) > 0 {
			requests = fmt.Sprintf("%.0f (%s)", Total(s.ro.ControllerRequests), mostWrites(s.ro.ControllerRequests, 5))
		}
		writes := "-"
		if len(s.ro.APIServerWrites) > 0 {
			writes = mostWrites(s.ro.APIServerWrites, 5)
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s |\n", s.name, s.ro.Applications, requests, writes)
	}
	return b.String()
}

func secondCommitRollout(s *SecondCommit) *Rollout {
	if s == nil {
		return nil
	}
	return s.Rollout
}

func fixedRollout(f *FailingRollout) *Rollout {
	if f == nil {
		return nil
	}
	return f.Fixed
}

// RolloutTable is the summary table of the rollout scenarios, one column per size.
func (r RolloutReport) RolloutTable() string {
	var b strings.Builder
	b.WriteString("| |")
	for _, res := range r.Results {
		fmt.Fprintf(&b, " N=%d |", res.Clusters)
	}
	b.WriteString("\n|---|")
	for range r.Results {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	row := func(name string, cell func(RolloutResult) string) {
		fmt.Fprintf(&b, "| %s |", name)
		for _, res := range r.Results {
			fmt.Fprintf(&b, " %s |", cell(res))
		}
		b.WriteString("\n")
	}
	rollout := func(ro *Rollout) string {
		if ro == nil {
			return "-"
		}
		done := ""
		if !ro.Complete {
			done = " (incomplete)"
		}
		return fmt.Sprintf("%.1f s for %d Applications, %.2fx the agents' %.0f s%s", ro.Seconds, ro.Applications, ro.Ratio, ro.AgentsSeconds, done)
	}
	row("sync duration, steps", func(res RolloutResult) string { return fmt.Sprintf("%.0f s, %d", res.SyncSeconds, res.Steps) })
	row("Argo CD's comparison of a changed Application", func(res RolloutResult) string {
		if res.CompareSeconds == 0 {
			return "none: written at once"
		}
		return fmt.Sprintf("%.1f s", res.CompareSeconds)
	})
	row("ApplicationSet controller's client limit", func(res RolloutResult) string {
		qps := res.ApplicationSetClientQPS
		if qps == 0 {
			qps = defaultApplicationSetClientQPS
		}
		return fmt.Sprintf("%g requests/s, burst %d", qps, int(2*qps))
	})
	row("ApplicationSet templating", func(res RolloutResult) string {
		if res.Templating == "default" {
			return "Argo CD's default, cluster generator, the step from a cluster label"
		}
		return "goTemplate, clusterDecisionResource generator, the step from the cluster's name"
	})
	if slices.ContainsFunc(r.Results, func(res RolloutResult) bool { return res.ApplicationSetMaxResourcesStatusCount > 0 }) {
		row("resources the ApplicationSet controller keeps in an ApplicationSet's status", func(res RolloutResult) string {
			if res.ApplicationSetMaxResourcesStatusCount == 0 {
				return "every one"
			}
			return fmt.Sprintf("%d at most", res.ApplicationSetMaxResourcesStatusCount)
		})
	}
	row("a new RollingSync ApplicationSet, to every cluster", func(res RolloutResult) string { return rollout(res.FirstRollout) })
	row("its first delivery per Application", func(res RolloutResult) string {
		if res.FirstRollout == nil || res.FirstRollout.FirstDelivery == nil {
			return "-"
		}
		return seconds(*res.FirstRollout.FirstDelivery)
	})
	if slices.ContainsFunc(r.Results, func(res RolloutResult) bool {
		return res.FirstRollout != nil && res.FirstRollout.FirstDeliveryFromCreation != nil
	}) {
		row("its first delivery per Application, from the Application's creation", func(res RolloutResult) string {
			if res.FirstRollout == nil || res.FirstRollout.FirstDeliveryFromCreation == nil {
				return "-"
			}
			return seconds(*res.FirstRollout.FirstDeliveryFromCreation)
		})
	}
	row("a new revision, step by step", func(res RolloutResult) string { return rollout(res.NewRevision) })
	row("hub added per step (p50 / max)", func(res RolloutResult) string {
		if res.NewRevision == nil {
			return "-"
		}
		return fmt.Sprintf("%.1f / %.1f s", res.NewRevision.HubAddedPerStep.P50ms/1000, res.NewRevision.HubAddedPerStep.MaxMs/1000)
	})
	row("per Application: request after the previous step", func(res RolloutResult) string {
		return latency(res.NewRevision, func(r *Rollout) Percentiles { return r.RequestLag })
	})
	row("per Application: request to sync start on the cluster", func(res RolloutResult) string {
		return latency(res.NewRevision, func(r *Rollout) Percentiles { return r.Delivery })
	})
	row("per Application: sync end to the hub Application", func(res RolloutResult) string {
		return latency(res.NewRevision, func(r *Rollout) Percentiles { return r.Status })
	})
	cpu := func(label string, of func(RolloutResult) *Rollout) {
		if slices.ContainsFunc(r.Results, func(res RolloutResult) bool { return of(res) != nil && of(res).CPU != nil }) {
			row(label, func(res RolloutResult) string {
				if of(res) == nil || of(res).CPU == nil {
					return "-"
				}
				return of(res).CPU.String()
			})
		}
	}
	cpu("the new revision: cores busy", func(res RolloutResult) *Rollout { return res.NewRevision })
	if slices.ContainsFunc(r.Results, func(res RolloutResult) bool { return res.NewRevision != nil && res.NewRevision.APIServerWrites != nil }) {
		row("the new revision: the apiserver's writes (stored: those that reached etcd), most first", func(res RolloutResult) string {
			if res.NewRevision == nil || res.NewRevision.APIServerWrites == nil {
				return "-"
			}
			return mostWrites(res.NewRevision.APIServerWrites, 5)
		})
		row("the new revision: argocd-pull's requests", func(res RolloutResult) string {
			if res.NewRevision == nil || res.NewRevision.ControllerRequests == nil {
				return "-"
			}
			return mostWrites(res.NewRevision.ControllerRequests, 5)
		})
	}
	if slices.ContainsFunc(r.Results, func(res RolloutResult) bool { return res.NewRevision != nil && res.NewRevision.Reconciles != nil }) {
		row("the new revision: argocd-pull's reconciles, mean queued / working", func(res RolloutResult) string {
			if res.NewRevision == nil || res.NewRevision.Reconciles == nil {
				return "-"
			}
			return reconciles(res.NewRevision.Reconciles)
		})
	}
	if slices.ContainsFunc(r.Results, func(res RolloutResult) bool {
		return res.FirstRollout != nil && res.FirstRollout.ControllerRequestsByResource != nil
	}) {
		row("the first rollout: argocd-pull's writes per Application, by verb and resource", func(res RolloutResult) string {
			if res.FirstRollout == nil || res.FirstRollout.ControllerRequestsByResource == nil {
				return "-"
			}
			return res.FirstRollout.WritesPerApplication()
		})
	}
	// syncs is a rollout's syncs per Application, with its limit's beside it when there is one.
	syncs := func(res RolloutResult, of func(RolloutResult) *Rollout) string {
		ro := of(res)
		if ro == nil {
			return "-"
		}
		out := fmt.Sprintf("%.2f", ro.SyncsPerApplication)
		if res.Limit != nil {
			if lim := of(*res.Limit); lim != nil {
				out += fmt.Sprintf(" (the limit: %.2f)", lim.SyncsPerApplication)
			}
		}
		return out
	}
	row("syncs per Application in the first rollout (1: each asked once)", func(res RolloutResult) string {
		return syncs(res, func(r RolloutResult) *Rollout { return r.FirstRollout })
	})
	row("syncs per Application, a new revision", func(res RolloutResult) string {
		return syncs(res, func(r RolloutResult) *Rollout { return r.NewRevision })
	})
	row("a second commit mid-rollout: the new revision", func(res RolloutResult) string {
		if res.SecondCommit == nil || res.SecondCommit.Rollout == nil {
			return "-" // not run, or stopped before the second commit
		}
		return fmt.Sprintf("%s; committed after %d steps; %d out of order, %d done without a sync", rollout(res.SecondCommit.Rollout),
			res.SecondCommit.StepsDoneBefore, res.SecondCommit.OutOfOrder, res.SecondCommit.DoneWithoutSync)
	})
	row("a failing revision: Applications beyond the first step that synced it", func(res RolloutResult) string {
		if res.FailingRevision == nil {
			return "-"
		}
		return fmt.Sprintf("%d (watched %.0f s after the first step failed)", res.FailingRevision.BeyondFirstStep, res.FailingRevision.WatchedSeconds)
	})
	row("the next revision after it", func(res RolloutResult) string {
		if res.FailingRevision == nil {
			return "-"
		}
		return rollout(res.FailingRevision.Fixed)
	})
	row("without RollingSync: a new revision on every cluster", func(res RolloutResult) string { return rollout(res.NoRollingSync) })
	row("without RollingSync: sync end to the hub Application", func(res RolloutResult) string {
		return latency(res.NoRollingSync, func(r *Rollout) Percentiles { return r.Status })
	})
	row("without RollingSync: the report at the revision", func(res RolloutResult) string {
		if res.NoRollingSync == nil || res.NoRollingSync.ReportSeconds == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f s", res.NoRollingSync.ReportSeconds)
	})
	row("concurrent RollingSync ApplicationSets, a new revision each", func(res RolloutResult) string {
		if res.Concurrent == nil {
			return "-"
		}
		return fmt.Sprintf("%d sets: %s", res.Concurrent.ApplicationSets, rollout(res.Concurrent))
	})
	cpu("concurrent: cores busy", func(res RolloutResult) *Rollout { return res.Concurrent })
	if slices.ContainsFunc(r.Results, func(res RolloutResult) bool { return res.Limit != nil }) {
		limit := func(name string, of func(RolloutResult) *Rollout) {
			row(name, func(res RolloutResult) string {
				if res.Limit == nil {
					return "-"
				}
				if a, ok := CompareWithLimit(of(res), of(*res.Limit)); ok {
					return a.String()
				}
				return "-"
			})
		}
		limit("against the limit (the same without the pull model): a new RollingSync ApplicationSet", func(res RolloutResult) *Rollout { return res.FirstRollout })
		limit("against the limit: a new revision, step by step", func(res RolloutResult) *Rollout { return res.NewRevision })
		limit("against the limit: concurrent RollingSync ApplicationSets", func(res RolloutResult) *Rollout { return res.Concurrent })
		row("the limit: cores busy in its first rollout", func(res RolloutResult) string {
			if res.Limit == nil || res.Limit.FirstRollout == nil || res.Limit.FirstRollout.CPU == nil {
				return "-"
			}
			return res.Limit.FirstRollout.CPU.String()
		})
	}
	row("sync requests started twice on a cluster", func(res RolloutResult) string { return fmt.Sprint(res.Redeliveries) })
	row("argocd-pull: peak RSS, CPU", func(res RolloutResult) string {
		return fmt.Sprintf("%.0f MiB, %.0f s", res.Controller.PeakRSSMiB, res.Controller.CPUSeconds)
	})
	row("ApplicationSet controller: peak RSS, CPU", func(res RolloutResult) string {
		return fmt.Sprintf("%.0f MiB, %.0f s", res.ApplicationSetController.PeakRSSMiB, res.ApplicationSetController.CPUSeconds)
	})
	if slices.ContainsFunc(r.Results, func(res RolloutResult) bool { return res.ApplicationSetReconcile != nil }) {
		row("ApplicationSet controller: one reconcile", func(res RolloutResult) string {
			if res.ApplicationSetReconcile == nil {
				return "-"
			}
			return seconds(*res.ApplicationSetReconcile)
		})
	}
	return b.String()
}

// writeVerbs are the verbs of the requests that change something.
var writeVerbs = []string{"create", "update", "patch", "delete"}

// WritesPerApplication is argocd-pull's writes in the rollout per Application, in all and by verb
// and resource, most first: "5.80: 2.00 patch applications, 1.90 update manifestworks, ...".
func (ro *Rollout) WritesPerApplication() string {
	if ro.Applications == 0 {
		return "-"
	}
	per := map[string]float64{}
	// The counts are summed, then divided once: a sum of the quotients in the map's random order
	// rounds differently from run to run (11.26 or 11.27 for the same file).
	writes := 0.0
	for k, v := range ro.ControllerRequestsByResource {
		verb, _, _ := strings.Cut(k, " ")
		if slices.Contains(writeVerbs, verb) {
			per[k] = v / float64(ro.Applications)
			writes += v
		}
	}
	total := writes / float64(ro.Applications)
	keys := slices.Collect(maps.Keys(per))
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(per[b], per[a]), strings.Compare(a, b)) })
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%.2f %s", per[k], k))
	}
	return fmt.Sprintf("%.2f: %s", total, strings.Join(parts, ", "))
}

// mostWrites is the n largest counts of writes, "applications PATCH 4,102, ...".
func mostWrites(writes map[string]float64, n int) string {
	keys := slices.Collect(maps.Keys(writes))
	slices.SortFunc(keys, func(a, b string) int {
		if c := cmp.Compare(writes[b], writes[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, 0, n)
	for _, k := range keys[:min(n, len(keys))] {
		parts = append(parts, fmt.Sprintf("%s %.0f", k, writes[k]))
	}
	return strings.Join(parts, ", ")
}

func seconds(p Percentiles) string {
	return fmt.Sprintf("p50 %.1f s, p99 %.1f s", p.P50ms/1000, p.P99ms/1000)
}

func latency(r *Rollout, of func(*Rollout) Percentiles) string {
	if r == nil || of(r).Count == 0 {
		return "-"
	}
	p := of(r)
	return fmt.Sprintf("p50 %.2f s, p99 %.2f s", p.P50ms/1000, p.P99ms/1000)
}

func stepTable(steps []Step) string {
	var b strings.Builder
	b.WriteString("| step | Applications | done after | step length | hub added |\n|---|---|---|---|---|\n")
	for _, s := range steps {
		fmt.Fprintf(&b, "| %d | %d | %.1f s | %.1f s | %.1f s |\n", s.Step+1, s.Applications, s.DoneSeconds, s.Seconds, s.HubAdded)
	}
	return b.String()
}

// reconciles says, per controller in name order, its reconciles and their mean time queued and
// working: "appstatus 3,012: 5.21 / 0.012 s".
func reconciles(m map[string]ReconcileTimes) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(m)) {
		t := m[name]
		parts = append(parts, fmt.Sprintf("%s %s: %.2f / %.3f s", name, Thousands(t.Count), t.MeanQueuedMs/1000, t.MeanWorkingMs/1000))
	}
	return strings.Join(parts, "; ")
}
