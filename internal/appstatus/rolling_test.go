package appstatus

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/argocd-pull/argocd-pull/internal/argocd"
)

var testSet = types.NamespacedName{Namespace: "argocd", Name: "set"}

var testSource = Source{RepoURL: "https://git.example/app.git", TargetRevision: "HEAD", Path: "guestbook"}

// hubApp is a single-source hub Application that shows sync and revision.
func hubApp(sync, revision string) *unstructured.Unstructured {
	u := argocd.NewApplication()
	u.Object["spec"] = map[string]any{"source": map[string]any{"repoURL": testSource.RepoURL, "targetRevision": testSource.TargetRevision, "path": testSource.Path}}
	if sync != "" {
		_ = unstructured.SetNestedField(u.Object, map[string]any{"status": sync, "revision": revision}, "status", "sync")
	}
	return u
}

// showing is what the barrier compares of a hub Application showing sync at revision, whose
// cluster reports obs.
func showing(sync, revision string, obs Observed) Member {
	m, _ := MemberOf(hubApp(sync, revision), obs)
	return m
}

// appKey names an Application in testSet's namespace.
func appKey(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: testSet.Namespace, Name: name}
}

func reports(sync, revision string) Observed {
	return Observed{Applied: true, ContentApplied: true, Seen: true, Reported: true, Health: argocd.HealthHealthy, Sync: sync, Revision: revision}
}

// A cluster is behind its fleet when a sibling applied its work and reports OutOfSync at a revision
// it has not compared against; the hub then does not show it Synced.
func TestBehindTheFleet(t *testing.T) {
	notApplied := reports(argocd.SyncOutOfSync, "r2")
	notApplied.Applied, notApplied.ContentApplied = false, false
	tests := map[string]struct {
		own      Observed
		siblings []Observed
		want     bool
	}{
		"alone":                                   {own: reports(argocd.SyncSynced, "r1")},
		"all at the same revision":                {own: reports(argocd.SyncSynced, "r1"), siblings: []Observed{reports(argocd.SyncSynced, "r1"), reports(argocd.SyncOutOfSync, "r1")}},
		"a sibling saw a new revision":            {own: reports(argocd.SyncSynced, "r1"), siblings: []Observed{reports(argocd.SyncSynced, "r1"), reports(argocd.SyncOutOfSync, "r2")}, want: true},
		"a sibling synced another revision":       {own: reports(argocd.SyncSynced, "r1"), siblings: []Observed{reports(argocd.SyncSynced, "r2")}},
		"a sibling that has not applied its work": {own: reports(argocd.SyncSynced, "r1"), siblings: []Observed{notApplied}},
		"nothing reported yet":                    {own: Observed{}, siblings: []Observed{reports(argocd.SyncOutOfSync, "r2")}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			v := NewRollingSets()
			members := map[string]Member{}
			for i, s := range tt.siblings {
				members[fmt.Sprint("sibling", i)], _ = MemberOf(hubApp(s.Sync, s.Revision), s)
			}
			v.Seed(testSet, members)
			own := types.NamespacedName{Namespace: "argocd", Name: "own"}
			m, ok := MemberOf(hubApp("", ""), tt.own)
			g.Expect(ok).To(BeTrue())
			v.Put(testSet, own, m)
			obs := tt.own
			d := v.Decide(testSet, own, obs.Revision)
			obs.Behind, obs.AheadRevision = d.Behind, d.Ahead
			g.Expect(obs.Behind).To(Equal(tt.want))
			if st := Derive(obs, nil); tt.want {
				g.Expect(st.Sync).To(Equal(argocd.SyncOutOfSync), "a RollingSync step does not count it done")
				g.Expect(st.Revision).To(Equal("r2"), "the revision its fleet went ahead to: Argo CD 3.4+ waits on a changed revision")
			} else {
				g.Expect(st.Revision).To(Equal(tt.own.Revision), "the revision it has")
			}
		})
	}
}

