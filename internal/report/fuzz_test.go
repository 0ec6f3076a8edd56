package report

// Fuzz target of the report build and its size bound. `go test` runs its seeds (f.Add and
// testdata/fuzz) as ordinary tests; `make fuzz` runs it as a fuzzer.

import (
	"strconv"
	"strings"
	"testing"

	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

// FuzzBuild: whatever the clusters report (huge or odd messages, resource and condition lists that
// are not JSON or are huge, names of any length), the report encodes within its budget and its
// summary counts every cluster, each exactly once as healthy or not and as synced or not; when its
// notes say only Synced and Healthy clusters are left out of the list, they are.
func FuzzBuild(f *testing.F) {
	f.Add(uint16(3), uint32(0), "Healthy", "Synced", syncErrorMessage, `[{"kind":"Service","name":"guestbook-ui","version":"v1","namespace":"guestbook"}]`, `[{"type":"SyncError","message":"x"}]`, "cluster")
	f.Add(uint16(400), uint32(0), "Degraded", "OutOfSync", strings.Repeat("boom ", 400), `not json`, `{"type":"x"}`, strings.Repeat("c", 60))
	f.Add(uint16(1), uint32(1), "", "", "\x00\x1b[31m", `[]`, `[]`, "")
	f.Add(uint16(200), uint32(4096), "Progressing", "Synced", "", `[{"kind":"`+strings.Repeat("K", 300)+`","name":"n"}]`, `null`, "local-cluster")
	f.Fuzz(func(t *testing.T, clusters uint16, budgetExtra uint32, health, sync, message, resources, conditions, prefix string) {
		n := int(clusters % 600)
		budget := minSizeBudget + int(budgetExtra%(256*1024))
		extra := map[string]string{
			manifestwork.FeedbackMessage:    message,
			manifestwork.FeedbackResources:  resources,
			manifestwork.FeedbackConditions: conditions,
		}
		members := fleet(n, 3, extra)
		for i := range members {
			if i%2 == 1 {
				values := map[string]string{manifestwork.FeedbackHealth: health, manifestwork.FeedbackSync: sync}
				for k, v := range extra {
					values[k] = v
				}
				members[i].Work = reported(values)
			}
			members[i].Cluster = prefix + members[i].Cluster
			if i%5 == 4 {
				members[i].PropagationError = message
			}
		}

		out, _ := Build(members, Options{Now: now, SizeBudget: budget})
		if got := size(out); got > budget {
			t.Fatalf("%d clusters: report of %d bytes, over its budget of %d (notes %q)", n, got, budget, out.Notes)
		}
		count := func(s string) int {
			v, err := strconv.Atoi(s)
			if err != nil {
				t.Fatalf("summary count %q: %v", s, err)
			}
			return v
		}
		s := out.Summary
		if count(s.Clusters) != n {
			t.Fatalf("summary counts %s clusters of %d", s.Clusters, n)
		}
		if h, nh := count(s.Healthy), count(s.NotHealthy); h+nh != n {
			t.Fatalf("healthy %d + not healthy %d != %d clusters", h, nh, n)
		}
		if sy, ns := count(s.Synced), count(s.NotSynced); sy+ns != n {
			t.Fatalf("synced %d + not synced %d != %d clusters", sy, ns, n)
		}
		if len(out.ClusterConditions) < n && len(out.Notes) == 0 {
			t.Fatalf("%d of %d clusters listed and no note says why", len(out.ClusterConditions), n)
		}
		if UnlistedAreHealthy(out.Notes) {
			// Readers (the benchmark, people) take a cluster left out then as Synced and Healthy.
			listed := map[string]bool{}
			for _, c := range out.ClusterConditions {
				listed[c.Cluster] = true
			}
			for _, m := range members {
				if cc, _, _, _, _ := member(m, Options{Now: now}); !listed[m.Cluster] && !healthyAndSynced(cc) {
					t.Fatalf("cluster %s is %s and %s, not listed, and the notes say only Synced and Healthy clusters are left out: %q", m.Cluster, cc.HealthStatus, cc.SyncStatus, out.Notes)
				}
			}
		}
		for _, c := range out.ClusterConditions {
			for _, cond := range c.Conditions {
				if len(cond.Message) > 512 {
					t.Fatalf("condition message of %d bytes, over the default limit", len(cond.Message))
				}
			}
		}
	})
}
