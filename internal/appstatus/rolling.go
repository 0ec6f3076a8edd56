package appstatus

import (
	"maps"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
)

// Member is what the RollingSync barrier compares of one hub Application of a RollingSync
// ApplicationSet: the source it wants, what its cluster reports, and what the hub shows.
//
// The barrier: managed Argo CDs find a new commit each on its own refresh schedule. Without it, the
// ApplicationSet controller could see a later step's cluster OutOfSync at the new revision while
// an earlier step's cluster still reads Synced at the old one, count the earlier step done and
// sync the later one first. So a cluster is behind its fleet when another cluster of the same
// ApplicationSet, with the same source, applied its work and reports OutOfSync at a revision this
// cluster has not compared against; the hub shows it OutOfSync (see Derive), and writes it so
// before it writes the cluster that went ahead.
type Member struct {
	Source Source
	// Ahead is the revision its cluster applied its work at and reports OutOfSync at, "" when it
	// does not: it puts behind the clusters that have not compared against that revision.
	Ahead string
	// ClusterSynced is true when its cluster reports Synced, and ClusterRevision the revision it
	// reports.
	ClusterSynced   bool
	ClusterRevision string
	// HubSync and HubRevision are the hub Application's status.sync.status and .revision.
	HubSync, HubRevision string
	// Cluster is the managed cluster it is delivered to: a revision is confirmed by two clusters,
	// not two Applications ("": the member is its own cluster).
	Cluster string
}

// MemberOf is what the barrier compares of the hub Application app whose cluster reports obs (read
// by ObserveSync or Observe), false for a multi-source Application (its revision is not one word).
func MemberOf(app *unstructured.Unstructured, obs Observed) (Member, bool) {
	wanted := WantedSource(app)
	if wanted == nil {
		return Member{}, false
	}
	m := Member{Source: *wanted, ClusterSynced: obs.Sync == argocd.SyncSynced, ClusterRevision: obs.Revision}
	m.Cluster, _ = argocd.Annotation(app, api.ClusterAnnotation)
	if obs.ContentApplied && obs.Sync == argocd.SyncOutOfSync {
		m.Ahead = obs.Revision
	}
	return m.Showing(app), true
}

// Showing is m with what the hub Application app shows: after a status write, what was written.
// Its source stays m's: the answer to a status patch carries the newest spec, whose own reconcile
// moves the member (see RollingSets.Put).
func (m Member) Showing(app *unstructured.Unstructured) Member {
	m.HubSync, _, _ = unstructured.NestedString(app.Object, "status", "sync", "status")
	m.HubRevision, _, _ = unstructured.NestedString(app.Object, "status", "sync", "revision")
	return m
}

// puts says whether m's cluster puts behind the sibling the hub shows Synced at a revision other than
// the one m's cluster went ahead to: m's status would put it behind.
func (m Member) puts(sibling Member) bool {
	return m.Ahead != "" && sibling.HubSync == argocd.SyncSynced && sibling.HubRevision != "" && sibling.HubRevision != m.Ahead
}

// markedBehind says whether the hub shows m OutOfSync while its cluster reports Synced: it was put
// behind, and may no longer be.
func (m Member) markedBehind() bool {
	return m.HubSync == argocd.SyncOutOfSync && m.ClusterSynced
}

// RollingSets is what the status controller knows of the Applications of each RollingSync
// ApplicationSet, so that a status reconcile decides the barrier from a pass over small in-memory
// entries instead of reading every sibling: at 1,000 clusters, listing them and reading each one's
// work on every reconcile was most of the controller's CPU, and a step's statuses waited behind it.
//
// A set is seeded from the cache on first use (Seed), then each status reconcile puts the facts
// it read of its own Application (Put) before deciding (Decide): every change of a work or a hub
// Application is reconciled, so the view lags the cache only by the changes still queued, whose
// reconciles decide again. It is safe for concurrent use.
type RollingSets struct {
	mu sync.Mutex
	// sets holds each seeded ApplicationSet's groups of siblings, by source.
	sets map[types.NamespacedName]map[Source]*group
	// of is each member's place.
	of     map[types.NamespacedName]Place
	limits BarrierLimits
	now    func() time.Time
}

// Place is a group of siblings: an ApplicationSet and a source.
type Place struct {
	Set    types.NamespacedName
	Source Source
}