// The siblings a cluster's status puts behind are written before it; those marked behind are
// rechecked once no sibling holds them behind; a multi-source Application is no member.
func TestTheSiblingsToWriteFirst(t *testing.T) {
	g := NewWithT(t)
	v := NewRollingSets()
	v.Seed(testSet, map[string]Member{
		"done":   showing(argocd.SyncSynced, "r1", reports(argocd.SyncSynced, "r1")),
		"marked": showing(argocd.SyncOutOfSync, "r2", reports(argocd.SyncSynced, "r1")),
		"new":    showing(argocd.SyncSynced, "r2", reports(argocd.SyncSynced, "r2")),
		"late":   showing(argocd.SyncOutOfSync, "r1", reports(argocd.SyncOutOfSync, "r2")),
	})
	ahead := appKey("ahead")
	v.Put(testSet, ahead, showing(argocd.SyncSynced, "r1", reports(argocd.SyncOutOfSync, "r2")))
	d := v.Decide(testSet, ahead, "r2")
	g.Expect(d.Behind).To(BeFalse(), "r1 is behind it, not ahead")
	g.Expect(d.Rewrite).To(Equal([]string{"done"}), "Synced at r1 is put behind")
	g.Expect(d.Recheck).To(BeEmpty(), "marked is still held behind: late and ahead went ahead to r2")

	v.Put(testSet, appKey("done"), showing(argocd.SyncOutOfSync, "r2", reports(argocd.SyncSynced, "r1")))
	g.Expect(v.Evaluated(appKey("done"), d, "r1")).To(BeTrue())
	g.Expect(v.Decide(testSet, ahead, "r2").Rewrite).To(BeEmpty())

	left, ok := v.Forget(ahead)
	g.Expect(ok).To(BeTrue())
	g.Expect(v.Freed(left)).To(BeEmpty(), "late still went ahead to r2")
	left, ok = v.Forget(appKey("late"))
	g.Expect(ok).To(BeTrue())
	freed := v.Freed(left)
	slices.Sort(freed)
	g.Expect(freed).To(Equal([]string{"done", "marked"}), "the clusters that put them behind are gone")
	g.Expect(v.Decide(testSet, appKey("new"), "r2").Recheck).To(ConsistOf("done", "marked"), "any sibling's reconcile finds them freed")

	multi := hubApp("", "")
	multi.Object["spec"] = map[string]any{"sources": []any{map[string]any{"repoURL": testSource.RepoURL}}}
	_, ok = MemberOf(multi, reports(argocd.SyncOutOfSync, "r2"))
	g.Expect(ok).To(BeFalse())
}

// Two reconciles at once: one decides a cluster behind; before it records what it wrote, the
// cluster that put it behind leaves, and the leaving's reconcile passes it over (the view still
// held what the hub showed before, read from a cache that had not seen the write). Nothing else
// would write it again: recording says the decision was overturned, and it is decided again.
func TestADecisionOverturnedMeanwhileIsDecidedAgain(t *testing.T) {
	g := NewWithT(t)
	v := NewRollingSets()
	v.Seed(testSet, map[string]Member{
		"step1": showing(argocd.SyncSynced, "r1", reports(argocd.SyncSynced, "r1")),
		"step3": showing(argocd.SyncOutOfSync, "r2", reports(argocd.SyncOutOfSync, "r2")),
	})
	d := v.Decide(testSet, appKey("step1"), "r1")
	g.Expect(d.Behind).To(BeTrue(), "step3 went ahead to r2")

	left, ok := v.Forget(appKey("step3"))
	g.Expect(ok).To(BeTrue())
	g.Expect(v.Freed(left)).To(BeEmpty(), "the view shows step1 Synced: the write that puts it behind is not recorded yet")

	v.Put(testSet, appKey("step1"), showing(argocd.SyncOutOfSync, "r2", reports(argocd.SyncSynced, "r1")))
	g.Expect(v.Evaluated(appKey("step1"), d, "r1")).To(BeFalse(), "step1 was written behind a cluster that left")
	again := v.Decide(testSet, appKey("step1"), "r1")
	g.Expect(again.Behind).To(BeFalse())
	g.Expect(v.Evaluated(appKey("step1"), again, "r1")).To(BeTrue())

	// A change that leaves the decision as it was does not ask for another.
	v.Put(testSet, appKey("step2"), showing(argocd.SyncSynced, "r1", reports(argocd.SyncOutOfSync, "r1")))
	g.Expect(v.Evaluated(appKey("step1"), again, "r1")).To(BeTrue(), "step2 at r1 puts nobody at r1 behind")
}

