package appstatus

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/argocd-pull/argocd-pull/internal/argocd"
)

// BenchmarkBarrierPerChange measures what one status reconcile costs the RollingSync barrier in an
// ApplicationSet of 100, 1,000 and 5,000 clusters during a rollout step: the reconciled
// Application's facts put in the view, and its decision. The fleet is at the revision the step
// syncs (no cluster ahead, none marked behind), and each change flips one cluster between a sync
// in flight (OutOfSync) and done (Synced), as a step's reconciles do. Its cost should not grow
// with the set.
func BenchmarkBarrierPerChange(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			set := types.NamespacedName{Namespace: "argocd", Name: "rollout"}
			synced := Member{Source: testSource, ClusterSynced: true, ClusterRevision: "r2", HubSync: argocd.SyncSynced, HubRevision: "r2"}
			syncing := Member{Source: testSource, ClusterRevision: "r2", HubSync: argocd.SyncOutOfSync, HubRevision: "r2"}
			members := make(map[string]Member, n)
			keys := make([]types.NamespacedName, n)
			for i := range n {
				keys[i] = types.NamespacedName{Namespace: set.Namespace, Name: fmt.Sprintf("cluster%04d-rollout", i)}
				members[keys[i].Name] = synced
			}
			v := NewRollingSets()
			v.Seed(set, members)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				key := keys[i%n]
				m := syncing
				if (i/n)%2 == 1 {
					m = synced
				}
				v.Put(set, key, m)
				if d := v.Decide(set, key, m.ClusterRevision); d.Behind || len(d.Rewrite)+len(d.Recheck) > 0 {
					b.Fatalf("a step's change decided %+v: the fleet is at one revision", d)
				}
				i++
			}
		})
	}
}
