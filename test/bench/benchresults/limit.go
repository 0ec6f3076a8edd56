package benchresults

import (
	"fmt"
	"slices"
)

// AgainstLimit is a pull-model rollout beside the same rollout without the pull model (its
// limit, RolloutResult.Limit): the ratio of their times, and argocd-pull's added time per step,
// each step's length less the limit's same step.
type AgainstLimit struct {
	Seconds      float64
	LimitSeconds float64
	Ratio        float64
	// AddedPerStep summarises, over the steps both rollouts have, the pull model's step length
	// less the limit's (milliseconds; negative where the limit's step was the longer).
	AddedPerStep Percentiles
}

// CompareWithLimit compares a pull-model rollout with its limit; false when either is missing.
func CompareWithLimit(pull, limit *Rollout) (AgainstLimit, bool) {
	if pull == nil || limit == nil || limit.Seconds <= 0 {
		return AgainstLimit{}, false
	}
	out := AgainstLimit{Seconds: pull.Seconds, LimitSeconds: limit.Seconds, Ratio: pull.Seconds / limit.Seconds}
	var added []float64
	for _, s := range pull.Steps {
		if i := slices.IndexFunc(limit.Steps, func(l Step) bool { return l.Step == s.Step }); i >= 0 {
			added = append(added, (s.Seconds-limit.Steps[i].Seconds)*1000)
		}
	}
	slices.Sort(added)
	if n := len(added); n > 0 {
		at := func(p float64) float64 { return added[int(p*float64(n-1))] }
		out.AddedPerStep = Percentiles{Count: n, P50ms: at(0.5), P90ms: at(0.9), P99ms: at(0.99), MaxMs: at(1)}
	}
	return out, true
}

func (a AgainstLimit) String() string {
	return fmt.Sprintf("%.1f s against %.1f s: %.2fx the limit; argocd-pull added per step p50 %.1f s, p99 %.1f s, max %.1f s over %d steps",
		a.Seconds, a.LimitSeconds, a.Ratio, a.AddedPerStep.P50ms/1000, a.AddedPerStep.P99ms/1000, a.AddedPerStep.MaxMs/1000, a.AddedPerStep.Count)
}