// Two reconciles at once, the other way round: step1's own reconcile decides it Synced at r1 (its
// cluster has not found r2), and before it writes that, step2's cluster reports r2 and step2's
// reconcile writes step1 behind, then step2. Written late, step1's Synced at r1 would undo that:
// the ApplicationSet controller would read step1 done after reading step2 at r2, and sync step2
// first (the lab's RollingSync test saw it once in CI). The late write is refused.
func TestALateWriteOfAnOverturnedDecisionIsRefused(t *testing.T) {
	g := NewWithT(t)
	v := NewRollingSets()
	v.Seed(testSet, map[string]Member{
		"step1": showing(argocd.SyncSynced, "r1", reports(argocd.SyncSynced, "r1")),
		"step2": showing(argocd.SyncSynced, "r1", reports(argocd.SyncSynced, "r1")),
	})
	late := v.Decide(testSet, appKey("step1"), "r1")
	g.Expect(late.Behind).To(BeFalse())

	// step2's reconcile: it went ahead, and writes step1 behind first.
	v.Put(testSet, appKey("step2"), showing(argocd.SyncSynced, "r1", reports(argocd.SyncOutOfSync, "r2")))
	d2 := v.Decide(testSet, appKey("step2"), "r2")
	g.Expect(d2.Rewrite).To(ConsistOf("step1"))
	d1 := v.Decide(testSet, appKey("step1"), "r1")
	g.Expect(d1.Behind).To(BeTrue())
	g.Expect(v.Admit(testSet, appKey("step1"), d1, "r1", showing(argocd.SyncOutOfSync, "r2", reports(argocd.SyncSynced, "r1")))).To(BeTrue())
	g.Expect(v.Admit(testSet, appKey("step2"), d2, "r2", showing(argocd.SyncOutOfSync, "r2", reports(argocd.SyncOutOfSync, "r2")))).To(BeTrue())

	g.Expect(v.Admit(testSet, appKey("step1"), late, "r1", showing(argocd.SyncSynced, "r1", reports(argocd.SyncSynced, "r1")))).
		To(BeFalse(), "decided before step2 went ahead, and overturned by it")
	g.Expect(v.Decide(testSet, appKey("step2"), "r2").Rewrite).To(BeEmpty(), "the view still shows step1 behind, as the hub does")

	// A decision that still stands is admitted, and shows in the view while it is sent: a
	// sibling that goes ahead meanwhile names it among the siblings to write first.
	v = NewRollingSets()
	v.Seed(testSet, map[string]Member{
		"step1": showing(argocd.SyncOutOfSync, "r1", reports(argocd.SyncSynced, "r1")),
		"step2": showing(argocd.SyncSynced, "r1", reports(argocd.SyncSynced, "r1")),
	})
	d1 = v.Decide(testSet, appKey("step1"), "r1")
	g.Expect(v.Admit(testSet, appKey("step1"), d1, "r1", showing(argocd.SyncSynced, "r1", reports(argocd.SyncSynced, "r1")))).To(BeTrue())
	v.Put(testSet, appKey("step2"), showing(argocd.SyncSynced, "r1", reports(argocd.SyncOutOfSync, "r2")))
	g.Expect(v.Decide(testSet, appKey("step2"), "r2").Rewrite).To(ConsistOf("step1"), "step1's write, still being sent, shows Synced at r1")

	// A write decided for a source the Application no longer wants is refused too.
	moved := testSource
	moved.TargetRevision = "v2"
	d1 = v.Decide(testSet, appKey("step1"), "r1")
	m := showing(argocd.SyncSynced, "r1", reports(argocd.SyncSynced, "r1"))
	m.Source = moved
	v.Put(testSet, appKey("step1"), m)
	g.Expect(v.Admit(testSet, appKey("step1"), d1, "r1", showing(argocd.SyncSynced, "r1", reports(argocd.SyncSynced, "r1")))).To(BeFalse())
}

