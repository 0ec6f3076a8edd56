package main

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestRolloutFigures(t *testing.T) {
	g := NewWithT(t)
	commit := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return commit.Add(time.Duration(s * float64(time.Second))) }
	app := func(set string, step int, requested, started, finished, done float64) observed {
		return observed{appSet: set, step: step,
			requested: map[string]time.Time{"c": at(requested)}, started: map[string]time.Time{"c": at(started)},
			finished: map[string]time.Time{"c": at(finished)}, done: map[string]time.Time{"c": at(done)}}
	}
	apps := []observed{
		app("a", 0, 0.5, 0.6, 5.6, 6.0),
		app("a", 0, 0.7, 0.8, 5.8, 6.5),
		app("a", 1, 7.0, 7.1, 12.1, 12.5),
		app("a", 1, 7.5, 7.6, 12.6, 13.5),
	}
	r := rolloutFigures(apps, commit, "c", 2, 5*time.Second)
	g.Expect(r.Complete).To(BeTrue())
	g.Expect(r.ApplicationSets).To(Equal(1))
	g.Expect(r.Seconds).To(BeNumerically("~", 13.5, 1e-9))
	g.Expect(r.AgentsSeconds).To(Equal(10.0))
	g.Expect(r.Ratio).To(BeNumerically("~", 1.35, 1e-9))
	g.Expect(r.Steps).To(HaveLen(2))
	g.Expect(r.Steps[0].Applications).To(Equal(2))
	g.Expect(r.Steps[0].Seconds).To(BeNumerically("~", 6.5, 1e-9))
	g.Expect(r.Steps[0].HubAdded).To(BeNumerically("~", 1.5, 1e-9))
	g.Expect(r.Steps[1].Seconds).To(BeNumerically("~", 7.0, 1e-9), "from the first step's last Application")
	g.Expect(r.Steps[1].DoneSeconds).To(BeNumerically("~", 13.5, 1e-9))
	g.Expect(r.RequestLag.MaxMs).To(BeNumerically("~", 1000, 1e-6), "the second step's requests count from the first step's end (6.5 s)")
	g.Expect(r.Delivery.P50ms).To(BeNumerically("~", 100, 1e-6))
	g.Expect(r.Status.MaxMs).To(BeNumerically("~", 900, 1e-6))

	// One Application short: incomplete, and its step's figures are of the others.
	apps[3].done = map[string]time.Time{}
	r = rolloutFigures(apps, commit, "c", 2, 5*time.Second)
	g.Expect(r.Complete).To(BeFalse())
	g.Expect(r.Steps[1].Applications).To(Equal(1))

	// Two ApplicationSets roll out on their own: each step counts from its own set's previous
	// step (b finishes its first step late; a's second step starts before that).
	both := []observed{
		app("a", 0, 0.5, 0.6, 5.6, 6.0), app("a", 0, 0.7, 0.8, 5.8, 6.5),
		app("a", 1, 7.0, 7.1, 12.1, 12.5), app("a", 1, 7.5, 7.6, 12.6, 13.5),
		app("b", 0, 3.0, 3.1, 8.1, 9.0), app("b", 1, 9.5, 9.6, 14.6, 15.0),
	}
	r = rolloutFigures(both, commit, "c", 2, 5*time.Second)
	g.Expect(r.ApplicationSets).To(Equal(2))
	// Lags: a 0.5, 0.7, 0.5, 1.0; b 3.0, 0.5 (p90: 1.0). Counted from b's first step, a's second
	// step would read -2.0 and -1.5 (p90: 0.7).
	g.Expect(r.RequestLag.P90ms).To(BeNumerically("~", 1000, 1e-6))
	g.Expect(r.Steps[0].DoneSeconds).To(BeNumerically("~", 9.0, 1e-9), "the last set to finish the step")
	g.Expect(r.Steps[1].Seconds).To(BeNumerically("~", 7.0, 1e-9), "a's second step, 6.5 s to 13.5 s, the longer of the two")
	g.Expect(r.HubAddedPerStep.Count).To(Equal(4))

	// Without RollingSync: one step, the clusters' own syncs timed from the commit.
	plain := []observed{{appSet: "p", step: -1, started: map[string]time.Time{"c": at(0.4)}, finished: map[string]time.Time{"c": at(5.4)},
		done: map[string]time.Time{"c": at(5.5)}, requested: map[string]time.Time{}}}
	r = rolloutFigures(plain, commit, "c", 1, 5*time.Second)
	g.Expect(r.Complete).To(BeTrue())
	g.Expect(r.Delivery.P50ms).To(BeNumerically("~", 400, 1e-6))
	g.Expect(r.Steps[0].HubAdded).To(BeNumerically("~", 0.5, 1e-9))
}

