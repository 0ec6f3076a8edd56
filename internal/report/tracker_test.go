package report

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

// randomMember is one of the states a member of a small fleet may be in: any health and sync,
// a failed sync, resources shared with other clusters or its own, feedback that does not parse,
// no resource list, no work, a work not applied yet or not for long, a cluster gone or
// unavailable, a propagation error, a pause. Two Applications may share a cluster.
func randomMember(r *rand.Rand, app int, at time.Time) Member {
	cluster := fmt.Sprintf("cluster-%02d", app%7)
	health := []string{"Healthy", "Progressing", "Degraded", "Missing", ""}[r.IntN(5)]
	sync := []string{"Synced", "OutOfSync", "Unknown"}[r.IntN(3)]
	values := map[string]string{
		manifestwork.FeedbackHealth: health, manifestwork.FeedbackSync: sync,
		manifestwork.FeedbackRevision: fmt.Sprintf("rev-%d", r.IntN(3)),
		manifestwork.FeedbackPhase:    []string{"Succeeded", "Running", "Failed"}[r.IntN(3)],
	}
	if r.IntN(4) == 0 {
		values[manifestwork.FeedbackMessage] = strings.Repeat("the sync failed ", 1+r.IntN(60))
	}
	switch r.IntN(6) {
	case 0: // no resource list
	case 1:
		values[manifestwork.FeedbackResources] = "not json"
	default:
		var list []string
		for i := range 1 + r.IntN(4) {
			name := fmt.Sprintf("shared-%d", r.IntN(6))
			if i == 0 && r.IntN(2) == 0 {
				name = fmt.Sprintf("own-%d-%d", app, r.IntN(3))
			}
			list = append(list, fmt.Sprintf(`{"version":"v1","kind":"ConfigMap","namespace":"guestbook","name":%q,"status":"Synced"}`, name))
		}
		values[manifestwork.FeedbackResources] = "[" + strings.Join(list, ",") + "]"
	}
	if r.IntN(5) == 0 {
		values[manifestwork.FeedbackConditions] = `[{"type":"SyncError","message":"boom"},{"type":"` + strings.Repeat("T", 30+r.IntN(2)) + `","message":"x"}]`
	}
	m := Member{
		Cluster: cluster, AppNamespace: "openshift-gitops", AppName: fmt.Sprintf("guestbook-%d", app),
		WorkName: fmt.Sprintf("guestbook-%d-1a2b3c4d", app), Work: reported(values), ManagedCluster: available(cluster),
	}
	switch r.IntN(8) {
	case 0:
		m.Work = nil
	case 1: // written, not applied yet: stale after StaleAfter from when it was written
		m.Work.Generation = 2
		m.WorkWrittenAt = at.Add(-time.Duration(r.IntN(8)) * time.Minute)
	case 2:
		m.ManagedCluster = nil
	case 3:
		m.ManagedCluster = available(cluster)
		m.ManagedCluster.Status.Conditions[0].Status = metav1.ConditionFalse
		m.ManagedCluster.Status.Conditions[0].LastTransitionTime = metav1.NewTime(at.Add(-time.Hour))
	}
	if r.IntN(10) == 0 {
		m.PropagationError = "the destination is not allowed"
	}
	if r.IntN(10) == 0 {
		m.Paused = "paused by its ApplicationSet"
	}
	return m
}

// What a Tracker reports, after any sequence of changes, deletions and time passing (its due
// members Put again, as the controller does), is what a full rebuild of the members at that time
// gives: the same entries, resources, summary, notes and bound, and the same recheck time.
func TestTrackerMatchesAFullRebuildAfterAnySequenceOfChanges(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			g := NewWithT(t)
			r := rand.New(rand.NewPCG(seed, 7))
			opts := Options{SizeBudget: minSizeBudget + r.IntN(3)*8*1024}
			tracker := NewTracker(opts)
			members := map[int]Member{}
			at := now
			for step := range 300 {
				at = at.Add(time.Duration(r.IntN(90)) * time.Second)
				for _, key := range tracker.Due(at) {
					for _, m := range members {
						if m.Key() == key {
							tracker.Put(m, at)
						}
					}
				}
				app := r.IntN(40)
				if r.IntN(5) == 0 {
					delete(members, app)
					tracker.Delete(randomMember(r, app, at).Key())
				} else {
					members[app] = randomMember(r, app, at)
					tracker.Put(members[app], at)
				}
				if step%10 != 9 {
					continue
				}
				for _, key := range tracker.Due(at) {
					for _, m := range members {
						if m.Key() == key {
							tracker.Put(m, at)
						}
					}
				}
				var all []Member
				for _, m := range members {
					all = append(all, m)
				}
				wantOpts := opts
				wantOpts.Now = at
				want, wantRecheck := Build(all, wantOpts)
				got, gotRecheck := tracker.Report()
				g.Expect(got).To(Equal(want), "step %d", step)
				g.Expect(gotRecheck).To(Equal(wantRecheck), "step %d", step)
				g.Expect(size(got)).To(BeNumerically("<=", tracker.opts.SizeBudget))
			}
		})
	}
}