// fleetModel is one RollingSync ApplicationSet's clusters and hub Applications, reconciled as the
// status controller does with the view: on each change of a cluster (or of the Application's
// source, or its deletion), a reconcile of that Application alone.
type fleetModel struct {
	v       *RollingSets
	present map[string]bool
	source  map[string]Source
	cluster map[string]Observed
	hubSync map[string]string
	hubRev  map[string]string
	// disorder lists the writes that showed a cluster ahead before its siblings were put behind.
	disorder []string
	// queued is the reconciles queued (siblings to recheck, decisions overturned), in order.
	queued []string
}

var modelSet = types.NamespacedName{Namespace: "argocd", Name: "rollout"}

func (f *fleetModel) key(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: "argocd", Name: name}
}

func (f *fleetModel) member(name string) Member {
	app := hubApp(f.hubSync[name], f.hubRev[name])
	src := f.source[name]
	app.Object["spec"] = map[string]any{"source": map[string]any{"repoURL": src.RepoURL, "targetRevision": src.TargetRevision, "path": src.Path}}
	m, _ := MemberOf(app, f.cluster[name])
	return m
}

// write is AppStatusReconciler.write, reduced to the barrier.
func (f *fleetModel) write(name string, siblingsFirst bool) {
	f.decide(name, siblingsFirst)()
}

// decide is write up to the status patch, which it returns: the controller decides an
// Application's status from its view, writes the siblings it puts behind, then sends the patch;
// other reconciles may run in between.
func (f *fleetModel) decide(name string, siblingsFirst bool) (send func()) {
	if !f.present[name] {
		if left, ok := f.v.Forget(f.key(name)); ok {
			f.queued = append(f.queued, f.v.Freed(left)...)
		}
		return func() {}
	}
	if left, moved := f.v.Put(modelSet, f.key(name), f.member(name)); moved {
		f.queued = append(f.queued, f.v.Freed(left)...)
	}
	revision := f.cluster[name].Revision
	d := f.v.Decide(modelSet, f.key(name), revision)
	if siblingsFirst {
		for _, s := range d.Rewrite {
			f.write(s, false)
		}
		f.queued = append(f.queued, d.Recheck...)
	}
	sync, rev := derived(f.cluster[name], d)
	showing := f.member(name)
	showing.HubSync, showing.HubRevision = sync, rev
	return func() {
		if !f.v.Admit(modelSet, f.key(name), d, revision, showing) {
			f.queued = append(f.queued, name)
			return
		}
		f.hubSync[name], f.hubRev[name] = sync, rev
		stands := f.v.Evaluated(f.key(name), d, revision)
		f.checkOrder(name)
		if !stands {
			f.queued = append(f.queued, name)
		}
	}
}

// reconcile is a change's reconcile of name, then the reconciles it queued, each in turn, but for
// those of busy (its reconcile is still running: the controller never runs two of one
// Application at once), which stay queued.
func (f *fleetModel) reconcile(name, busy string) (reconciles int) {
	f.queued = append(f.queued, name)
	return f.drain(busy)
}

