package dashboard

import (
	"cmp"
	"maps"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/report"
)

// Fleet holds what the hub's watches delivered and the page's entries computed from it. Entries
// are computed lazily: an event marks the Applications it touches, and the next snapshot or delta
// computes them once, however many events came meanwhile. Objects are kept as the informers hand
// them over and only read.
type Fleet struct {
	mu         sync.Mutex
	staleAfter time.Duration
	now        func() time.Time

	apps     map[string]*unstructured.Unstructured      // pull-model hub Applications by "<ns>/<name>"
	works    map[string]map[string]*workv1.ManifestWork // by hub Application, then cluster namespace
	clusters map[string]*clusterv1.ManagedCluster
	appSets  map[string]appSetState
	// byCluster and byAppSet index the Applications by their target cluster and ApplicationSet,
	// for events on a cluster or an ApplicationSet.
	byCluster map[string]map[string]bool
	byAppSet  map[string]map[string]bool

	entries map[string]Entry
	// changed is the fleet's version when an entry last changed: an event on an ApplicationSet
	// (a RollingSync rollout rewrites its status for every step) touches all its Applications, and
	// a page is sent only those whose entry changed since its last delta.
	changed map[string]uint64
	recheck map[string]time.Time // when an entry turns stale if nothing changes
	invalid map[string]bool      // entries to compute again
	version uint64
	subs    map[*subscriber]bool
}

type appSetState struct {
	view     AppSet
	rollouts map[string]rollout
}

// NewFleet returns an empty fleet. staleAfter is the controller's --stale-after (0: the default).
func NewFleet(staleAfter time.Duration) *Fleet {
	return &Fleet{
		staleAfter: staleAfter,
		now:        time.Now,
		apps:       map[string]*unstructured.Unstructured{},
		works:      map[string]map[string]*workv1.ManifestWork{},
		clusters:   map[string]*clusterv1.ManagedCluster{},
		appSets:    map[string]appSetState{},
		byCluster:  map[string]map[string]bool{},
		byAppSet:   map[string]map[string]bool{},
		entries:    map[string]Entry{},
		changed:    map[string]uint64{},
		recheck:    map[string]time.Time{},
		invalid:    map[string]bool{},
		subs:       map[*subscriber]bool{},
	}
}

// subscriber is one page's stream: what was touched since its last delta, and the fleet's version
// then.
type subscriber struct {
	entries, clusters, appSets map[string]bool
	sent                       uint64
	notify                     chan struct{}
}

func newSubscriber() *subscriber {
	return &subscriber{entries: map[string]bool{}, clusters: map[string]bool{}, appSets: map[string]bool{}, notify: make(chan struct{}, 1)}
}

// Snapshot is the whole fleet as the page first draws it.
type Snapshot struct {
	Version  uint64    `json:"version"`
	Clusters []Cluster `json:"clusters"`
	AppSets  []AppSet  `json:"appSets"`
	Entries  []Entry   `json:"entries"`
}

// Delta is what changed: current values, and the keys of what is gone.
type Delta struct {
	Version         uint64    `json:"version"`
	Clusters        []Cluster `json:"clusters,omitempty"`
	RemovedClusters []string  `json:"removedClusters,omitempty"`
	AppSets         []AppSet  `json:"appSets,omitempty"`
	RemovedAppSets  []string  `json:"removedAppSets,omitempty"`
	Entries         []Entry   `json:"entries,omitempty"`
	Removed         []string  `json:"removed,omitempty"`
}

// Empty says the delta carries nothing.
func (d Delta) Empty() bool {
	return len(d.Clusters)+len(d.RemovedClusters)+len(d.AppSets)+len(d.RemovedAppSets)+len(d.Entries)+len(d.Removed) == 0
}

// SetApplication records a hub Application; one that is not pull-model is forgotten.
func (f *Fleet) SetApplication(app *unstructured.Unstructured) {
	if _, pull, _ := report.NewMember(app); !pull {
		f.DeleteApplication(app.GetNamespace(), app.GetName())
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	key := app.GetNamespace() + "/" + app.GetName()
	f.unindex(key)
	f.apps[key] = app
	f.index(key)
	f.touch(key)
}

// DeleteApplication forgets a hub Application.
func (f *Fleet) DeleteApplication(namespace, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := namespace + "/" + name
	if _, ok := f.apps[key]; !ok {
		return
	}
	f.unindex(key)
	delete(f.apps, key)
	f.touch(key)
}

// SetWork records a ManifestWork argocd-pull wrote.
func (f *Fleet) SetWork(w *workv1.ManifestWork) {
	key, ok := workOwner(w)
	if !ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.works[key] == nil {
		f.works[key] = map[string]*workv1.ManifestWork{}
	}
	f.works[key][w.Namespace] = w
	f.touch(key)
}

// DeleteWork forgets a ManifestWork.
func (f *Fleet) DeleteWork(w *workv1.ManifestWork) {
	key, ok := workOwner(w)
	if !ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if cur, ok := f.works[key][w.Namespace]; ok && cur.Name == w.Name {
		delete(f.works[key], w.Namespace)
		if len(f.works[key]) == 0 {
			delete(f.works, key)
		}
		f.touch(key)
	}
}

// SetCluster records a ManagedCluster.
func (f *Fleet) SetCluster(c *clusterv1.ManagedCluster) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clusters[c.Name] = c
	f.touchCluster(c.Name)
}

