// The rollout scenarios' observer: when each hub Application was asked to sync a revision and
// showed it done, when each simulated cluster started and finished it, and the figures of one
// rollout computed from those times.

package main

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/report"
	"github.com/argocd-pull/argocd-pull/internal/test/simagent"
	"github.com/argocd-pull/argocd-pull/test/bench/benchresults"
)

// stepLabel is the label the rollout ApplicationSets' template gives each Application: its
// RollingSync step, from 0.
const stepLabel = "rollout-step"

// observed is what happened to one Application, by the commit (resolved revision) concerned.
type observed struct {
	name      string
	appSet    string
	step      int
	created   time.Time // the hub Application first seen
	onCluster time.Time // the simulated cluster first held it
	requested map[string]time.Time
	started   map[string]time.Time
	finished  map[string]time.Time
	failed    map[string]time.Time
	done      map[string]time.Time
	// syncs counts, by commit, the syncs its cluster started (runs is the count seen so far).
	syncs map[string]int
	runs  int
	// automated: the hub Application last seen had an automated sync policy.
	automated bool
	// operation is the hub Application's .operation last seen (JSON), "" when none: a request is
	// new when it appears or changes, and counts for the commit the hub compared with then.
	operation string
}

type rolloutObserver struct {
	mu   sync.Mutex
	apps map[string]*observed // by hub Application name
	// reports are, per ApplicationSet, the times its report showed every cluster at a commit.
	reports map[string]map[string]time.Time
}

func newRolloutObserver() *rolloutObserver {
	return &rolloutObserver{apps: map[string]*observed{}, reports: map[string]map[string]time.Time{}}
}

func (o *rolloutObserver) app(name string) *observed {
	a := o.apps[name]
	if a == nil {
		a = &observed{name: name, step: -1, requested: map[string]time.Time{}, started: map[string]time.Time{}, finished: map[string]time.Time{},
			failed: map[string]time.Time{}, done: map[string]time.Time{}, syncs: map[string]int{}}
		o.apps[name] = a
	}
	return a
}

func first(m map[string]time.Time, key string, at time.Time) {
	if _, ok := m[key]; !ok && key != "" {
		m[key] = at
	}
}

// hubEvent takes an added or updated hub Application.
func (o *rolloutObserver) hubEvent(app *unstructured.Unstructured) {
	now := time.Now()
	revision, _, _ := unstructured.NestedString(app.Object, "status", "sync", "revision")
	sync, _, _ := unstructured.NestedString(app.Object, "status", "sync", "status")
	health, _, _ := unstructured.NestedString(app.Object, "status", "health", "status")
	phase, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "phase")
	automated := argocd.AutomatedSync(app)
	operation := ""
	if op, ok := app.Object["operation"]; ok && op != nil {
		raw, _ := json.Marshal(op)
		operation = string(raw)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	a := o.app(app.GetName())
	if a.created.IsZero() {
		a.created = now
		for _, ref := range app.GetOwnerReferences() {
			a.appSet = ref.Name
		}
		if step, err := strconv.Atoi(app.GetLabels()[stepLabel]); err == nil {
			a.step = step
		}
	}
	if operation != "" && operation != a.operation {
		first(a.requested, revision, now)
	}
	a.operation = operation
	a.automated = automated
	switch {
	case sync == "Synced" && health == "Healthy" && phase == "Succeeded":
		first(a.done, revision, now)
	case phase == "Failed":
		first(a.failed, revision, now)
	}
}

// simEvent takes a simulated cluster's Application after it changed.
func (o *rolloutObserver) simEvent(_ types.NamespacedName, app *simagent.App, now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	a := o.app(app.Name())
	if a.onCluster.IsZero() {
		a.onCluster = now
	}
	if revision, ok := app.Syncing(); ok {
		first(a.started, revision, now)
		if runs := app.Runs(); runs > a.runs {
			a.syncs[revision] += runs - a.runs
			a.runs = runs
		}
	}
	first(a.finished, app.Deployed(), now)
}

// reportEvent takes an added or updated report: the first time it shows every cluster Synced and
// Healthy at one commit is recorded.
func (o *rolloutObserver) reportEvent(r *v1alpha1.MulticlusterApplicationSetReport) {
	now := time.Now()
	total, err := strconv.Atoi(r.Statuses.Summary.Clusters)
	if err != nil || total == 0 {
		return
	}
	revisions := map[string]int{}
	for _, cc := range r.Statuses.ClusterConditions {
		if cc.SyncStatus == "Synced" && cc.HealthStatus == "Healthy" {
			revisions[cc.SyncRevision]++
		}
	}
	if len(revisions) != 1 || r.Statuses.Summary.NotSynced != "0" || r.Statuses.Summary.NotHealthy != "0" {
		return
	}
	for revision, listed := range revisions {
		// A large report lists no Synced and Healthy cluster (report.UnlistedAreHealthy); it
		// shows a commit only through the clusters it lists.
		if listed != total && !report.UnlistedAreHealthy(r.Statuses.Notes) {
			return
		}
		o.mu.Lock()
		if o.reports[r.Name] == nil {
			o.reports[r.Name] = map[string]time.Time{}
		}
		first(o.reports[r.Name], revision, now)
		o.mu.Unlock()
	}
}