// The size a Tracker keeps is the report's encoded size, so that a report within its budget is
// not encoded to learn it.
func TestTrackerKnowsTheReportsEncodedSize(t *testing.T) {
	g := NewWithT(t)
	r := rand.New(rand.NewPCG(1, 2))
	tracker := NewTracker(Options{})
	g.Expect(tracker.size(tracker.assemble())).To(Equal(size(tracker.assemble())))
	for i := range 200 {
		if r.IntN(4) == 0 {
			tracker.Delete(fmt.Sprintf("openshift-gitops/guestbook-%d", r.IntN(60)))
		} else {
			tracker.Put(randomMember(r, r.IntN(60), now), now)
		}
		out := tracker.assemble()
		g.Expect(tracker.size(out)).To(Equal(size(out)), "after change %d", i)
	}
}

// A report bounded to its budget leaves the Tracker's own entries as they were: the next report,
// and the next bound, start from the clusters' conditions in full.
func TestTheBoundLeavesTheTrackersEntriesWhole(t *testing.T) {
	g := NewWithT(t)
	tracker := NewTracker(Options{SizeBudget: minSizeBudget})
	long := strings.Repeat("the sync failed ", 30)
	for i := range 40 {
		tracker.Put(m(fmt.Sprintf("c%02d", i), reported(map[string]string{
			manifestwork.FeedbackHealth: "Degraded", manifestwork.FeedbackSync: "OutOfSync",
			manifestwork.FeedbackConditions: `[{"type":"ComparisonError","message":"` + long + `"},{"type":"InvalidSpecError","message":"b"},{"type":"SyncError","message":"c"}]`,
		})), now)
	}
	first, _ := tracker.Report()
	g.Expect(first.Notes).To(ContainElement(ContainSubstring("condition messages cut to 128 characters")))
	for _, e := range tracker.order {
		g.Expect(e.cc.Conditions).To(HaveLen(3))
		g.Expect(e.cc.Conditions[0].Message).To(Equal(long), "the entry's own message, not the bound's cut")
	}
	second, _ := tracker.Report()
	g.Expect(second).To(Equal(first))
}

// Put says whether the report changed: a work rewritten with the same feedback (its agent's
// other status, a resync) changes nothing.
func TestAnUnchangedMemberLeavesTheReportsGenerationAlone(t *testing.T) {
	g := NewWithT(t)
	tracker := NewTracker(Options{})
	healthy := map[string]string{manifestwork.FeedbackHealth: "Healthy", manifestwork.FeedbackSync: "Synced"}
	g.Expect(tracker.Put(m("a", reported(healthy)), now)).To(BeTrue())
	gen := tracker.Generation()
	g.Expect(tracker.Put(m("a", reported(healthy)), now.Add(time.Minute))).To(BeFalse())
	g.Expect(tracker.Generation()).To(Equal(gen))
	g.Expect(tracker.Put(m("a", reported(map[string]string{manifestwork.FeedbackHealth: "Degraded", manifestwork.FeedbackSync: "Synced"})), now)).To(BeTrue())
	g.Expect(tracker.Generation()).To(Equal(gen + 1))
	g.Expect(tracker.Delete("openshift-gitops/guestbook-a")).To(BeTrue())
	g.Expect(tracker.Delete("openshift-gitops/guestbook-a")).To(BeFalse())
	g.Expect(tracker.Len()).To(Equal(0))
}

// A cluster that has not applied its work turns stale at the deadline without any event: Due
// names its member then, not before.
func TestDueNamesTheMembersTurningStale(t *testing.T) {
	g := NewWithT(t)
	tracker := NewTracker(Options{StaleAfter: 5 * time.Minute})
	pending := m("a", reported(map[string]string{manifestwork.FeedbackHealth: "Healthy", manifestwork.FeedbackSync: "Synced"}))
	pending.Work.Generation, pending.WorkWrittenAt = 2, now
	tracker.Put(pending, now)
	_, recheck := tracker.Report()
	g.Expect(recheck).To(Equal(now.Add(5 * time.Minute)))
	g.Expect(tracker.Due(now.Add(4 * time.Minute))).To(BeEmpty())
	g.Expect(tracker.Due(now.Add(5 * time.Minute))).To(Equal([]string{pending.Key()}))
	tracker.Put(pending, now.Add(5*time.Minute))
	out, recheck := tracker.Report()
	g.Expect(recheck.IsZero()).To(BeTrue())
	g.Expect(out.ClusterConditions[0].Conditions[0].Type).To(Equal(ConditionStale))
}