// group is the members of a set with the same source: the siblings.
type group struct {
	members map[string]*member // by Application name
	// ahead counts the members by the revision they went ahead to; gen changes with it.
	ahead map[string]int
	gen   uint64
	// synced names the members the hub shows Synced, by the revision it shows (not ""): those a
	// member gone ahead to another revision puts behind. behind names the members marked behind.
	// With them a decision reads only the siblings it may name, not the whole group: in a rollout
	// step no member is ahead or marked behind, and a decision is a few lookups whatever the
	// fleet's size.
	synced map[string]map[string]struct{}
	behind map[string]struct{}
	// reported names the members by the revision their cluster reports (not ""), and first the
	// member that reported each first: a revision two clusters report is confirmed (see holds).
	reported map[string]map[string]struct{}
	first    map[string]string
}

func newGroup() *group {
	return &group{members: map[string]*member{}, ahead: map[string]int{}, synced: map[string]map[string]struct{}{}, behind: map[string]struct{}{},
		reported: map[string]map[string]struct{}{}, first: map[string]string{}}
}

// index adds (or, with add false, removes) the member name, whose facts are m, to the indexes that
// name members by what the hub shows.
func (g *group) index(name string, m Member, add bool) {
	if m.HubSync == argocd.SyncSynced && m.HubRevision != "" {
		names := g.synced[m.HubRevision]
		switch {
		case add && names == nil:
			g.synced[m.HubRevision] = map[string]struct{}{name: {}}
		case add:
			names[name] = struct{}{}
		default:
			delete(names, name)
			if len(names) == 0 {
				delete(g.synced, m.HubRevision)
			}
		}
	}
	if m.markedBehind() {
		if add {
			g.behind[name] = struct{}{}
		} else {
			delete(g.behind, name)
		}
	}
	if r := m.ClusterRevision; r != "" {
		names := g.reported[r]
		switch {
		case add && names == nil:
			g.reported[r] = map[string]struct{}{name: {}}
			g.first[r] = name
		case add:
			names[name] = struct{}{}
		default:
			delete(names, name)
			switch {
			case len(names) == 0:
				delete(g.reported, r)
				delete(g.first, r)
			case g.first[r] == name:
				// The first reporter left it: the claim passes to one who still reports it
				// (the least name, so that the same fleet always names the same one).
				g.first[r] = slices.Min(slices.Collect(maps.Keys(names)))
			}
		}
	}
}

type member struct {
	Member
	// evaluated is the group's gen when the member's status was last written (or found
	// unchanged): a member marked behind needs writing again only once gen moved on.
	evaluated uint64
	// unconfirmedSince is when its cluster first went ahead to a revision no other cluster
	// reported, since one it reported first was last confirmed (zero: not since), and
	// unconfirmedChanges how often it went ahead to another such revision since (see holds).
	unconfirmedSince   time.Time
	unconfirmedChanges int
}

// NewRollingSets returns an empty view, with the default limits.
func NewRollingSets() *RollingSets {
	return NewRollingSetsWith(BarrierLimits{})
}

// NewRollingSetsWith returns an empty view with limits (zero fields: the defaults).
func NewRollingSetsWith(limits BarrierLimits) *RollingSets {
	if limits.UnconfirmedHold <= 0 {
		limits.UnconfirmedHold = DefaultUnconfirmedHold
	}
	if limits.UnconfirmedChanges <= 0 {
		limits.UnconfirmedChanges = DefaultUnconfirmedChanges
	}
	return &RollingSets{sets: map[types.NamespacedName]map[Source]*group{}, of: map[types.NamespacedName]Place{}, limits: limits, now: time.Now}
}

// Seeded says whether set was seeded.
func (v *RollingSets) Seeded(set types.NamespacedName) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.sets[set] != nil
}

// Seed fills set with members, by Application name (in set's namespace), unless it was seeded
// meanwhile.
func (v *RollingSets) Seed(set types.NamespacedName, members map[string]Member) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.sets[set] != nil {
		return
	}
	v.sets[set] = map[Source]*group{}
	for name, m := range members {
		v.put(set, types.NamespacedName{Namespace: set.Namespace, Name: name}, m)
	}
}