// drain runs the reconciles queued, but for busy's (see reconcile).
func (f *fleetModel) drain(busy string) (reconciles int) {
	var held []string
	for ; len(f.queued) > 0 && reconciles <= 1000; reconciles++ {
		next := f.queued[0]
		f.queued = f.queued[1:]
		if next == busy {
			held = append(held, next)
			continue
		}
		f.write(next, true)
	}
	f.queued = append(f.queued, held...)
	return reconciles
}

// checkOrder fails when a write shows a cluster OutOfSync at the revision it went ahead to while a
// sibling shows Synced at another, or shows a cluster Synced at a revision other than one a
// sibling is shown OutOfSync at, having gone ahead to it: a later step could run before that
// sibling's.
func (f *fleetModel) checkOrder(written string) {
	aheadShown := func(name string) string {
		if ahead := f.member(name).Ahead; ahead != "" && f.hubSync[name] == argocd.SyncOutOfSync && f.hubRev[name] == ahead {
			return ahead
		}
		return ""
	}
	syncedAt := func(name string, revision string) bool {
		return f.hubSync[name] == argocd.SyncSynced && f.hubRev[name] != "" && f.hubRev[name] != revision
	}
	for other := range f.present {
		if other == written || !f.present[other] || f.source[other] != f.source[written] {
			continue
		}
		if ahead := aheadShown(written); ahead != "" && syncedAt(other, ahead) {
			f.disorder = append(f.disorder, fmt.Sprintf("%s written OutOfSync at %s while %s shows Synced at %s", written, ahead, other, f.hubRev[other]))
		}
		if ahead := aheadShown(other); ahead != "" && syncedAt(written, ahead) {
			f.disorder = append(f.disorder, fmt.Sprintf("%s written Synced at %s while %s shows OutOfSync at %s, the revision it went ahead to", written, f.hubRev[written], other, ahead))
		}
	}
}

// derived is the hub's sync status and revision (Derive, reduced to the barrier).
func derived(obs Observed, d Decision) (sync, revision string) {
	sync, revision = obs.Sync, obs.Revision
	if !obs.ContentApplied {
		sync = argocd.SyncOutOfSync
	}
	if d.Behind && sync == argocd.SyncSynced {
		sync, revision = argocd.SyncOutOfSync, d.Ahead
	}
	return sync, revision
}

// decision is the barrier's decision for name read from the whole fleet (see behind): behind the
// least revision a sibling went ahead to.
func (f *fleetModel) decision(name string) Decision {
	if !f.behind(name) {
		return Decision{}
	}
	d := Decision{Behind: true}
	for other, s := range f.cluster {
		if other != name && f.present[other] && f.source[other] == f.source[name] &&
			s.ContentApplied && s.Sync == argocd.SyncOutOfSync && s.Revision != "" && s.Revision != f.cluster[name].Revision &&
			(d.Ahead == "" || s.Revision < d.Ahead) {
			d.Ahead = s.Revision
		}
	}
	return d
}

// behind is the barrier's rule read from the whole fleet, as the controller read it before the
// view: another cluster with the same source applied its work and reports OutOfSync at another
// revision.
func (f *fleetModel) behind(name string) bool {
	own := f.cluster[name]
	if own.Revision == "" {
		return false
	}
	for other, s := range f.cluster {
		if other != name && f.present[other] && f.source[other] == f.source[name] &&
			s.ContentApplied && s.Sync == argocd.SyncOutOfSync && s.Revision != "" && s.Revision != own.Revision {
			return true
		}
	}
	return false
}

