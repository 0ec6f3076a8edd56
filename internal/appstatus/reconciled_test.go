package appstatus

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestTheHubsReconciledAtOnlyMovesForward(t *testing.T) {
	for _, tc := range []struct {
		name, hub, reported, want string
	}{
		{"the cluster compared since", "2026-11-28T02:00:00Z", "2026-11-28T02:00:05Z", "2026-11-28T02:00:05Z"},
		{"the hub has none", "", "2026-11-28T02:00:05Z", "2026-11-28T02:00:05Z"},
		{"the same time", "2026-11-28T02:00:05Z", "2026-11-28T02:00:05Z", ""},
		{"older than the hub's", "2026-11-28T02:00:05Z", "2026-11-28T02:00:00Z", ""},
		{"not reported (a work at rest does not ask)", "2026-11-28T02:00:00Z", "", ""},
		{"not a time", "2026-11-28T02:00:00Z", "yesterday", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NewerReconciledAt(appReconciledAt(tc.hub), Observed{ReconciledAt: tc.reported}); got != tc.want {
				t.Errorf("NewerReconciledAt = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAComparisonSinceTheSyncStartedIsWrittenOncePerSync(t *testing.T) {
	running := func(phase, started string) Status {
		return Status{Operation: &OperationState{Phase: phase, StartedAt: started}}
	}
	const start = "2026-11-28T02:00:10Z"
	for _, tc := range []struct {
		name, hub, at string
		st            Status
		want          bool
	}{
		{"compared since the start, the hub's from before it", "2026-11-28T02:00:00Z", "2026-11-28T02:00:11Z", running("Running", start), true},
		{"compared in the second it started", "2026-11-28T02:00:00Z", start, running("Running", start), true},
		{"the hub has none yet", "", "2026-11-28T02:00:11Z", running("Running", start), true},
		{"already written for this sync", start, "2026-11-28T02:00:12Z", running("Running", start), false},
		{"compared before the start", "2026-11-28T02:00:00Z", "2026-11-28T02:00:09Z", running("Running", start), false},
		{"the sync finished (the clearing write carries it)", "2026-11-28T02:00:00Z", "2026-11-28T02:00:15Z", running("Succeeded", start), false},
		{"no operation", "2026-11-28T02:00:00Z", "2026-11-28T02:00:11Z", Status{}, false},
		{"a start that is not a time", "2026-11-28T02:00:00Z", "2026-11-28T02:00:11Z", running("Running", "soon"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ComparedSinceStart(appReconciledAt(tc.hub), tc.st, tc.at); got != tc.want {
				t.Errorf("ComparedSinceStart = %v, want %v", got, tc.want)
			}
		})
	}
}

// appReconciledAt is a hub Application whose status.reconciledAt is at ("": none).
func appReconciledAt(at string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	if at != "" {
		_ = unstructured.SetNestedField(u.Object, at, "status", "reconciledAt")
	}
	return u
}