// Drop forgets set: its ApplicationSet is gone, or no longer rolls out with RollingSync.
func (v *RollingSets) Drop(set types.NamespacedName) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, g := range v.sets[set] {
		for name := range g.members {
			delete(v.of, types.NamespacedName{Namespace: set.Namespace, Name: name})
		}
	}
	delete(v.sets, set)
}

// Put records app's facts in set, which must be seeded (a no-op otherwise: the seed reads them).
// When app moved from another place (its source changed), it returns that place: its leaving may
// free siblings there (see Freed).
func (v *RollingSets) Put(set types.NamespacedName, app types.NamespacedName, m Member) (left Place, moved bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.put(set, app, m)
}

func (v *RollingSets) put(set types.NamespacedName, app types.NamespacedName, m Member) (left Place, moved bool) {
	groups := v.sets[set]
	if groups == nil {
		return Place{}, false
	}
	place := Place{Set: set, Source: m.Source}
	if old := v.member(app); old != nil && v.of[app] == place {
		g := groups[m.Source]
		if old.Ahead != m.Ahead {
			g.count(old.Ahead, -1)
			g.count(m.Ahead, 1)
		}
		g.index(app.Name, old.Member, false)
		previous := old.Member
		old.Member = m
		g.index(app.Name, m, true)
		g.trust(app.Name, &previous, v.now())
		return Place{}, false
	}
	left, moved = v.forget(app)
	g := groups[m.Source]
	if g == nil {
		g = newGroup()
		groups[m.Source] = g
	}
	g.members[app.Name] = &member{Member: m, evaluated: g.gen}
	g.index(app.Name, m, true)
	g.count(m.Ahead, 1)
	g.trust(app.Name, nil, v.now())
	v.of[app] = place
	return left, moved
}

func (g *group) count(ahead string, delta int) {
	if ahead == "" {
		return
	}
	g.ahead[ahead] += delta
	if g.ahead[ahead] == 0 {
		delete(g.ahead, ahead)
	}
	g.gen++
}

// Forget removes app (deleted, no longer pulled, or without a work), and returns the place it
// left (see Freed).
func (v *RollingSets) Forget(app types.NamespacedName) (left Place, ok bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.forget(app)
}

func (v *RollingSets) forget(app types.NamespacedName) (left Place, ok bool) {
	place, ok := v.of[app]
	if !ok {
		return Place{}, false
	}
	delete(v.of, app)
	groups := v.sets[place.Set]
	g := groups[place.Source]
	if g == nil {
		return Place{}, false
	}
	g.count(g.members[app.Name].Ahead, -1)
	gone := g.members[app.Name].Member
	g.index(app.Name, gone, false)
	delete(g.members, app.Name)
	g.unconfirmed(gone.ClusterRevision, v.now())
	if len(g.members) == 0 {
		delete(groups, place.Source)
	}
	return place, true
}

// member is app's entry, nil when it has none.
func (v *RollingSets) member(app types.NamespacedName) *member {
	place, ok := v.of[app]
	if !ok {
		return nil
	}
	return v.sets[place.Set][place.Source].members[app.Name]
}

// Decision is what the barrier decides for one Application.
type Decision struct {
	// Behind is true when a sibling went ahead to a revision its cluster has not compared
	// against (Observed.Behind), and Ahead names that revision (Observed.AheadRevision).
	Behind bool
	Ahead  string
	// Rewrite names the siblings its cluster puts behind: they are written before it.
	Rewrite []string
	// Recheck names the siblings marked behind that the group's changes since their last write
	// freed: each one's own reconcile writes it, in any order (a sibling shown behind a little
	// longer never lets a step run early).
	Recheck []string
	// Gen is the group's generation the decision read (see Evaluated).
	Gen uint64
	// Until is when Ahead stops holding it, when only one cluster's word says so (see
	// BarrierLimits): its status is decided again then. Zero: not before a change.
	Until time.Time
}

