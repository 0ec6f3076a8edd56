package controller

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/types"

	"github.com/argocd-pull/argocd-pull/internal/report"
)

// reportPacer bounds what report writes cost the apiserver. Each report is written at most once
// per its interval (report.WriteInterval), and all reports together write at most a budget of
// cluster entries a second: a report write costs the apiserver in proportion to its entries (about
// 0.15 ms of CPU each, the benchmark's price list in docs/benchmarks.md), so ten reports of 1,000
// clusters rewritten every second would need more than one core of the apiserver, and at 4,000
// entries a second reports took most of a 2-core hub's apiserver from propagation and the
// Applications' status. What changes meanwhile waits for the report's next write. Reports take
// their turns in the order they asked (a rate.Limiter's reservations), so a large busy report
// does not starve the others.
type reportPacer struct {
	mu      sync.Mutex
	written map[types.NamespacedName]time.Time
	// budget is nil when the entries a second are not bounded.
	budget *rate.Limiter
	// turn is when a report that reserved its share of the budget may write.
	turn map[types.NamespacedName]time.Time
}

// newReportPacer returns a pacer with a budget of entriesPerSecond (0: no budget).
func newReportPacer(entriesPerSecond int) *reportPacer {
	p := &reportPacer{written: map[types.NamespacedName]time.Time{}, turn: map[types.NamespacedName]time.Time{}}
	if entriesPerSecond > 0 {
		p.budget = rate.NewLimiter(rate.Limit(entriesPerSecond), entriesPerSecond)
	}
	return p
}

// due says how long the report key must wait at now before it is rebuilt: the rest of the
// interval since its last write, or of the turn it took in the budget (see take).
func (p *reportPacer) due(key types.NamespacedName, interval time.Duration, now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if d := report.NextWrite(p.written[key], now, interval); d > 0 {
		return d
	}
	if at, ok := p.turn[key]; ok {
		return max(0, at.Sub(now))
	}
	return 0
}

// take asks the budget for a write of entries clusters of the report key at now, once a rebuild
// found it changed; zero means write now. Otherwise the report has taken its turn, after the
// turns taken before it, and waits for it.
func (p *reportPacer) take(key types.NamespacedName, entries int, now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if at, ok := p.turn[key]; ok {
		if d := at.Sub(now); d > 0 {
			return d
		}
		delete(p.turn, key)
		return 0
	}
	if p.budget == nil || entries == 0 {
		return 0
	}
	if entries > p.budget.Burst() {
		p.budget.SetBurstAt(now, entries) // a report larger than a second's budget waits longer, never forever
	}
	d := p.budget.ReserveN(now, entries).DelayFrom(now)
	if d > 0 {
		p.turn[key] = now.Add(d)
	}
	return d
}

// wrote records a write of the report key at a time.
func (p *reportPacer) wrote(key types.NamespacedName, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.written[key] = at
}

// forget drops a deleted report.
func (p *reportPacer) forget(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.written, key)
	delete(p.turn, key)
}
