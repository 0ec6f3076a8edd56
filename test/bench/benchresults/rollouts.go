package benchresults

import (
	"cmp"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
)

// RolloutReport is one run of the rollout scenarios (test/bench/results/rollouts/results.json):
// the real ApplicationSet controller and argocd-pull on a real apiserver, the clusters simulated
// (internal/test/simagent).
type RolloutReport struct {
	Run
	ArgoCDVersion string          `json:"argocdVersion,omitempty"`
	Results       []RolloutResult `json:"results"`
}

// LoadRollouts reads a rollout results file.
func LoadRollouts(path string) (RolloutReport, error) { return load[RolloutReport](path) }

// defaultApplicationSetClientQPS is the ApplicationSet controller's client limit when
// ARGOCD_K8S_CLIENT_QPS is not set.
const defaultApplicationSetClientQPS = 50

// RolloutResult is what one size measured.
type RolloutResult struct {
	Clusters int `json:"clusters"`
	// SyncSeconds is how long each simulated Argo CD's sync runs; Steps the RollingSync steps.
	SyncSeconds float64 `json:"syncSeconds"`
	Steps       int     `json:"steps"`
	// ApplicationSetClientQPS is the ApplicationSet controller's client limit in requests per
	// second (ARGOCD_K8S_CLIENT_QPS, burst twice that; Argo CD's default is 50). 0 in runs made
	// before it was recorded, which ran with the default.
	ApplicationSetClientQPS float64 `json:"applicationSetClientQPS,omitempty"`
	// ApplicationSetMaxResourcesStatusCount caps the resources the ApplicationSet controller keeps
	// in an ApplicationSet's status (ARGOCD_APPLICATIONSET_CONTROLLER_MAX_RESOURCES_STATUS_COUNT);
	// 0 for every one, Argo CD's default.
	ApplicationSetMaxResourcesStatusCount int `json:"applicationSetMaxResourcesStatusCount,omitempty"`

	// FirstRollout: a new RollingSync ApplicationSet, from its creation until every Application is
	// Synced and Healthy at its first revision.
	FirstRollout *Rollout `json:"firstRollout,omitempty"`
	// NewRevision: a new revision committed to it (its template's targetRevision).
	NewRevision *Rollout `json:"newRevision,omitempty"`
	// SecondCommit: a revision committed while the previous one is part-way through its steps.
	SecondCommit *SecondCommit `json:"secondCommit,omitempty"`
	// FailingRevision: a revision whose sync fails on every cluster, then the next one.
	FailingRevision *FailingRollout `json:"failingRevision,omitempty"`
	// NoRollingSync: a revision committed to an ApplicationSet without a strategy, whose
	// Applications sync themselves (automated sync policy).
	NoRollingSync *Rollout `json:"noRollingSync,omitempty"`
	// Concurrent: a new revision committed to several RollingSync ApplicationSets at once.
	Concurrent *Rollout `json:"concurrent,omitempty"`

	Controller               Usage `json:"controller"`
	ApplicationSetController Usage `json:"applicationSetController"`
	// ApplicationSetReconcile is how long the ApplicationSet controller's reconciles took over the
	// whole run at this size (those that ran to their end, from its log): it reconciles an
	// ApplicationSet with all its Applications at once, and requests a step's syncs at the end of
	// one. Nil in runs made before it was recorded.
	ApplicationSetReconcile *Percentiles `json:"applicationSetReconcile,omitempty"`
	// AgentWrites counts the simulated agents' status writes, and Redeliveries the sync requests
	// a cluster's Argo CD started twice over the whole run (each must start once).
	AgentWrites  int64 `json:"agentWrites"`
	Redeliveries int   `json:"redeliveries"`

	// Limit is the same scenarios at this size without the pull model: the same hub, ApplicationSet
	// controller and simulated syncs, no argocd-pull, the clusters' Argo CD syncing the hub
	// Applications themselves (simagent.Push). Its times are the limit for this machine. Nil in
	// runs made before it was measured, and in the limit itself.
	Limit *RolloutResult `json:"limit,omitempty"`
}