// DeleteCluster forgets a ManagedCluster.
func (f *Fleet) DeleteCluster(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.clusters[name]; !ok {
		return
	}
	delete(f.clusters, name)
	f.touchCluster(name)
}

// SetApplicationSet records an ApplicationSet.
func (f *Fleet) SetApplicationSet(u *unstructured.Unstructured) {
	view, rollouts := appSetOf(u)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.appSets[view.Key] = appSetState{view: view, rollouts: rollouts}
	f.touchAppSet(view.Key)
}

// DeleteApplicationSet forgets an ApplicationSet.
func (f *Fleet) DeleteApplicationSet(namespace, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := namespace + "/" + name
	if _, ok := f.appSets[key]; !ok {
		return
	}
	delete(f.appSets, key)
	f.touchAppSet(key)
}

// Tick marks the entries whose cluster turned stale by now (the report's staleness depends on
// time, not only on events).
func (f *Fleet) Tick() {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	for key, at := range f.recheck {
		if !now.Before(at) {
			delete(f.recheck, key)
			f.touch(key)
		}
	}
}

// targetOf is the cluster and ApplicationSet an Application's entry sits in.
func targetOf(app *unstructured.Unstructured) (cluster, appSet string) {
	m, _, _ := report.NewMember(app)
	if name, ok := argocd.OwningApplicationSet(app); ok {
		appSet = app.GetNamespace() + "/" + name
	}
	return m.Cluster, appSet
}

func (f *Fleet) index(key string) {
	cluster, appSet := targetOf(f.apps[key])
	add(f.byCluster, cluster, key)
	add(f.byAppSet, appSet, key)
}

func (f *Fleet) unindex(key string) {
	app, ok := f.apps[key]
	if !ok {
		return
	}
	cluster, appSet := targetOf(app)
	remove(f.byCluster, cluster, key)
	remove(f.byAppSet, appSet, key)
}

func add(index map[string]map[string]bool, k, key string) {
	if index[k] == nil {
		index[k] = map[string]bool{}
	}
	index[k][key] = true
}

func remove(index map[string]map[string]bool, k, key string) {
	delete(index[k], key)
	if len(index[k]) == 0 {
		delete(index, k)
	}
}

// touch marks an entry to compute again and to send to every page.
func (f *Fleet) touch(key string) {
	f.invalid[key] = true
	f.notify(func(s *subscriber) map[string]bool { return s.entries }, key)
}

// touchCluster and touchAppSet mark a cluster or an ApplicationSet, and every entry in it.
func (f *Fleet) touchCluster(name string) {
	for key := range f.byCluster[name] {
		f.touch(key)
	}
	f.notify(func(s *subscriber) map[string]bool { return s.clusters }, name)
}

func (f *Fleet) touchAppSet(key string) {
	for app := range f.byAppSet[key] {
		f.touch(app)
	}
	f.notify(func(s *subscriber) map[string]bool { return s.appSets }, key)
}

// notify moves the fleet's version on and adds key to each page's set that pick names.
func (f *Fleet) notify(pick func(*subscriber) map[string]bool, key string) {
	f.version++
	for s := range f.subs {
		pick(s)[key] = true
		s.wake()
	}
}

func (s *subscriber) wake() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// entry is the current entry of a hub Application, computed again when invalid; false when the
// Application is gone.
func (f *Fleet) entry(key string) (Entry, bool) {
	if !f.invalid[key] {
		e, ok := f.entries[key]
		return e, ok
	}
	delete(f.invalid, key)
	d, ok := f.detail(key)
	if !ok {
		delete(f.entries, key)
		delete(f.changed, key)
		delete(f.recheck, key)
		return Entry{}, false
	}
	if old, had := f.entries[key]; !had || old != d.Entry {
		f.changed[key] = f.version
	}
	f.entries[key] = d.Entry
	return d.Entry, true
}

