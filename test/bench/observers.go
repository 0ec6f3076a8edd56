// The observers: when each change arrives at the hub Application and at the report, and what the
// reports and Applications look like.

package main

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
	"github.com/argocd-pull/argocd-pull/internal/report"
)

// appEvent takes an updated hub Application: a pending change whose revision it shows has arrived.
func (a *agents) appEvent(app *unstructured.Unstructured) {
	rev, _, _ := unstructured.NestedString(app.Object, "status", "sync", "revision")
	ann := app.GetAnnotations()
	owner := ""
	for _, ref := range app.GetOwnerReferences() {
		owner = ref.Name
	}
	raw, _ := json.Marshal(app.Object)
	size := len(raw)
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	key := owner + "/" + ann[api.ClusterAnnotation]
	a.appSize[key] = size
	if _, seen := a.delivered[key]; !seen && rev == initialRevision {
		a.delivered[key] = now
	}
	if ch, ok := a.pending[key]; ok && !ch.app && ch.revision == rev {
		ch.app = true
		a.appLatency = append(a.appLatency, now.Sub(ch.written))
		a.pending[key] = ch
	}
}

// reportEvent takes an added or updated report: pending changes it shows have arrived, and
// clusters at the initial revision are counted.
func (a *agents) reportEvent(r *v1alpha1.MulticlusterApplicationSetReport, size int) {
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reportSize[r.Name] = size
	a.reportNotes[r.Name] = r.Statuses.Notes
	initial := 0
	listed := make(map[string]bool, len(r.Statuses.ClusterConditions))
	a.reportListed[r.Name] = listed
	arrived := func(key string) {
		if ch, ok := a.pending[key]; ok && !ch.report {
			ch.report = true
			a.repLatency = append(a.repLatency, now.Sub(ch.written))
			a.pending[key] = ch
		}
	}
	for _, cc := range r.Statuses.ClusterConditions {
		if cc.SyncRevision == initialRevision {
			initial++
		}
		key := r.Name + "/" + cc.Cluster
		listed[cc.Cluster] = true
		if ch, ok := a.pending[key]; ok && ch.revision == cc.SyncRevision {
			arrived(key)
		}
	}
	if report.UnlistedAreHealthy(r.Statuses.Notes) {
		// A large report leaves Synced and Healthy clusters out of its list (5,000 clusters do not
		// fit its budget): a changed cluster (Healthy, Synced) it no longer lists has arrived.
		for key := range a.pending {
			if cluster, ok := strings.CutPrefix(key, r.Name+"/"); ok && !listed[cluster] {
				arrived(key)
			}
		}
		// The count is read before the first change, when the initial revision is the only one
		// a cluster can be Synced and Healthy at: the clusters left out are there too. (Without
		// this, a 5,000-cluster report never counted as complete.)
		if total, err := strconv.Atoi(r.Statuses.Summary.Clusters); err == nil && total > len(listed) {
			initial += total - len(listed)
		}
	}
	a.reported[r.Name] = initial
}

// reportsAtInitial is how many reports list every cluster at the initial revision.
func (a *agents) reportsAtInitial(clusters int) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, c := range a.reported {
		if c == clusters {
			n++
		}
	}
	return n
}

// unsettled counts the Applications whose last change has not yet arrived at the hub
// Application or at the report.
func (a *agents) unsettled() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, ch := range a.pending {
		if !ch.app || !ch.report {
			n++
		}
	}
	return n
}

// resetLatencies forgets the changes measured so far, so that a phase measures its own.
func (a *agents) resetLatencies() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.appLatency, a.repLatency, a.pending = nil, nil, map[string]change{}
}

// untimed is how many changes could not be timed at the report (see unobservable).
func (a *agents) untimed() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.unobservable
}

// latencies returns copies of the measured latencies, sorted.
func (a *agents) latencies() (app, report []time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	app, report = slices.Clone(a.appLatency), slices.Clone(a.repLatency)
	slices.Sort(app)
	slices.Sort(report)
	return app, report
}

// appSizes are the p50 and largest sizes (JSON) of the hub Applications' last versions.
func (a *agents) appSizes() (p50, largest int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	sizes := slices.Collect(maps.Values(a.appSize))
	if len(sizes) == 0 {
		return 0, 0
	}
	slices.Sort(sizes)
	return sizes[len(sizes)/2], sizes[len(sizes)-1]
}

func (a *agents) largestReport() (size int, notes []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	name := ""
	for n, s := range a.reportSize {
		if s > size {
			name, size = n, s
		}
	}
	return size, a.reportNotes[name]
}

// summarize gives the percentiles of sorted latencies.
func summarize(sorted []time.Duration) percentiles {
	if len(sorted) == 0 {
		return percentiles{}
	}
	at := func(p float64) float64 {
		return float64(sorted[int(p*float64(len(sorted)-1))].Microseconds()) / 1000
	}
	return percentiles{Count: len(sorted), P50ms: at(0.5), P90ms: at(0.9), P99ms: at(0.99), MaxMs: at(1)}
}

// firstDeliveries are, for every Application whose hub Application showed its cluster's first
// answer, how long after since that was: the time to first delivery of each, sorted.
func (a *agents) firstDeliveries(since time.Time) []time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]time.Duration, 0, len(a.delivered))
	for _, at := range a.delivered {
		out = append(out, at.Sub(since))
	}
	slices.Sort(out)
	return out
}
