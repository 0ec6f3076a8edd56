package appstatus

import "time"

// What one cluster's word alone may make the RollingSync barrier do (see Member): a managed
// cluster writes its works' status, so the revision it reports it went ahead to is whatever it
// likes. A revision two clusters report holds the fleet; one only its own cluster reports holds
// the siblings for that cluster's window only (BarrierLimits).

// Defaults of BarrierLimits.
const (
	DefaultUnconfirmedHold    = 5 * time.Minute
	DefaultUnconfirmedChanges = 3
)

// BarrierLimits bound what one cluster's reports alone can make the barrier do. A managed cluster
// writes its works' status, and so whatever revision it likes as the one it went ahead to.
type BarrierLimits struct {
	// UnconfirmedHold is how long a cluster may hold its siblings behind revisions no other
	// cluster reports, from the first such report, until one of the revisions it reported first is
	// reported by another cluster. Above the managed Argo CDs' reconciliation period (180 s by
	// default, plus its jitter): a real commit one cluster found first is found by the others, or
	// synced there by their step, within it.
	UnconfirmedHold time.Duration
	// UnconfirmedChanges is how many times, in that window, it may go ahead to another revision no
	// other cluster reports: each change writes every sibling it holds.
	UnconfirmedChanges int
}

// unconfirmed starts the window of the members of the one cluster left reporting revision, once a
// member stopped reporting it, when they went ahead to it: the revision is that cluster's word
// alone again.
func (g *group) unconfirmed(revision string, now time.Time) {
	if names := g.reported[revision]; len(names) > 0 && !g.confirmed(revision) {
		for name := range names {
			if m := g.members[name]; m.Ahead == revision && m.unconfirmedSince.IsZero() {
				m.unconfirmedSince = now
				g.gen++
			}
		}
	}
}

// confirmed says whether two clusters or more report revision: no one cluster's word alone. Two
// Applications of the set on one cluster are that one cluster's word.
func (g *group) confirmed(revision string) bool {
	first := ""
	for name := range g.reported[revision] {
		c := g.members[name].clusterID(name)
		if first == "" {
			first = c
		} else if c != first {
			return true
		}
	}
	return false
}

// clusterID names the cluster of the member name: its Cluster, or the member itself when unknown.
func (m *member) clusterID(name string) string {
	if m != nil && m.Cluster != "" {
		return "cluster/" + m.Cluster
	}
	return "member/" + name
}

// holds says whether the revision members went ahead to may put siblings behind at now, and until
// when when only its one reporter's word says so (zero: for as long as it is reported). A
// revision two clusters report holds. One only the member that went ahead to it reports holds
// within that member's window (see BarrierLimits): from its first report of a revision no other
// cluster reported, until one it reported first is reported by another cluster, and for at most
// UnconfirmedChanges changes of such revisions.
func (g *group) holds(revision string, now time.Time, l BarrierLimits) (bool, time.Time) {
	if g.confirmed(revision) {
		return true, time.Time{}
	}
	for name := range g.reported[revision] {
		m := g.members[name]
		if m.Ahead != revision || m.unconfirmedChanges > l.UnconfirmedChanges {
			return false, time.Time{}
		}
		if m.unconfirmedSince.IsZero() {
			return true, now.Add(l.UnconfirmedHold) // a window not started yet starts at its next put
		}
		until := m.unconfirmedSince.Add(l.UnconfirmedHold)
		return now.Before(until), until
	}
	return false, time.Time{}
}

// trust updates the windows after m, the member name, was put at now: a member going ahead to a
// revision no other cluster reports starts its window, or counts a change in it; a revision it
// reported first and another cluster now reports too closes its window (it was right). A window
// that opens or closes changes what the group decides: gen moves on.
//
// Only a cluster that moves to a revision confirms its first reporter: a cluster that reported
// first the revision its whole fleet has, and reports it again between forged ones, is not made
// right again by its siblings' writes.
func (g *group) trust(name string, old *Member, now time.Time) {
	m := g.members[name]
	if r := m.ClusterRevision; (old == nil || old.ClusterRevision != r) && g.first[r] != name && g.confirmed(r) {
		if f := g.members[g.first[r]]; f != nil && f.ClusterRevision == r && !f.unconfirmedSince.IsZero() {
			f.unconfirmedSince, f.unconfirmedChanges = time.Time{}, 0
			g.gen++
		}
	}
	if old != nil && old.ClusterRevision != m.ClusterRevision {
		g.unconfirmed(old.ClusterRevision, now)
	}
	if m.Ahead == "" || g.confirmed(m.Ahead) {
		return
	}
	switch {
	case m.unconfirmedSince.IsZero():
		m.unconfirmedSince = now
		g.gen++
	case old != nil && old.Ahead != m.Ahead:
		m.unconfirmedChanges++
		g.gen++
	}
}