// detail builds an Application's entry and detail from the hub objects, with the report's own
// functions (report.NewMember, Member.Attach, report.Entry).
func (f *Fleet) detail(key string) (Detail, bool) {
	app, ok := f.apps[key]
	if !ok {
		return Detail{}, false
	}
	m, _, err := report.NewMember(app)
	if err == nil {
		m.Attach(f.works[key][m.Cluster], f.clusters[m.Cluster]) // nil when absent
	}
	now := f.now()
	cc, resources, recheck := report.Entry(m, report.Options{Now: now, StaleAfter: f.staleAfter, MaxConditions: maxConditions})
	if recheck.IsZero() {
		delete(f.recheck, key)
	} else {
		f.recheck[key] = recheck
	}
	_, appSet := targetOf(app)
	ro := f.appSets[appSet].rollouts[app.GetName()]
	d := Detail{
		Entry:          entryOf(key, appSet, cc, m.Paused != "", ro),
		StartedAt:      cc.OperationStateStartedAt,
		Conditions:     cc.Conditions,
		ResourcesTotal: len(resources),
		Resources:      resources[:min(len(resources), maxResources)],
		PausedMessage:  m.Paused,
		RolloutMessage: ro.Message,
	}
	if m.Work != nil {
		d.WorkNamespace, d.WorkName = m.Work.Namespace, m.Work.Name
	}
	return d, true
}

// Detail is what a cell opens for one hub Application, false when the fleet holds no such
// pull-model Application.
func (f *Fleet) Detail(key string) (Detail, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.detail(key)
}

// Snapshot returns the whole fleet, sorted.
func (f *Fleet) Snapshot() Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.snapshot()
}

func (f *Fleet) snapshot() Snapshot {
	s := Snapshot{Version: f.version, Clusters: make([]Cluster, 0, len(f.clusters)), AppSets: make([]AppSet, 0, len(f.appSets)), Entries: make([]Entry, 0, len(f.apps))}
	for _, name := range slices.Sorted(maps.Keys(f.clusters)) {
		s.Clusters = append(s.Clusters, clusterOf(f.clusters[name]))
	}
	for _, key := range slices.Sorted(maps.Keys(f.appSets)) {
		s.AppSets = append(s.AppSets, f.appSets[key].view)
	}
	for _, key := range slices.Sorted(maps.Keys(f.apps)) {
		if e, ok := f.entry(key); ok {
			s.Entries = append(s.Entries, e)
		}
	}
	return s
}

// Subscribe returns the snapshot a page starts from, and the stream of what changes after it;
// cancel ends the stream.
func (f *Fleet) Subscribe() (Snapshot, *Stream) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := newSubscriber()
	f.subs[s] = true
	snapshot := f.snapshot()
	s.sent = f.version
	return snapshot, &Stream{fleet: f, sub: s}
}

// Stream is one page's changes.
type Stream struct {
	fleet *Fleet
	sub   *subscriber
}

// Changed is signalled when a delta is waiting.
func (s *Stream) Changed() <-chan struct{} { return s.sub.notify }

// Next returns what changed since the snapshot or the previous delta.
func (s *Stream) Next() Delta {
	f := s.fleet
	f.mu.Lock()
	defer f.mu.Unlock()
	sub := s.sub
	d := Delta{Version: f.version}
	since := sub.sent
	sub.sent = f.version
	for _, name := range slices.Sorted(maps.Keys(sub.clusters)) {
		if c, ok := f.clusters[name]; ok {
			d.Clusters = append(d.Clusters, clusterOf(c))
		} else {
			d.RemovedClusters = append(d.RemovedClusters, name)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(sub.appSets)) {
		if a, ok := f.appSets[key]; ok {
			d.AppSets = append(d.AppSets, a.view)
		} else {
			d.RemovedAppSets = append(d.RemovedAppSets, key)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(sub.entries)) {
		switch e, ok := f.entry(key); {
		case !ok:
			d.Removed = append(d.Removed, key)
		case f.changed[key] > since:
			d.Entries = append(d.Entries, e)
		}
	}
	clear(sub.clusters)
	clear(sub.appSets)
	clear(sub.entries)
	return d
}

// Close ends the stream.
func (s *Stream) Close() {
	s.fleet.mu.Lock()
	defer s.fleet.mu.Unlock()
	delete(s.fleet.subs, s.sub)
}

// Counts is the size of the fleet held.
func (f *Fleet) Counts() (applications, works, clusters, appSets int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.works {
		works += len(w)
	}
	return len(f.apps), works, len(f.clusters), len(f.appSets)
}

func clusterOf(c *clusterv1.ManagedCluster) Cluster {
	out := Cluster{Name: c.Name, Labels: c.Labels, Available: "Unknown"}
	if cond := meta.FindStatusCondition(c.Status.Conditions, clusterv1.ManagedClusterConditionAvailable); cond != nil {
		out.Available = cmp.Or(string(cond.Status), "Unknown")
	}
	return out
}

// workOwner is "namespace/name" of the hub Application w points back to.
func workOwner(w *workv1.ManifestWork) (string, bool) {
	key, ok := manifestwork.HubApplicationOf(w)
	return key.String(), ok
}