// The view decides as reading every sibling did: on random fleets, after each change and the
// reconciles it causes (its own, then those it queues), every hub Application shows what the whole fleet's reports say, and it is
// written before any cluster that puts it behind.
func TestTheViewDecidesAsReadingEverySiblingDid(t *testing.T) {
	sources := []Source{testSource, {RepoURL: testSource.RepoURL, TargetRevision: "v2", Path: testSource.Path}}
	revisions := []string{"", "r1", "r2", "r3"}
	syncs := []string{argocd.SyncSynced, argocd.SyncOutOfSync, argocd.SyncUnknown}
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 38))
		// Without bounds on one cluster's word (BarrierLimits; their own tests are above): the rule
		// read from the whole fleet, as before them.
		f := &fleetModel{v: NewRollingSetsWith(BarrierLimits{UnconfirmedHold: 1000 * time.Hour, UnconfirmedChanges: 1 << 30}), present: map[string]bool{}, source: map[string]Source{}, cluster: map[string]Observed{},
			hubSync: map[string]string{}, hubRev: map[string]string{}}
		n := 2 + rng.IntN(8)
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprint("cluster", i)
			f.present[names[i]] = true
			f.source[names[i]] = sources[0]
			f.cluster[names[i]] = reports(argocd.SyncSynced, "r1")
			f.hubSync[names[i]], f.hubRev[names[i]] = argocd.SyncSynced, "r1"
		}
		seeded := map[string]Member{}
		for _, name := range names {
			seeded[name] = f.member(name)
		}
		f.v.Seed(modelSet, seeded)
		for step := range 60 {
			name := names[rng.IntN(n)]
			// Now and then another Application's own reconcile has decided, and sends its patch
			// only after this change's reconciles ran.
			late, send := "", func() {}
			if other := names[rng.IntN(n)]; other != name && rng.IntN(3) == 0 {
				late, send = other, f.decide(other, true)
			}
			var change string
			switch r := rng.IntN(10); {
			case r < 7:
				obs := reports(syncs[rng.IntN(len(syncs))], revisions[rng.IntN(len(revisions))])
				obs.ContentApplied = rng.IntN(5) > 0
				f.cluster[name] = obs
				change = fmt.Sprintf("%s reports %s at %q (applied %v)", name, obs.Sync, obs.Revision, obs.ContentApplied)
			case r < 8:
				f.source[name] = sources[rng.IntN(len(sources))]
				change = fmt.Sprintf("%s wants %s", name, f.source[name].TargetRevision)
			default:
				f.present[name] = !f.present[name]
				change = fmt.Sprintf("%s present %v", name, f.present[name])
			}
			n := f.reconcile(name, late)
			send()
			if n += f.drain(""); n > 2000 {
				t.Fatalf("seed %d, step %d (%s): %d reconciles, they do not settle", seed, step, change, n)
			}
			if late != "" {
				change += ", while " + late + "'s own reconcile was sending its patch"
			}
			if len(f.disorder) > 0 {
				t.Fatalf("seed %d, step %d (%s): %v", seed, step, change, f.disorder)
			}
			if err := f.v.checkIndexes(); err != nil {
				t.Fatalf("seed %d, step %d (%s): %v", seed, step, change, err)
			}
			for _, other := range names {
				if !f.present[other] {
					continue
				}
				wantSync, wantRev := derived(f.cluster[other], f.decision(other))
				if f.hubSync[other] != wantSync || f.hubRev[other] != wantRev {
					t.Fatalf("seed %d, step %d (%s): the hub shows %s %s at %q, the fleet says %s at %q",
						seed, step, change, other, f.hubSync[other], f.hubRev[other], wantSync, wantRev)
				}
			}
		}
	}
}

// checkIndexes says how each group's indexes differ from what its members say now.
func (v *RollingSets) checkIndexes() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	for set, groups := range v.sets {
		for source, g := range groups {
			want := newGroup()
			for name, m := range g.members {
				want.index(name, m.Member, true)
			}
			if !reflect.DeepEqual(want.synced, g.synced) || !reflect.DeepEqual(want.behind, g.behind) {
				return fmt.Errorf("%s %v: indexes synced %v behind %v, the members say %v and %v", set, source, g.synced, g.behind, want.synced, want.behind)
			}
		}
	}
	return nil
}

