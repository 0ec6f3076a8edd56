package report

import (
	"cmp"
	"container/heap"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
)

// Tracker keeps the report of one ApplicationSet up to date one member at a time. A change of one
// cluster's Application, work or availability recomputes that member's entry alone (Put), and
// the report's sorted lists, summary counts and encoded size follow it without a pass over the
// other members; only Report, once per write, copies the lists out. Put in any order, the
// members give the report Build gives for them. A Tracker is not safe for concurrent use.
type Tracker struct {
	opts    Options
	entries map[string]*entry
	// order holds the entries sorted by (Cluster, App), the report's order.
	order []*entry
	// resources counts the entries listing each resource; resourceList is the sorted list of
	// those counted, and resourceBytes their encoded size (without commas).
	resources     map[v1alpha1.ResourceRef]int
	resourceList  []v1alpha1.ResourceRef
	resourceBytes int
	// entryBytes is the encoded size of the entries (without commas).
	entryBytes int
	counts     summaryCounts
	noFeed     int
	// trimmed holds the entries whose feedback was cut or ignored.
	trimmed map[string]*entry
	// rechecks orders the entries by when they turn stale (stale items are skipped when met).
	rechecks   recheckHeap
	generation uint64
}

// entry is one member's part of the report.
type entry struct {
	key       string
	cc        v1alpha1.ClusterCondition
	resources []v1alpha1.ResourceRef // sorted, each once
	recheck   time.Time
	fed       bool
	trimmed   []string
	size      int // encoded size of cc
}

// NewTracker returns an empty Tracker; opts.Now is ignored (each Put and Report says its time).
func NewTracker(opts Options) *Tracker {
	return &Tracker{
		opts:      opts.withDefaults(),
		entries:   map[string]*entry{},
		resources: map[v1alpha1.ResourceRef]int{},
		trimmed:   map[string]*entry{},
	}
}

// Key is the member's key in a Tracker: its hub Application's namespace/name.
func (m Member) Key() string { return m.AppNamespace + "/" + m.AppName }

// Len is the number of members tracked.
func (t *Tracker) Len() int { return len(t.entries) }

// Generation counts the changes of the report's content: it is unchanged when no Put or Delete
// since changed an entry.
func (t *Tracker) Generation() uint64 { return t.generation }

// Put sets the member's entry as it is at now, and says whether the report changed.
func (t *Tracker) Put(m Member, now time.Time) bool {
	opts := t.opts
	opts.Now = now
	cc, recheck, resources, fed, trimmed := member(m, opts)
	e := &entry{key: m.Key(), cc: cc, resources: uniqueResources(resources), recheck: recheck, fed: fed, trimmed: trimmed}
	old := t.entries[e.key]
	if !recheck.IsZero() && (old == nil || !old.recheck.Equal(recheck)) {
		t.pushRecheck(e.key, recheck)
	}
	if old != nil && old.fed == e.fed && reflect.DeepEqual(old.cc, e.cc) && slices.Equal(old.resources, e.resources) && slices.Equal(old.trimmed, e.trimmed) {
		old.recheck = recheck
		return false
	}
	e.size = encodedSize(e.cc)
	if old != nil {
		t.remove(old)
	}
	t.add(e)
	t.generation++
	return true
}

// Delete drops the member with this key, and says whether it was tracked.
func (t *Tracker) Delete(key string) bool {
	e, ok := t.entries[key]
	if !ok {
		return false
	}
	t.remove(e)
	t.generation++
	return true
}

// Due lists the members whose entry turns stale at or before now: the caller Puts them again.
func (t *Tracker) Due(now time.Time) []string {
	var keys []string
	for len(t.rechecks) > 0 {
		top := t.rechecks[0]
		if e, ok := t.entries[top.key]; !ok || !e.recheck.Equal(top.at) {
			heap.Pop(&t.rechecks)
			continue
		}
		if top.at.After(now) {
			break
		}
		heap.Pop(&t.rechecks)
		keys = append(keys, top.key)
	}
	return keys
}

// Report returns the report's statuses, bounded as Build bounds them, and the earliest time an
// entry turns stale (zero when none will). The lists are the caller's own.
func (t *Tracker) Report() (v1alpha1.AppConditions, time.Time) {
	out := t.assemble()
	if t.size(out) > t.opts.SizeBudget {
		bound(&out, t.opts.SizeBudget)
	}
	return out, t.NextRecheck()
}

// assemble returns the report before its size bound.
func (t *Tracker) assemble() v1alpha1.AppConditions {
	var out v1alpha1.AppConditions
	if len(t.order) > 0 {
		out.ClusterConditions = make([]v1alpha1.ClusterCondition, len(t.order))
		for i, e := range t.order {
			out.ClusterConditions[i] = e.cc
		}
	}
	out.Resources = slices.Clone(t.resourceList)
	out.Summary = t.counts.summary()
	if t.noFeed > 0 {
		out.Notes = append(out.Notes, noResourceFeedNote(t.noFeed, len(t.entries)))
	}
	if len(t.trimmed) > 0 {
		out.Notes = append(out.Notes, trimmedNote(t.trimmedByCluster(), len(t.entries)))
	}
	return out
}

// size is the encoded size of out, whose lists are the tracker's, from the sizes kept: the
// summary and notes are encoded, the entries and resources summed.
func (t *Tracker) size(out v1alpha1.AppConditions) int {
	n := encodedSize(v1alpha1.AppConditions{Summary: out.Summary, Notes: out.Notes})
	list := func(name string, items, bytes int) int {
		if items == 0 {
			return 0
		}
		// "name":[item,item],  (the summary always follows)
		return len(name) + 6 + bytes + items - 1
	}
	return n + list("clusterConditions", len(t.order), t.entryBytes) + list("resources", len(t.resourceList), t.resourceBytes)
}