// snapshot copies what was observed of the Applications of the given ApplicationSets.
func (o *rolloutObserver) snapshot(appSets ...string) []observed {
	var out []observed
	o.each(appSets, func(a *observed) {
		c := *a
		c.syncs = maps.Clone(a.syncs)
		c.requested, c.started, c.finished = maps.Clone(a.requested), maps.Clone(a.started), maps.Clone(a.finished)
		c.failed, c.done = maps.Clone(a.failed), maps.Clone(a.done)
		out = append(out, c)
	})
	return out
}

// each calls f, under the observer's lock, with what was observed of each Application of the
// given ApplicationSets: the waits that poll it copy nothing.
func (o *rolloutObserver) each(appSets []string, f func(a *observed)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, a := range o.apps {
		if slices.Contains(appSets, a.appSet) {
			f(a)
		}
	}
}

// reportAt is when the report of appSet first showed every cluster at revision.
func (o *rolloutObserver) reportAt(appSet, revision string) (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	at, ok := o.reports[appSet][revision]
	return at, ok
}

// rolloutFigures computes one rollout's figures from what was observed of its Applications:
// revision committed at commit, RollingSync steps (1 without RollingSync: every Application in one
// step, step labels ignored), each sync lasting syncFor. Several ApplicationSets roll out on their
// own: a step's length and an Application's request lag are measured within its ApplicationSet,
// and the Steps list, per step, the last ApplicationSet to finish it.
func rolloutFigures(apps []observed, commit time.Time, revision string, steps int, syncFor time.Duration) benchresults.Rollout {
	type setStep struct {
		set  string
		step int
	}
	r := benchresults.Rollout{Applications: len(apps), Complete: len(apps) > 0, AgentsSeconds: float64(steps) * syncFor.Seconds()}
	stepOf := func(a observed) int {
		if steps == 1 {
			return 0
		}
		return a.step
	}
	sets := map[string]bool{}
	done := map[setStep]time.Time{} // when each ApplicationSet's step was done
	counts := make([]int, steps)
	var last time.Time
	for _, a := range apps {
		sets[a.appSet] = true
		s := stepOf(a)
		at, ok := a.done[revision]
		if !ok || s < 0 || s >= steps {
			r.Complete = false
			continue
		}
		counts[s]++
		k := setStep{a.appSet, s}
		if at.After(done[k]) {
			done[k] = at
		}
		if at.After(last) {
			last = at
		}
	}
	r.ApplicationSets = len(sets)
	if !last.IsZero() {
		r.Seconds = last.Sub(commit).Seconds()
	}
	if r.AgentsSeconds > 0 {
		r.Ratio = r.Seconds / r.AgentsSeconds
	}
	// previous is when the step before s of set was done: the commit for the first step.
	previous := func(set string, s int) time.Time {
		for s--; s >= 0; s-- {
			if at := done[setStep{set, s}]; !at.IsZero() {
				return at
			}
		}
		return commit
	}
	var added []time.Duration
	for s := range steps {
		var step benchresults.Step
		found := false
		for set := range sets {
			at := done[setStep{set, s}]
			if at.IsZero() {
				continue
			}
			found = true
			length := at.Sub(previous(set, s))
			added = append(added, length-syncFor)
			step.DoneSeconds = max(step.DoneSeconds, at.Sub(commit).Seconds())
			step.Seconds = max(step.Seconds, length.Seconds())
		}
		if found {
			step.Step, step.Applications, step.HubAdded = s, counts[s], step.Seconds-syncFor.Seconds()
			r.Steps = append(r.Steps, step)
		}
	}
	var lag, delivery, status []time.Duration
	syncs := 0
	for _, a := range apps {
		syncs += a.syncs[revision]
		s := stepOf(a)
		if s < 0 || s >= steps {
			continue
		}
		requested, asked := a.requested[revision]
		started, began := a.started[revision]
		if asked {
			lag = append(lag, requested.Sub(previous(a.appSet, s)))
		}
		switch {
		case asked && began:
			delivery = append(delivery, started.Sub(requested))
		case began && steps == 1:
			delivery = append(delivery, started.Sub(commit)) // the Application's own automated sync
		}
		finished, ended := a.finished[revision]
		if at, ok := a.done[revision]; ok && ended {
			status = append(status, at.Sub(finished))
		}
	}
	if len(apps) > 0 {
		r.SyncsPerApplication = float64(syncs) / float64(len(apps))
	}
	r.HubAddedPerStep, r.RequestLag, r.Delivery, r.Status = sorted(added), sorted(lag), sorted(delivery), sorted(status)
	return r
}

func sorted(d []time.Duration) benchresults.Percentiles {
	slices.Sort(d)
	return summarize(d)
}

// checkOrder counts, for a RollingSync rollout of commit, the Applications whose sync was
// requested before every Application of the previous step was done at commit, and those the hub
// showed done at commit before their cluster had finished syncing it.
func checkOrder(apps []observed, commit string, steps int) (outOfOrder, doneWithoutSync int) {
	stepDone := make([]time.Time, steps)
	for _, a := range apps {
		if done, ok := a.done[commit]; ok && a.step >= 0 && a.step < steps && done.After(stepDone[a.step]) {
			stepDone[a.step] = done
		}
	}
	for _, a := range apps {
		if requested, ok := a.requested[commit]; ok && a.step > 0 && a.step < steps && requested.Before(stepDone[a.step-1]) {
			outOfOrder++
		}
		done, isDone := a.done[commit]
		finished, synced := a.finished[commit]
		if isDone && (!synced || done.Before(finished)) {
			doneWithoutSync++
		}
	}
	return outOfOrder, doneWithoutSync
}
