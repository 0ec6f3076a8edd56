package appstatus

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestTheHubsReconciledAtOnlyMovesForward(t *testing.T) {
	app := func(at string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		if at != "" {
			_ = unstructured.SetNestedField(u.Object, at, "status", "reconciledAt")
		}
		return u
	}
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
			if got := NewerReconciledAt(app(tc.hub), Observed{ReconciledAt: tc.reported}); got != tc.want {
				t.Errorf("NewerReconciledAt = %q, want %q", got, tc.want)
			}
		})
	}
}
