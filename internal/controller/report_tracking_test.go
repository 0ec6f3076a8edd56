package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/metrics"
	"github.com/argocd-pull/argocd-pull/internal/report"
)

// rebuilt is how many report entries the process has computed in the given kind of rebuild.
func rebuilt(t testing.TB, kind string) float64 {
	return sampleValue(t, "argocd_pull_report_entries_computed_total", map[string]string{"rebuild": kind})
}

// fullRebuild is the report of the ApplicationSet set built from scratch, at now, from what the
// apiserver holds: every member read again.
func (h *harness) fullRebuild(g Gomega, set string, now time.Time) v1alpha1.AppConditions {
	apps := argocd.NewApplicationList()
	g.Expect(h.c.List(context.Background(), apps, client.InNamespace(h.ns))).To(Succeed())
	var members []report.Member
	for i := range apps.Items {
		app := &apps.Items[i]
		if owner, ok := argocd.OwningApplicationSet(app); !ok || owner != set {
			continue
		}
		m, pull, err := report.NewMember(app)
		if !pull || err != nil {
			continue
		}
		work := &workv1.ManifestWork{}
		if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: m.Cluster, Name: m.WorkName}, work); err != nil {
			work = nil
		}
		mc := &clusterv1.ManagedCluster{}
		if err := h.c.Get(context.Background(), types.NamespacedName{Name: m.Cluster}, mc); err != nil {
			mc = nil
		}
		m.Attach(work, mc)
		members = append(members, m)
	}
	out, _ := report.Build(members, report.Options{Now: now, StaleAfter: DefaultOptions().StaleAfter})
	return out
}

// A report is kept a member at a time: a cluster's change recomputes its entry, not the others'.
// After a restart in the middle of a rollout (clusters reporting while no controller ran), the
// report is rebuilt from the cache once, and equals a full rebuild of what the hub holds.
func TestReportsAreKeptAMemberAtATimeAndRebuiltOnceAfterARestart(t *testing.T) {
	const clusters = 6
	h := start(t)
	set := h.appSet("rollout")
	var names []string
	for range clusters {
		c := h.cluster()
		names = append(names, c)
		h.app("rollout-"+c, c, ownedBy(set))
		h.work("rollout-"+c, c)
	}
	for _, c := range names {
		h.report("rollout-"+c, c, h.writtenWork("rollout-"+c, c).Generation, feedback("Healthy", "Synced"))
	}
	h.g.Eventually(func() string { return h.summary("rollout").Healthy }, timeout, interval).Should(Equal(fmt.Sprint(clusters)))

	// One cluster's new revision: its entry alone is computed again.
	full, member := rebuilt(t, metrics.RebuildFull), rebuilt(t, metrics.RebuildMember)
	progressing := feedback("Progressing", "Synced")
	progressing[manifestwork.FeedbackRevision] = "9f1c2d3e"
	h.report("rollout-"+names[0], names[0], h.writtenWork("rollout-"+names[0], names[0]).Generation, progressing)
	h.g.Eventually(func() string { return h.summary("rollout").InProgress }, timeout, interval).Should(Equal("1"))
	h.g.Expect(rebuilt(t, metrics.RebuildFull)).To(Equal(full), "no member but the changed one is read again")
	h.g.Expect(rebuilt(t, metrics.RebuildMember) - member).To(BeNumerically(">=", 1))
	h.g.Expect(rebuilt(t, metrics.RebuildMember)-member).To(BeNumerically("<", clusters),
		"the events of one cluster's change (its work, its Application's status) recompute its entry, not every entry")

	// The controller stops mid-rollout; three clusters move on meanwhile.
	h.stop()
	degraded := feedback("Degraded", "OutOfSync")
	degraded[manifestwork.FeedbackConditions] = `[{"type":"SyncError","message":"deployments.apps is forbidden"}]`
	for i, values := range []map[string]string{progressing, progressing, degraded} {
		c := names[i+1]
		h.report("rollout-"+c, c, h.writtenWork("rollout-"+c, c).Generation, values)
	}

	full = rebuilt(t, metrics.RebuildFull)
	restarted := start(t, func(o *Options, _ string) { o.ArgoCDNamespace = h.ns })
	restarted.g.Eventually(func(g Gomega) {
		r, err := h.getReport("rollout")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(r.Statuses.Summary.InProgress).To(Equal("3"))
		g.Expect(r.Statuses).To(Equal(h.fullRebuild(g, "rollout", time.Now())))
	}, timeout, interval).Should(Succeed())
	h.g.Expect(rebuilt(t, metrics.RebuildFull)-full).To(Equal(float64(clusters)), "rebuilt from the cache once: each member read once")
}
