package benchresults

import (
	"fmt"
	"strings"
	"testing"
)

func TestMostWritesListsTheLargestCountsFirst(t *testing.T) {
	writes := map[string]float64{"applications PATCH": 4102, "manifestworks PUT": 1000, "events POST": 12, "leases PUT": 1000, "applicationsets/status PUT": 30}
	if got, want := mostWrites(writes, 3), "applications PATCH 4102, leases PUT 1000, manifestworks PUT 1000"; got != want {
		t.Errorf("mostWrites = %q, want %q", got, want)
	}
	if got, want := mostWrites(map[string]float64{"applications PATCH": 2}, 5), "applications PATCH 2"; got != want {
		t.Errorf("mostWrites = %q, want %q", got, want)
	}
}

func TestARolloutIsComparedWithItsLimitStepByStep(t *testing.T) {
	steps := func(lengths ...float64) []Step {
		var out []Step
		for i, s := range lengths {
			out = append(out, Step{Step: i, Seconds: s})
		}
		return out
	}
	pull := &Rollout{Seconds: 60, Steps: steps(7, 5, 6, 8, 34)}
	limit := &Rollout{Seconds: 48, Steps: steps(6, 5.5, 5, 6, 25.5)}
	a, ok := CompareWithLimit(pull, limit)
	if !ok {
		t.Fatal("not compared")
	}
	if a.Ratio != 1.25 {
		t.Errorf("ratio %v, want 1.25", a.Ratio)
	}
	// Added per step: 1, -0.5, 1, 2, 8.5 s; sorted -0.5, 1, 1, 2, 8.5.
	if want := (Percentiles{Count: 5, P50ms: 1000, P90ms: 2000, P99ms: 2000, MaxMs: 8500}); a.AddedPerStep != want {
		t.Errorf("added per step %+v, want %+v", a.AddedPerStep, want)
	}
	if _, ok := CompareWithLimit(pull, nil); ok {
		t.Error("compared without a limit")
	}
	report := RolloutReport{Results: []RolloutResult{{Clusters: 1000, FirstRollout: pull, Limit: &RolloutResult{Clusters: 1000, FirstRollout: limit}}}}
	if got := report.RolloutTable(); !strings.Contains(got, "60.0 s against 48.0 s: 1.25x the limit; argocd-pull added per step p50 1.0 s, p99 2.0 s, max 8.5 s over 5 steps") {
		t.Errorf("the table does not compare the first rollout with its limit:\n%s", got)
	}
}

func TestWritesPerApplicationCountsOnlyWrites(t *testing.T) {
	ro := &Rollout{Applications: 100, ControllerRequestsByResource: map[string]float64{
		"patch applications": 200, "update manifestworks": 190, "create events": 100, "get applications": 7, "watch secrets": 1}}
	if got, want := ro.WritesPerApplication(), "4.90: 2.00 patch applications, 1.90 update manifestworks, 1.00 create events"; got != want {
		t.Errorf("WritesPerApplication = %q, want %q", got, want)
	}
}

// The total is the same on every rendering: the first rollout of rollouts-concurrent-1000 at
// 4c90d4c (11,265 writes for 1,000 Applications, on the rounding boundary) rendered 11.26 or 11.27
// by the map's order when the quotients were summed.
func TestWritesPerApplicationIsTheSameEachTime(t *testing.T) {
	ro := &Rollout{Applications: 1000, ControllerRequestsByResource: map[string]float64{
		"create manifestworks": 2000, "create multiclusterapplicationsetreports": 1, "delete manifestworks": 1000,
		"patch applications": 6000, "update manifestworks": 1994, "update multiclusterapplicationsetreports": 270}}
	first := ro.WritesPerApplication()
	if want := fmt.Sprintf("%.2f: ", 11265.0/1000); !strings.HasPrefix(first, want) {
		t.Fatalf("WritesPerApplication = %q, want it to begin %q", first, want)
	}
	for range 200 {
		if got := ro.WritesPerApplication(); got != first {
			t.Fatalf("WritesPerApplication = %q, then %q", first, got)
		}
	}
}