// clockedSets is a view whose clock the test moves.
func clockedSets(limits BarrierLimits) (*RollingSets, *time.Time) {
	v := NewRollingSetsWith(limits)
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	v.now = func() time.Time { return now }
	return v, &now
}

// One cluster reports whatever it likes as the revision it went ahead to. Its word alone holds its
// siblings for its window (the barrier still protects a commit one cluster finds first), and at
// most UnconfirmedChanges changes in it; then none of its revisions holds anyone, and reporting
// its fleet's own revision between forged ones does not open a window again.
func TestOneClustersWordAloneHoldsItsSiblingsForItsWindowOnly(t *testing.T) {
	g := NewWithT(t)
	limits := BarrierLimits{UnconfirmedHold: time.Minute, UnconfirmedChanges: 2}
	v, now := clockedSets(limits)
	v.Seed(testSet, map[string]Member{
		"attacker": showing(argocd.SyncSynced, "r1", reports(argocd.SyncSynced, "r1")),
		"honest":   showing(argocd.SyncSynced, "r1", reports(argocd.SyncSynced, "r1")),
	})
	forge := func(revision string) Decision {
		v.Put(testSet, appKey("attacker"), showing(argocd.SyncSynced, "r1", reports(argocd.SyncOutOfSync, revision)))
		return v.Decide(testSet, appKey("attacker"), revision)
	}
	honest := func() Decision { return v.Decide(testSet, appKey("honest"), "r1") }

	start := *now
	g.Expect(forge("forged-0").Rewrite).To(Equal([]string{"honest"}), "put behind, as a commit found first would")
	d := honest()
	g.Expect(d.Behind).To(BeTrue())
	g.Expect(d.Ahead).To(Equal("forged-0"))
	g.Expect(d.Until).To(Equal(start.Add(time.Minute)), "decided again when the window ends")

	*now = start.Add(30 * time.Second)
	g.Expect(forge("forged-1").Rewrite).To(Equal([]string{"honest"}), "a change in the window: one write")
	g.Expect(honest().Until).To(Equal(start.Add(time.Minute)), "the window does not move with a change")
	g.Expect(forge("forged-2").Rewrite).To(Equal([]string{"honest"}))
	g.Expect(forge("forged-3").Rewrite).To(BeEmpty(), "a third change: over UnconfirmedChanges")
	g.Expect(honest().Behind).To(BeFalse())

	*now = start.Add(2 * time.Minute)
	g.Expect(forge("forged-4").Rewrite).To(BeEmpty())
	g.Expect(honest().Behind).To(BeFalse(), "after the window")

	// Back at its fleet's revision (which it reported first at the seed), its siblings written
	// again: it is not made right by that.
	v.Put(testSet, appKey("attacker"), showing(argocd.SyncSynced, "r1", reports(argocd.SyncSynced, "r1")))
	v.Put(testSet, appKey("honest"), showing(argocd.SyncSynced, "r1", reports(argocd.SyncSynced, "r1")))
	g.Expect(forge("forged-5").Rewrite).To(BeEmpty())
	g.Expect(honest().Behind).To(BeFalse())
}

