package controller

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestReportPacerSharesABudgetOfEntries(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	report := func(i int) types.NamespacedName {
		return types.NamespacedName{Namespace: "argocd", Name: string(rune('a' + i))}
	}
	p := newReportPacer(4000)

	// Ten reports of 1,000 clusters changing at once: a second's budget writes four, the others
	// take turns in the order they asked, 250 ms apart.
	var waits []time.Duration
	for i := range 10 {
		if d := p.due(report(i), 100*time.Millisecond, t0); d != 0 {
			t.Fatalf("report %d, never written, is due in %s", i, d)
		}
		waits = append(waits, p.take(report(i), 1000, t0))
	}
	want := []time.Duration{0, 0, 0, 0, 250 * time.Millisecond, 500 * time.Millisecond, 750 * time.Millisecond, time.Second,
		1250 * time.Millisecond, 1500 * time.Millisecond}
	for i := range want {
		if waits[i] != want[i] {
			t.Errorf("report %d waits %s, want %s (all: %v)", i, waits[i], want[i], waits)
		}
	}
	// A report woken before its turn is not rebuilt, and does not take a second share.
	if d := p.due(report(9), 100*time.Millisecond, t0.Add(time.Second)); d != 500*time.Millisecond {
		t.Errorf("report 9 woken 1 s later is due in %s, want the 500 ms left of its turn", d)
	}
	if d := p.due(report(9), 100*time.Millisecond, t0.Add(1500*time.Millisecond)); d != 0 {
		t.Errorf("report 9 at its turn is due in %s", d)
	}
	if d := p.take(report(9), 1000, t0.Add(1500*time.Millisecond)); d != 0 {
		t.Errorf("report 9 at its turn waits %s to write", d)
	}
	// Its own interval still holds after a write.
	p.wrote(report(0), t0)
	if d := p.due(report(0), time.Second, t0.Add(400*time.Millisecond)); d != 600*time.Millisecond {
		t.Errorf("report 0 400 ms after its write is due in %s, want the 600 ms left of its interval", d)
	}
	// A report larger than a second's budget is written, later, not never.
	if d := p.take(report(10), 6000, t0.Add(2*time.Second)); d <= 0 || d > 3*time.Second {
		t.Errorf("a 6,000-cluster report waits %s", d)
	}
	// Small reports are not held by a budget they barely use, and without a budget nothing waits
	// but the interval.
	small := newReportPacer(4000)
	for i := range 20 {
		if d := small.take(report(i), 100, t0); d != 0 {
			t.Errorf("report %d of 100 clusters waits %s", i, d)
		}
	}
	unbounded := newReportPacer(0)
	for i := range 20 {
		if d := unbounded.take(report(i), 1000, t0); d != 0 {
			t.Errorf("without a budget, report %d waits %s", i, d)
		}
	}
}