// Rollout is one revision reaching a set of Applications.
type Rollout struct {
	ApplicationSets int `json:"applicationSets"`
	Applications    int `json:"applications"`
	// Complete says every Application reached the revision within the scenario's patience.
	Complete bool `json:"complete"`
	// Seconds: from the commit (or the ApplicationSet's creation) until the last Application was
	// Synced and Healthy at the revision on the hub (Succeeded, as the ApplicationSet controller
	// requires to go on).
	Seconds float64 `json:"seconds"`
	// AgentsSeconds is the clusters' own share: the sync duration times the steps.
	AgentsSeconds float64 `json:"agentsSeconds"`
	// Ratio is Seconds / AgentsSeconds.
	Ratio float64 `json:"ratio"`
	// Steps: per RollingSync step, when its last Application was done; one entry without steps.
	Steps []Step `json:"steps"`
	// HubAddedPerStep summarises each step's length minus the sync duration: what the hub (the
	// ApplicationSet controller, argocd-pull, the apiserver, the agents' writes) added.
	HubAddedPerStep Percentiles `json:"hubAddedPerStep"`
	// CPU is what each process of the hub used meanwhile: on two cores, what bounds the rollout.
	// Nil in runs made before it was recorded.
	CPU *CPUShare `json:"cpu,omitempty"`
	// APIServerWrites counts the writes the apiserver answered meanwhile, by resource (with its
	// subresource) and verb ("applications PATCH"), and by resource those it stored in etcd
	// ("applications stored": a write that changes nothing is not stored), from its own metrics.
	// Nil in runs made before it was recorded.
	APIServerWrites map[string]float64 `json:"apiserverWrites,omitempty"`
	// ControllerRequests counts argocd-pull's own requests meanwhile, by HTTP method: its share
	// of APIServerWrites. Nil in runs made before it was recorded.
	ControllerRequests map[string]float64 `json:"controllerRequests,omitempty"`
	// ControllerRequestsByResource counts them by verb and resource ("patch applications",
	// "update manifestworks"), from argocd_pull_api_requests_total. Nil in runs made before it was
	// recorded.
	ControllerRequestsByResource map[string]float64 `json:"controllerRequestsByResource,omitempty"`
	// Per Application: RequestLag from the previous step done (the commit for the first) until the
	// ApplicationSet controller's sync request was on the hub Application; Delivery from that
	// request (without RollingSync: from the commit, the Applications syncing themselves) until the
	// cluster started the sync; Status from the sync's end on the cluster until
	// the hub Application showed it done.
	RequestLag Percentiles `json:"requestLag"`
	Delivery   Percentiles `json:"delivery"`
	Status     Percentiles `json:"status"`
	// SyncsPerApplication is the syncs of the revision the clusters started, per Application: 1
	// when each was asked once; more when the ApplicationSet controller asked a step's sync again
	// and the second request ran too.
	SyncsPerApplication float64 `json:"syncsPerApplication"`
	// FirstDelivery (a new ApplicationSet only): from its creation until each Application was on
	// its cluster.
	FirstDelivery *Percentiles `json:"firstDelivery,omitempty"`
	// FirstDeliveryFromCreation (a new ApplicationSet only): from each Application's creation on
	// the hub (the ApplicationSet controller creates them one by one) until it was on its cluster:
	// argocd-pull's and the agents' share of FirstDelivery. Nil in runs made before it was recorded.
	FirstDeliveryFromCreation *Percentiles `json:"firstDeliveryFromCreation,omitempty"`
	// ReportSeconds (without RollingSync): from the commit until the report showed every cluster
	// at the revision.
	ReportSeconds float64 `json:"reportSeconds,omitempty"`
}

// Step is one RollingSync step of a rollout.
type Step struct {
	Step         int     `json:"step"`
	Applications int     `json:"applications"`
	DoneSeconds  float64 `json:"doneSeconds"` // since the commit
	Seconds      float64 `json:"seconds"`     // since the previous step was done
	HubAdded     float64 `json:"hubAddedSeconds"`
}