// trimmedByCluster gathers what was cut of each cluster's feedback, in the report's order.
func (t *Tracker) trimmedByCluster() map[string][]string {
	list := make([]*entry, 0, len(t.trimmed))
	for _, e := range t.trimmed {
		list = append(list, e)
	}
	slices.SortFunc(list, compareEntries)
	out := map[string][]string{}
	for _, e := range list {
		for _, phrase := range e.trimmed {
			if !slices.Contains(out[e.cc.Cluster], phrase) {
				out[e.cc.Cluster] = append(out[e.cc.Cluster], phrase)
			}
		}
	}
	return out
}

func (t *Tracker) add(e *entry) {
	t.entries[e.key] = e
	i, _ := slices.BinarySearchFunc(t.order, e, compareEntries)
	t.order = slices.Insert(t.order, i, e)
	t.entryBytes += e.size
	t.counts.add(e.cc, 1)
	for _, r := range e.resources {
		if t.resources[r]++; t.resources[r] == 1 {
			j, _ := slices.BinarySearchFunc(t.resourceList, r, compareResources)
			t.resourceList = slices.Insert(t.resourceList, j, r)
			t.resourceBytes += encodedSize(r)
		}
	}
	if !e.fed {
		t.noFeed++
	}
	if len(e.trimmed) > 0 {
		t.trimmed[e.key] = e
	}
}

func (t *Tracker) remove(e *entry) {
	delete(t.entries, e.key)
	if i, found := slices.BinarySearchFunc(t.order, e, compareEntries); found {
		t.order = slices.Delete(t.order, i, i+1)
	}
	t.entryBytes -= e.size
	t.counts.add(e.cc, -1)
	for _, r := range e.resources {
		if t.resources[r]--; t.resources[r] == 0 {
			delete(t.resources, r)
			if j, found := slices.BinarySearchFunc(t.resourceList, r, compareResources); found {
				t.resourceList = slices.Delete(t.resourceList, j, j+1)
			}
			t.resourceBytes -= encodedSize(r)
		}
	}
	if !e.fed {
		t.noFeed--
	}
	delete(t.trimmed, e.key)
}

// pushRecheck records when the entry key turns stale. Items left behind by later Puts are
// dropped when the heap outgrows the entries.
func (t *Tracker) pushRecheck(key string, at time.Time) {
	if len(t.rechecks) > 2*len(t.entries)+64 {
		kept := t.rechecks[:0]
		for _, it := range t.rechecks {
			if e, ok := t.entries[it.key]; ok && e.recheck.Equal(it.at) {
				kept = append(kept, it)
			}
		}
		t.rechecks = kept
		heap.Init(&t.rechecks)
	}
	heap.Push(&t.rechecks, recheckItem{key: key, at: at})
}

// NextRecheck is the earliest time an entry turns stale, zero when none will.
func (t *Tracker) NextRecheck() time.Time {
	for len(t.rechecks) > 0 {
		top := t.rechecks[0]
		if e, ok := t.entries[top.key]; ok && e.recheck.Equal(top.at) {
			return top.at
		}
		heap.Pop(&t.rechecks)
	}
	return time.Time{}
}

// compareEntries orders entries as the report lists them: by cluster, then Application (which
// names the Application, so no two entries are equal).
func compareEntries(a, b *entry) int {
	return cmp.Or(cmp.Compare(a.cc.Cluster, b.cc.Cluster), cmp.Compare(a.cc.App, b.cc.App), cmp.Compare(a.key, b.key))
}

// compareResources orders resources as the report lists them.
func compareResources(a, b v1alpha1.ResourceRef) int {
	return cmp.Or(cmp.Compare(resourceKey(a), resourceKey(b)), cmp.Compare(a.APIVersion, b.APIVersion), cmp.Compare(a.Kind, b.Kind),
		cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// uniqueResources sorts a member's resources and lists each once.
func uniqueResources(list []v1alpha1.ResourceRef) []v1alpha1.ResourceRef {
	if len(list) == 0 {
		return nil
	}
	list = slices.Clone(list)
	slices.SortFunc(list, compareResources)
	return slices.Compact(list)
}

func encodedSize(v any) int {
	data, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return len(data)
}

// summaryCounts are the summary's counts (see Summarize).
type summaryCounts struct{ clusters, healthy, inProgress, notHealthy, synced, notSynced int }

func (c *summaryCounts) add(cc v1alpha1.ClusterCondition, n int) {
	c.clusters += n
	switch cc.HealthStatus {
	case argocd.HealthHealthy:
		c.healthy += n
	case argocd.HealthProgressing:
		c.inProgress += n
		c.notHealthy += n
	default:
		c.notHealthy += n
	}
	if cc.SyncStatus == argocd.SyncSynced {
		c.synced += n
	} else {
		c.notSynced += n
	}
}

func (c summaryCounts) summary() v1alpha1.ReportSummary {
	return v1alpha1.ReportSummary{
		Clusters:   strconv.Itoa(c.clusters),
		Healthy:    strconv.Itoa(c.healthy),
		InProgress: strconv.Itoa(c.inProgress),
		NotHealthy: strconv.Itoa(c.notHealthy),
		NotSynced:  strconv.Itoa(c.notSynced),
		Synced:     strconv.Itoa(c.synced),
	}
}

type recheckItem struct {
	key string
	at  time.Time
}

type recheckHeap []recheckItem

func (h recheckHeap) Len() int           { return len(h) }
func (h recheckHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h recheckHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *recheckHeap) Push(x any)        { *h = append(*h, x.(recheckItem)) }
func (h *recheckHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}
