// The rollout scenarios after a new ApplicationSet's first rollout, each on the hub
// measureRollouts starts (see rollout.go).

package main

import (
	"context"
	"fmt"
	"time"

	"github.com/argocd-pull/argocd-pull/internal/test/simagent"
	"github.com/argocd-pull/argocd-pull/test/bench/benchresults"
)

// newRevision commits v2 to rollout01 and waits for it through every step, keeping profiles of
// argocd-pull, the ApplicationSet controller and the apiserver meanwhile when they are asked for.
func (h *rolloutHub) newRevision(ctx context.Context, cfg config, rc rolloutConfig, clusters int) (benchresults.Rollout, error) {
	start := time.Now()
	if err := h.commit(ctx, "rollout01", "v2"); err != nil {
		return benchresults.Rollout{}, err
	}
	h.profile(ctx, cfg, fmt.Sprintf("rollout-%s%d-new-revision", rc.logPrefix(), clusters))
	return h.await(ctx, "a new revision through every step", []string{"rollout01"}, clusters, start, "v2", rc.steps, rc.syncFor)
}

// withoutRollingSync creates an ApplicationSet without a strategy, whose Applications sync
// themselves, waits for its first revision, then commits the next one and waits for it on every
// hub Application and, with argocd-pull (not in the limit scenario, which has no report), in the
// report.
func (h *rolloutHub) withoutRollingSync(ctx context.Context, rc rolloutConfig, clusters int) (*benchresults.Rollout, error) {
	start := time.Now()
	if err := h.c.Create(ctx, rolloutAppSet("plain01", "v1", 0, false, rc.templating)); err != nil {
		return nil, err
	}
	if _, err := h.await(ctx, "an ApplicationSet without RollingSync, its first revision", []string{"plain01"}, clusters, start, "v1", 0, rc.syncFor); err != nil {
		return nil, err
	}
	start = time.Now()
	if err := h.commit(ctx, "plain01", "v2"); err != nil {
		return nil, err
	}
	plain, err := h.await(ctx, "a new revision without RollingSync", []string{"plain01"}, clusters, start, "v2", 0, rc.syncFor)
	if err == nil && !rc.push {
		err = waitFor(ctx, 5*time.Minute, "the report at the new revision", h.logPath, func() (bool, string) {
			_, ok := h.obs.reportAt("plain01", simagent.Resolve("v2"))
			return ok, "not yet"
		})
	}
	if at, ok := h.obs.reportAt("plain01", simagent.Resolve("v2")); ok {
		plain.ReportSeconds = at.Sub(start).Seconds()
	}
	return &plain, err
}

// concurrentRollouts creates rc.concurrent-1 more ApplicationSets, then commits a new revision to
// every one at once, each with its RollingSync, and waits for it everywhere. The new ones are set
// up without a strategy (every Application syncs itself), then given the RollingSync: the setup
// is not what is measured. Set up with a RollingSync, even in one step, 9,000 Applications at
// 1,000 clusters took longer than the rest of the run (4,171 done after 17.5 minutes): the
// ApplicationSet controller recomputes each one's RollingSync status on every change of any of
// its Applications.
func (h *rolloutHub) concurrentRollouts(ctx context.Context, cfg config, rc rolloutConfig, clusters int) (*benchresults.Rollout, error) {
	sets := []string{"rollout01"}
	start := time.Now()
	for i := 2; i <= rc.concurrent; i++ {
		name := fmt.Sprintf("rollout%02d", i)
		sets = append(sets, name)
		if err := h.c.Create(ctx, rolloutAppSet(name, "v6", rc.steps, false, rc.templating)); err != nil {
			return nil, err
		}
	}
	if _, err := h.await(ctx, fmt.Sprintf("%d more ApplicationSets at their first revision, without RollingSync", rc.concurrent-1), sets[1:], clusters, start, "v6", 0, rc.syncFor); err != nil {
		return nil, err
	}
	for _, set := range sets[1:] {
		if err := h.setStrategy(ctx, set, rollingSync(rc.steps)); err != nil {
			return nil, err
		}
	}
	// The ApplicationSet controller takes each Application's automated policy away once its
	// ApplicationSet has a RollingSync; a commit before that would be synced by the policy.
	err := waitFor(ctx, 10*time.Minute, "the RollingSync taken in", h.logPath, func() (bool, string) {
		automated := 0
		h.obs.each(sets[1:], func(a *observed) {
			if a.automated {
				automated++
			}
		})
		return automated == 0, fmt.Sprintf("%d Applications still sync themselves", automated)
	})
	if err != nil {
		return nil, err
	}
	cfg.progress("%d more ApplicationSets set up in %.1fs", rc.concurrent-1, time.Since(start).Seconds())
	start = time.Now()
	for _, set := range sets {
		if err := h.commit(ctx, set, "v7"); err != nil {
			return nil, err
		}
	}
	h.profile(ctx, cfg, fmt.Sprintf("rollout-%s%d-concurrent", rc.logPrefix(), clusters))
	concurrent, err := h.await(ctx, fmt.Sprintf("a new revision in %d ApplicationSets at once", len(sets)), sets, clusters, start, "v7", rc.steps, rc.syncFor)
	return &concurrent, err
}

