package report

import (
	"fmt"
	"testing"

	"github.com/argocd-pull/argocd-pull/internal/propagation"
)

// BenchmarkBuild measures one rebuild of a report of 1,000 clusters, one in ten failing, with
// the resource list each spoke returns: the CPU the report controller spends per write at that
// size.
func BenchmarkBuild(b *testing.B) {
	resources := `[{"group":"apps","version":"v1","kind":"Deployment","namespace":"guestbook","name":"guestbook-ui","status":"Synced","health":{"status":"Healthy"}},` +
		`{"version":"v1","kind":"Service","namespace":"guestbook","name":"guestbook-ui","status":"Synced","health":{"status":"Healthy"}}]`
	var members []Member
	for i := range 1000 {
		cluster := fmt.Sprintf("cluster-%04d", i)
		values := map[string]string{
			propagation.FeedbackHealth: "Healthy", propagation.FeedbackSync: "Synced",
			propagation.FeedbackRevision: "53e28ff20cc530b9ada2173fbbd64d48338583ba",
			propagation.FeedbackPhase:    "Succeeded", propagation.FeedbackStartedAt: "2026-11-21T10:00:00Z",
			propagation.FeedbackResources: resources,
		}
		if i%10 == 0 {
			values[propagation.FeedbackHealth], values[propagation.FeedbackSync] = "Degraded", "OutOfSync"
			values[propagation.FeedbackPhase], values[propagation.FeedbackMessage] = "Failed", syncErrorMessage
		}
		members = append(members, m(cluster, reported(values)))
	}
	b.ReportAllocs()
	for b.Loop() {
		Build(members, Options{Now: now})
	}
}