// SecondCommit is a commit made mid-rollout: the new revision must go through every step again,
// in order, and a step done at the earlier revision never counts for it.
type SecondCommit struct {
	// StepsDoneBefore is how many steps had the first revision when the second was committed.
	StepsDoneBefore int `json:"stepsDoneBefore"`
	// Rollout is the second revision, from its commit.
	Rollout *Rollout `json:"rollout"`
	// OutOfOrder counts Applications whose sync of the second revision was requested before
	// every Application of the step before theirs was done at it; DoneWithoutSync those the hub
	// showed done at it before their cluster had synced it. Both must be 0.
	OutOfOrder      int `json:"outOfOrder"`
	DoneWithoutSync int `json:"doneWithoutSync"`
}

// FailingRollout is a revision that fails on the first step's clusters.
type FailingRollout struct {
	// FirstStepFailedSeconds: from the commit until the hub showed every Application of the first
	// step Failed.
	FirstStepFailedSeconds float64 `json:"firstStepFailedSeconds"`
	// WatchedSeconds: then the later steps were watched this long, and BeyondFirstStep counts
	// their Applications whose cluster started a sync of the failing revision (0: the rollout
	// stopped at the first step).
	WatchedSeconds  float64 `json:"watchedSeconds"`
	BeyondFirstStep int     `json:"beyondFirstStep"`
	// Fixed is the next revision, committed after it, rolled out through every step.
	Fixed *Rollout `json:"fixed,omitempty"`
}

// RolloutMarkdown renders the report as the results.md beside its results.json.
func (r RolloutReport) RolloutMarkdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Rollout benchmark results\n\n`%s` on %s, %s (%.0f s).\n\n", r.Command, r.Machine, r.Started, r.Seconds)
	if r.ControllerVersion != "" {
		fmt.Fprintf(&b, "argocd-pull: %s; Argo CD: %s.\n\n", r.ControllerVersion, r.ArgoCDVersion)
	}
	b.WriteString(r.RolloutTable())
	for _, res := range r.Results {
		fmt.Fprintf(&b, "\n## N=%d: per step of the new revision\n\n", res.Clusters)
		if res.NewRevision != nil {
			b.WriteString(stepTable(res.NewRevision.Steps))
		}
	}
	return b.String()
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
	row("ApplicationSet controller's client limit", func(res RolloutResult) string {
		qps := res.ApplicationSetClientQPS
		if qps == 0 {
			qps = defaultApplicationSetClientQPS
		}
		return fmt.Sprintf("%g requests/s, burst %d", qps, int(2*qps))
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
	row("syncs per Application (1: each asked once)", func(res RolloutResult) string {
		if res.NewRevision == nil {
			return "-"
		}
		return fmt.Sprintf("%.2f", res.NewRevision.SyncsPerApplication)
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
	total := 0.0
	for k, v := range ro.ControllerRequestsByResource {
		verb, _, _ := strings.Cut(k, " ")
		if slices.Contains(writeVerbs, verb) {
			per[k] = v / float64(ro.Applications)
			total += per[k]
		}
	}
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

// IsRollouts says whether a results file, named by its path, holds the rollout scenarios: those
// are kept in a directory named rollouts.
func IsRollouts(path string) bool { return filepath.Base(filepath.Dir(path)) == "rollouts" }

// RenderFile is the results.md of a results.json, of either kind.
func RenderFile(path string) (string, error) {
	if IsRollouts(path) {
		r, err := LoadRollouts(path)
		return r.RolloutMarkdown(), err
	}
	r, err := Load(path)
	return r.Markdown(), err
}

// tableFile is the table a bench-table marker shows for a results file, of either kind.
func tableFile(path string) (string, error) {
	if IsRollouts(path) {
		r, err := LoadRollouts(path)
		return r.RolloutTable(), err
	}
	r, err := Load(path)
	return r.Markdown(), err
}