// failingRevision commits a revision whose sync fails, waits until every Application of the
// first step failed it, watches the later steps, then commits the next revision (v6) and waits
// for it everywhere.
func (h *rolloutHub) failingRevision(ctx context.Context, cfg config, rc rolloutConfig, clusters int) (*benchresults.FailingRollout, error) {
	out := &benchresults.FailingRollout{}
	bad := "v5" + failingSuffix
	commit := simagent.Resolve(bad)
	start := time.Now()
	if err := h.commit(ctx, "rollout01", bad); err != nil {
		return out, err
	}
	err := waitFor(ctx, 10*time.Minute, "the first step failing the failing revision", h.logPath, func() (bool, string) {
		failed, inStep := 0, 0
		h.obs.each([]string{"rollout01"}, func(a *observed) {
			if a.step == 0 {
				inStep++
				if _, ok := a.failed[commit]; ok {
					failed++
				}
			}
		})
		return inStep > 0 && failed == inStep, fmt.Sprintf("%d of %d Applications of the first step failed", failed, inStep)
	})
	if err != nil {
		return out, err
	}
	out.FirstStepFailedSeconds = time.Since(start).Seconds()
	watch := 3*rc.syncFor + 15*time.Second
	select {
	case <-ctx.Done():
		return out, ctx.Err()
	case <-time.After(watch):
	}
	out.WatchedSeconds = watch.Seconds()
	for _, a := range h.obs.snapshot("rollout01") {
		if _, started := a.started[commit]; started && a.step != 0 {
			out.BeyondFirstStep++
		}
	}
	cfg.progress("failing revision: the first step failed after %.1fs; %d Applications beyond it synced it in the %.0fs after", out.FirstStepFailedSeconds, out.BeyondFirstStep, out.WatchedSeconds)
	start = time.Now()
	if err := h.commit(ctx, "rollout01", "v6"); err != nil {
		return out, err
	}
	fixed, err := h.await(ctx, "the next revision after the failing one", []string{"rollout01"}, clusters, start, "v6", rc.steps, rc.syncFor)
	out.Fixed = &fixed
	return out, err
}

// secondCommit commits v3, waits until a third of its steps are done, commits v4 and waits for
// it everywhere, checking that it went through the steps in order and that no Application counted
// as done at v4 before its cluster synced v4.
func (h *rolloutHub) secondCommit(ctx context.Context, cfg config, rc rolloutConfig, clusters int) (*benchresults.SecondCommit, error) {
	out := &benchresults.SecondCommit{StepsDoneBefore: max(1, rc.steps/3)}
	v3 := simagent.Resolve("v3")
	if err := h.commit(ctx, "rollout01", "v3"); err != nil {
		return out, err
	}
	err := waitFor(ctx, 10*time.Minute, fmt.Sprintf("the first %d steps of v3", out.StepsDoneBefore), h.logPath, func() (bool, string) {
		done, want := 0, 0
		h.obs.each([]string{"rollout01"}, func(a *observed) {
			if a.step < out.StepsDoneBefore {
				want++
				if _, ok := a.done[v3]; ok {
					done++
				}
			}
		})
		return want > 0 && done == want, fmt.Sprintf("%d of %d Applications", done, want)
	})
	if err != nil {
		return out, err
	}
	start := time.Now()
	if err := h.commit(ctx, "rollout01", "v4"); err != nil {
		return out, err
	}
	second, err := h.await(ctx, "a second commit's revision through every step", []string{"rollout01"}, clusters, start, "v4", rc.steps, rc.syncFor)
	out.Rollout = &second
	out.OutOfOrder, out.DoneWithoutSync = checkOrder(h.obs.snapshot("rollout01"), simagent.Resolve("v4"), rc.steps)
	cfg.progress("a second commit after %d steps of the first: %d Applications requested out of order, %d done without a sync", out.StepsDoneBefore, out.OutOfOrder, out.DoneWithoutSync)
	return out, err
}