func TestCheckOrder(t *testing.T) {
	g := NewWithT(t)
	commit := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return commit.Add(time.Duration(s * float64(time.Second))) }
	app := func(step int, requested, finished, done float64) observed {
		o := observed{step: step, requested: map[string]time.Time{"c": at(requested)}, finished: map[string]time.Time{}, done: map[string]time.Time{"c": at(done)}}
		if finished >= 0 {
			o.finished["c"] = at(finished)
		}
		return o
	}
	inOrder := []observed{app(0, 0, 5, 6), app(0, 0, 5, 7), app(1, 7.5, 12.5, 13)}
	outOfOrder, without := checkOrder(inOrder, "c", 2)
	g.Expect(outOfOrder).To(Equal(0))
	g.Expect(without).To(Equal(0))

	early := []observed{app(0, 0, 5, 6), app(0, 0, 5, 7), app(1, 6.5, 11.5, 12), app(1, 8, -1, 9)}
	outOfOrder, without = checkOrder(early, "c", 2)
	g.Expect(outOfOrder).To(Equal(1), "requested at 6.5 s, before the first step's last Application (7 s)")
	g.Expect(without).To(Equal(1), "done at the commit with no sync of it on its cluster")
}

// The ApplicationSet controller's reconcile times are read from its log lines, in its units.
func TestReconcileDurationsFromTheApplicationSetControllerLog(t *testing.T) {
	g := NewWithT(t)
	log := []byte(`time="2026-11-26T07:39:53Z" level=info msg="end reconcile in 3.050002408s" applicationset=argocd/rollout01 requeueAfter=3m0s
time="2026-11-26T07:39:53Z" level=info msg="generated 100 applications" applicationset=argocd/rollout01
time="2026-11-26T07:39:54Z" level=info msg="end reconcile in 441.483478ms" applicationset=argocd/rollout01 requeueAfter=3m0s
time="2026-11-26T07:39:54Z" level=info msg="end reconcile in 870µs" applicationset=argocd/rollout02 requeueAfter=3m0s
`)
	g.Expect(reconcileDurations(log)).To(Equal([]time.Duration{3050002408 * time.Nanosecond, 441483478 * time.Nanosecond, 870 * time.Microsecond}))
}

// The first delivery is measured from the ApplicationSet's creation and from each Application's:
// the ApplicationSet controller creates them one by one, and the second is what argocd-pull and the
// agents took.
func TestFirstDeliveriesFromTheSetAndFromEachApplication(t *testing.T) {
	g := NewWithT(t)
	start := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return start.Add(time.Duration(s * float64(time.Second))) }
	apps := []observed{
		{created: at(1), onCluster: at(1.5)},
		{created: at(10), onCluster: at(11)},
		{created: at(20)}, // not on its cluster yet: not counted
	}
	fromSet, fromOwn := firstDeliveries(apps, start)
	g.Expect(fromSet.Count).To(Equal(2))
	g.Expect(fromSet.MaxMs).To(BeNumerically("~", 11000, 1e-6))
	g.Expect(fromOwn.Count).To(Equal(2))
	g.Expect(fromOwn.MaxMs).To(BeNumerically("~", 1000, 1e-6))
	g.Expect(fromOwn.P50ms).To(BeNumerically("<=", 1000))
}
