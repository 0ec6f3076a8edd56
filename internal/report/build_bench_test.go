package report

import (
	"fmt"
	"testing"

	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

// benchResources is the resource list each benchmark cluster returns: the guestbook's two.
const benchResources = `[{"group":"apps","version":"v1","kind":"Deployment","namespace":"guestbook","name":"guestbook-ui","status":"Synced","health":{"status":"Healthy"}},` +
	`{"version":"v1","kind":"Service","namespace":"guestbook","name":"guestbook-ui","status":"Synced","health":{"status":"Healthy"}}]`

// benchSizes are the ApplicationSet sizes the per-change benchmarks compare.
var benchSizes = []int{100, 1000, 5000}

// BenchmarkBuild measures one rebuild of a report of 1,000 clusters, one in ten failing, with
// the resource list each spoke returns: what every change cost the report controller before it
// kept its reports a member at a time, and what a restart costs once per ApplicationSet.
func BenchmarkBuild(b *testing.B) {
	members := fleet(1000, 10, map[string]string{manifestwork.FeedbackResources: benchResources})
	b.ReportAllocs()
	for b.Loop() {
		Build(members, Options{Now: now})
	}
}

// BenchmarkFeedbackChange measures what one cluster's feedback change costs the report of an
// ApplicationSet of 100, 1,000 and 5,000 clusters (one in ten failing): its entry recomputed and
// put in place. Each change flips one cluster between two revisions; the works are the agents'
// writes, made before the clock starts.
func BenchmarkFeedbackChange(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			members := fleet(n, 10, map[string]string{manifestwork.FeedbackResources: benchResources})
			changed := fleet(n, 10, map[string]string{manifestwork.FeedbackResources: benchResources,
				manifestwork.FeedbackRevision: "0123456789abcdef0123456789abcdef01234567"})
			tracker := NewTracker(Options{})
			for _, m := range members {
				tracker.Put(m, now)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				k := i % n
				if (i/n)%2 == 0 {
					tracker.Put(changed[k], now)
				} else {
					tracker.Put(members[k], now)
				}
				i++
			}
		})
	}
}

// BenchmarkReportOfTracker measures what a report write takes from a Tracker of 100, 1,000 and
// 5,000 clusters: its lists copied out and, at 5,000, bounded to its 768 KiB. It grows with the
// clusters, and is paid once per write: a report of C clusters is written at most once per
// C x --report-interval-per-cluster (1 ms), whatever the changes meanwhile.
func BenchmarkReportOfTracker(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			tracker := NewTracker(Options{})
			for _, m := range fleet(n, 10, map[string]string{manifestwork.FeedbackResources: benchResources}) {
				tracker.Put(m, now)
			}
			b.ReportAllocs()
			for b.Loop() {
				tracker.Report()
			}
		})
	}
}
