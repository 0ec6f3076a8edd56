package report

import (
	"testing"

	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

// BenchmarkBuild measures one rebuild of a report of 1,000 clusters, one in ten failing, with
// the resource list each spoke returns: the CPU the report controller spends per write at that
// size.
func BenchmarkBuild(b *testing.B) {
	resources := `[{"group":"apps","version":"v1","kind":"Deployment","namespace":"guestbook","name":"guestbook-ui","status":"Synced","health":{"status":"Healthy"}},` +
		`{"version":"v1","kind":"Service","namespace":"guestbook","name":"guestbook-ui","status":"Synced","health":{"status":"Healthy"}}]`
	members := fleet(1000, 10, map[string]string{manifestwork.FeedbackResources: resources})
	b.ReportAllocs()
	for b.Loop() {
		Build(members, Options{Now: now})
	}
}