// A commit one cluster finds first is confirmed once another cluster reports it (its step synced
// it, or its own refresh found it): it then holds the rest of the fleet for as long as it is
// reported, past the window, and the cluster that found it first has a window again.
func TestARevisionTwoClustersReportHoldsTheFleet(t *testing.T) {
	g := NewWithT(t)
	v, now := clockedSets(BarrierLimits{UnconfirmedHold: time.Minute, UnconfirmedChanges: 1})
	v.Seed(testSet, map[string]Member{
		"first":  showing(argocd.SyncSynced, "r1", reports(argocd.SyncSynced, "r1")),
		"step1":  showing(argocd.SyncSynced, "r1", reports(argocd.SyncSynced, "r1")),
		"step3":  showing(argocd.SyncSynced, "r1", reports(argocd.SyncSynced, "r1")),
		"honest": showing(argocd.SyncSynced, "r1", reports(argocd.SyncSynced, "r1")),
	})
	start := *now
	v.Put(testSet, appKey("first"), showing(argocd.SyncSynced, "r1", reports(argocd.SyncOutOfSync, "r2")))
	g.Expect(v.Decide(testSet, appKey("step1"), "r1").Until).To(Equal(start.Add(time.Minute)))

	*now = start.Add(30 * time.Second)
	v.Put(testSet, appKey("step1"), showing(argocd.SyncSynced, "r1", reports(argocd.SyncSynced, "r2"))) // its step synced r2
	*now = start.Add(time.Hour)
	d := v.Decide(testSet, appKey("step3"), "r1")
	g.Expect(d.Behind).To(BeTrue(), "r2 is two clusters' word")
	g.Expect(d.Until.IsZero()).To(BeTrue())

	// The cluster that found r2 first has a window again for the next commit.
	v.Put(testSet, appKey("first"), showing(argocd.SyncOutOfSync, "r2", reports(argocd.SyncOutOfSync, "r3")))
	d = v.Decide(testSet, appKey("honest"), "r1")
	g.Expect(d.Ahead).To(Equal("r3"))
	g.Expect(d.Until).To(Equal(now.Add(time.Minute)), "a new window, from its first report of r3")
	v.Put(testSet, appKey("step1"), showing(argocd.SyncSynced, "r2", reports(argocd.SyncSynced, "r3")))
	*now = now.Add(time.Hour)
	d = v.Decide(testSet, appKey("step3"), "r1")
	g.Expect(d.Ahead).To(Equal("r3"))
	g.Expect(d.Until.IsZero()).To(BeTrue(), "confirmed")
}

// "Two clusters" means two clusters: one cluster hosting two Applications of the set (two
// sources, or two templates naming it) reports a forged revision through both works, and holds its
// siblings within its window only, as any one cluster's word. Before, the two Applications counted
// as two clusters and held the fleet for as long as they reported it (issue 92, hole 7).
func TestTwoApplicationsOfOneClusterAreOneClustersWord(t *testing.T) {
	g := NewWithT(t)
	v, now := clockedSets(BarrierLimits{UnconfirmedHold: time.Minute, UnconfirmedChanges: 1})
	on := func(cluster string, m Member) Member { m.Cluster = cluster; return m }
	v.Seed(testSet, map[string]Member{
		"first":  on("cluster1", showing(argocd.SyncSynced, "r1", reports(argocd.SyncSynced, "r1"))),
		"twin":   on("cluster1", showing(argocd.SyncSynced, "r1", reports(argocd.SyncSynced, "r1"))),
		"honest": on("cluster2", showing(argocd.SyncSynced, "r1", reports(argocd.SyncSynced, "r1"))),
	})
	start := *now
	v.Put(testSet, appKey("first"), on("cluster1", showing(argocd.SyncSynced, "r1", reports(argocd.SyncOutOfSync, "forged"))))
	v.Put(testSet, appKey("twin"), on("cluster1", showing(argocd.SyncSynced, "r1", reports(argocd.SyncOutOfSync, "forged"))))
	d := v.Decide(testSet, appKey("honest"), "r1")
	g.Expect(d.Behind).To(BeTrue(), "within the window")
	g.Expect(d.Until).To(Equal(start.Add(time.Minute)), "one cluster's word: its window, not the fleet's")
	*now = start.Add(time.Hour)
	g.Expect(v.Decide(testSet, appKey("honest"), "r1").Behind).To(BeFalse(), "the window ended")

	// A second cluster reporting it confirms it.
	v.Put(testSet, appKey("honest"), on("cluster2", showing(argocd.SyncSynced, "r1", reports(argocd.SyncOutOfSync, "forged"))))
	g.Expect(v.Decide(testSet, appKey("first"), "r1").Until.IsZero()).To(BeTrue(), "two clusters' word")
}