// Decide decides the barrier for app, put in set before, whose cluster reports the revision
// revision ("" when none).
func (v *RollingSets) Decide(set types.NamespacedName, app types.NamespacedName, revision string) Decision {
	v.mu.Lock()
	defer v.mu.Unlock()
	own := v.member(app)
	if own == nil || v.of[app].Set != set {
		return Decision{}
	}
	g := v.sets[set][own.Source]
	now := v.now()
	d := Decision{Gen: g.gen}
	d.Ahead, d.Until = g.aheadOf(revision, now, v.limits)
	d.Behind = d.Ahead != ""
	// The siblings own puts behind (the hub shows them Synced) and those the group's changes freed
	// (marked behind: the hub shows them OutOfSync) are apart.
	if holds, _ := g.holds(own.Ahead, now, v.limits); own.Ahead != "" && holds {
		for revision, names := range g.synced {
			if revision == own.Ahead {
				continue
			}
			for name := range names {
				if name != app.Name && own.puts(g.members[name].Member) {
					d.Rewrite = append(d.Rewrite, name)
				}
			}
		}
	}
	for name := range g.behind {
		if name != app.Name && g.frees(g.members[name], now, v.limits) {
			d.Recheck = append(d.Recheck, name)
		}
	}
	return d
}

// aheadOf is a revision a member of g went ahead to other than revision that holds at now (see
// holds), "" when none: the least of them, so that the same fleet always names the same one; and
// until when it holds, when only its one reporter's word says so.
func (g *group) aheadOf(revision string, now time.Time, l BarrierLimits) (least string, until time.Time) {
	for ahead := range g.ahead {
		if revision != "" && ahead != revision && (least == "" || ahead < least) {
			if holds, u := g.holds(ahead, now, l); holds {
				least, until = ahead, u
			}
		}
	}
	return least, until
}

// Freed names the members of place marked behind that the group's changes since their last
// write freed, after a member left it (see Decision.Recheck).
func (v *RollingSets) Freed(place Place) (names []string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if g := v.sets[place.Set][place.Source]; g != nil {
		now := v.now()
		for name := range g.behind {
			if g.frees(g.members[name], now, v.limits) {
				names = append(names, name)
			}
		}
	}
	return names
}

// frees says whether m was marked behind before the group's last change, and the hub no longer
// shows it as the barrier decides it now: no member went ahead to a revision other than the one
// its cluster reports, or the revision it is shown behind (the least of those) changed. While
// one does, writing it again would only write what the hub shows (at 1,000 clusters, each change
// of a step's members had every reconcile rewrite the hundreds still behind).
func (g *group) frees(m *member, now time.Time, l BarrierLimits) bool {
	ahead, _ := g.aheadOf(m.ClusterRevision, now, l)
	return m.markedBehind() && m.evaluated < g.gen && ahead != m.HubRevision
}

// Admit says whether app's status, decided by d for its cluster's revision, may be written now,
// and if so records what the write will show (showing) before it is sent. It is called with the
// Application's status writes serialised (the status controller holds its patch lock), so that a
// decision is never written after a newer one of the same Application, nor left unseen by a
// sibling's decision made while it is sent:
//   - a decision another Application's change overturned since it was made (its group's ahead
//     revisions changed, and decide it otherwise) is refused: written late, it would undo the
//     write a sibling made meanwhile for that change (a cluster put behind would read Synced at the
//     old revision again, after its fleet read the new one);
//   - an admitted write is in the view before the apiserver has it: a sibling that goes ahead while
//     it is sent names it among the siblings to write first, and waits for it.
func (v *RollingSets) Admit(set types.NamespacedName, app types.NamespacedName, d Decision, revision string, showing Member) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	m := v.member(app)
	if m == nil || v.of[app].Set != set {
		return true
	}
	if m.Source != showing.Source {
		return false // it moved to another source since: decided for the old one
	}
	g := v.sets[set][m.Source]
	if ahead, _ := g.aheadOf(revision, v.now(), v.limits); g.gen != d.Gen && ahead != d.Ahead {
		return false
	}
	v.put(set, app, showing)
	return true
}

// Evaluated records that app's status was written (or found unchanged) by d, decided for its
// cluster's revision. It returns false when d no longer stands: its group changed meanwhile and
// decides app otherwise now. Then app must be decided again. Its group's changer may have passed
// it over (see Freed), reading what the hub showed before this write was recorded.
func (v *RollingSets) Evaluated(app types.NamespacedName, d Decision, revision string) (stands bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	m := v.member(app)
	if m == nil {
		return true
	}
	if d.Gen > m.evaluated {
		m.evaluated = d.Gen
	}
	g := v.sets[v.of[app].Set][m.Source]
	ahead, _ := g.aheadOf(revision, v.now(), v.limits)
	return g.gen == d.Gen || ahead == d.Ahead
}