func TestTheTableGivesSyncsPerApplicationBesideTheLimitsAndTheComparison(t *testing.T) {
	report := RolloutReport{Results: []RolloutResult{{Clusters: 1000, CompareSeconds: 0.5,
		FirstRollout: &Rollout{SyncsPerApplication: 1.9}, NewRevision: &Rollout{SyncsPerApplication: 1.9},
		Limit: &RolloutResult{Clusters: 1000, FirstRollout: &Rollout{SyncsPerApplication: 1.5}, NewRevision: &Rollout{SyncsPerApplication: 1}}}}}
	got := report.RolloutTable()
	for _, want := range []string{
		"| Argo CD's comparison of a changed Application | 0.5 s |",
		"| syncs per Application in the first rollout (1: each asked once) | 1.90 (the limit: 1.50) |",
		"| syncs per Application, a new revision | 1.90 (the limit: 1.00) |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the table lacks %q:\n%s", want, got)
		}
	}
	// A run made before the comparison was simulated, without a limit.
	old := RolloutReport{Results: []RolloutResult{{Clusters: 100, NewRevision: &Rollout{SyncsPerApplication: 1.28}}}}.RolloutTable()
	for _, want := range []string{"| none: written at once |", "| syncs per Application, a new revision | 1.28 |", "| syncs per Application in the first rollout (1: each asked once) | - |"} {
		if !strings.Contains(old, want) {
			t.Errorf("the table lacks %q:\n%s", want, old)
		}
	}
}

// A limit measured in a sitting of its own says so under the pull-model run's line, which stays
// the first "(N s)." line: the make targets read each sitting's length from its own line.
func TestALimitRunApartIsNamedBesideThePullModelRun(t *testing.T) {
	r := RolloutReport{Run: Run{Command: "bench --rollout-limit=false", Started: "2026-12-05T03:00:00Z", Seconds: 3600}}
	together := r.RolloutMarkdown()
	if strings.Contains(together, "run apart") {
		t.Errorf("a file without LimitRun names one:\n%s", together)
	}
	r.LimitRun = &Run{Command: "bench --rollout-limit-only", Started: "2026-12-06T03:00:00Z", Seconds: 2400}
	md := r.RolloutMarkdown()
	pull, limit := strings.Index(md, "(3600 s)."), strings.Index(md, "The limit, run apart: `bench --rollout-limit-only`")
	if pull < 0 || limit < pull || !strings.Contains(md, "2026-12-06T03:00:00Z, 2400 s of the limit.") {
		t.Errorf("the two sittings are not both named, the pull-model run first:\n%s", md)
	}
}

// The new revision's reconciles say, per controller, how long argocd-pull's own queues held its
// work, and a run made before they were recorded shows no such row.
func TestTheTableGivesArgocdPullsReconcilesOfTheNewRevision(t *testing.T) {
	report := RolloutReport{Results: []RolloutResult{{Clusters: 1000, NewRevision: &Rollout{Reconciles: map[string]ReconcileTimes{
		"propagation": {Count: 3152, MeanQueuedMs: 40, MeanWorkingMs: 6},
		"appstatus":   {Count: 6012, MeanQueuedMs: 5210, MeanWorkingMs: 12},
	}}}}}
	want := "| the new revision: argocd-pull's reconciles, mean queued / working | appstatus 6,012: 5.21 / 0.012 s; propagation 3,152: 0.04 / 0.006 s |"
	if got := report.RolloutTable(); !strings.Contains(got, want) {
		t.Errorf("the table lacks %q:\n%s", want, got)
	}
	old := RolloutReport{Results: []RolloutResult{{Clusters: 100, NewRevision: &Rollout{}}}}.RolloutTable()
	if strings.Contains(old, "reconciles, mean queued") {
		t.Errorf("a run without reconciles shows the row:\n%s", old)
	}
}
