package report

import (
	"testing"
	"time"
)

func TestWriteIntervalGrowsWithTheReport(t *testing.T) {
	for _, tc := range []struct {
		clusters int
		want     time.Duration
	}{
		{0, 100 * time.Millisecond},
		{2, 100 * time.Millisecond},
		{100, 100 * time.Millisecond},
		{1000, time.Second},
		{5000, 5 * time.Second},
	} {
		if got := WriteInterval(tc.clusters, 100*time.Millisecond, time.Millisecond); got != tc.want {
			t.Errorf("WriteInterval(%d) = %s, want %s", tc.clusters, got, tc.want)
		}
	}
	if got := WriteInterval(5000, 100*time.Millisecond, 0); got != 100*time.Millisecond {
		t.Errorf("no per-cluster pacing: got %s, want the floor", got)
	}
}

func TestNextWrite(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
	if got := NextWrite(time.Time{}, now, time.Second); got != 0 {
		t.Errorf("never written: wait %s, want 0", got)
	}
	if got := NextWrite(now.Add(-300*time.Millisecond), now, time.Second); got != 700*time.Millisecond {
		t.Errorf("written 300ms ago: wait %s, want 700ms", got)
	}
	if got := NextWrite(now.Add(-2*time.Second), now, time.Second); got != 0 {
		t.Errorf("written 2s ago: wait %s, want 0", got)
	}
}
