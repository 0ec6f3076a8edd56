package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/report"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

// initialRevision is what every simulated cluster first reports.
const initialRevision = "r0"

// agents stands in for the work agents of every cluster, on the hub side: it marks each new
// ManifestWork Applied and Available and writes the Application's status feedback as the OCM work
// agent does, then changes that feedback on request. It also watches the hub Applications and the
// reports, to time when each change arrives there.
type agents struct {
	c       client.Client
	workers int

	mu          sync.Mutex
	works       map[types.NamespacedName]bool // seen
	firstWork   time.Time
	lastWork    time.Time
	pending     map[string]change // by "<appset>/<cluster>"
	appLatency  []time.Duration
	repLatency  []time.Duration
	reported    map[string]int       // report name -> clusters at initialRevision
	reportSize  map[string]int       // report name -> bytes of its last version
	appSize     map[string]int       // "<appset>/<cluster>" -> bytes of its hub Application's last version
	delivered   map[string]time.Time // "<appset>/<cluster>" -> when its hub Application first showed the initial revision
	reportNotes map[string][]string  // report name -> the notes of its last version
	// reportListed is, per report name, the clusters its last version lists, and its notes say
	// whether the others are Synced and Healthy (report.UnlistedAreHealthy).
	reportListed map[string]map[string]bool
	// unobservable counts the changes made to a cluster its report did not list at the time
	// (already Synced and Healthy in a report too large to list them): their arrival at the report
	// cannot be seen, and is not timed.
	unobservable int

	queue chan types.NamespacedName

	// What every managed cluster's Argo CD does with nothing to do: it reconciles each Application
	// every resync period (plus up to jitter) and sets .status.reconciledAt; the work agent copies
	// that to the hub when the work asks for it in its feedback. resync 0 turns this off.
	resync, jitter time.Duration
	state          map[types.NamespacedName]*workState
	writes         atomic.Int64 // status writes by the agents
	// Under mu: answered are the controller's works answered once, and lastAnswer when the last of
	// them was first answered; directAnswered counts the works of the direct-create baseline
	// answered (they are only answered once, and neither counted as propagated nor reconciled),
	// and directLastAnswer is when the last of them was.
	answered                     map[types.NamespacedName]bool
	directAnswered               int
	lastAnswer, directLastAnswer time.Time
}

// workState is what the agent of one work last wrote, and when its Argo CD reconciles next.
type workState struct {
	appNs, appName string
	generation     int64
	values         map[string]string
	asksReconciled bool // the work's feedback rules include reconciledAt
	next           time.Time
	deployments    int // changes made: the deployments its status.history lists
}

type change struct {
	revision string
	written  time.Time
	app      bool // arrived at the hub Application
	report   bool // arrived at the report
}

func newAgents(c client.Client, workers int, resync, jitter time.Duration) *agents {
	return &agents{c: c, workers: workers, works: map[types.NamespacedName]bool{}, pending: map[string]change{},
		reported: map[string]int{}, reportSize: map[string]int{}, appSize: map[string]int{}, delivered: map[string]time.Time{}, reportNotes: map[string][]string{}, reportListed: map[string]map[string]bool{}, queue: make(chan types.NamespacedName, 1<<16),
		resync: resync, jitter: jitter, state: map[types.NamespacedName]*workState{}, answered: map[types.NamespacedName]bool{}}
}

// nextReconcile is when an Argo CD reconciling on resync with jitter looks at an Application again.
func (a *agents) nextReconcile(from time.Time) time.Time {
	next := from.Add(a.resync)
	if a.jitter > 0 {
		next = next.Add(time.Duration(rand.Int64N(int64(a.jitter))))
	}
	return next
}

// reconcileLoop writes, for every work whose Argo CD reconciliation is due and that asks for
// reconciledAt, the same feedback with a new reconciledAt, as a real fleet at rest does.
func (a *agents) reconcileLoop(ctx context.Context) {
	if a.resync <= 0 {
		return
	}
	due := make(chan types.NamespacedName, 1<<16)
	for range a.workers {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case key := <-due:
					if err := a.reconciled(ctx, key); err != nil && ctx.Err() == nil && !apierrors.IsNotFound(err) {
						fmt.Fprintf(os.Stderr, "simulated reconcile of %s: %v\n", key, err)
					}
				}
			}
		}()
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			var keys []types.NamespacedName
			a.mu.Lock()
			for key, st := range a.state {
				if st.values != nil && !st.next.IsZero() && now.After(st.next) {
					st.next = a.nextReconcile(now)
					if st.asksReconciled {
						keys = append(keys, key)
					}
				}
			}
			a.mu.Unlock()
			for _, k := range keys {
				due <- k
			}
		}
	}
}

// reconciled writes the work's last feedback with reconciledAt now, by one status patch (what the
// work agent sends), without reading the work first.
func (a *agents) reconciled(ctx context.Context, key types.NamespacedName) error {
	a.mu.Lock()
	st := a.state[key]
	if st == nil {
		a.mu.Unlock()
		return nil
	}
	values := maps.Clone(st.values)
	values[manifestwork.FeedbackReconciledAt] = time.Now().UTC().Format(time.RFC3339)
	st.values = values
	ns, name, gen := st.appNs, st.appName, st.generation
	a.mu.Unlock()
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	testenv.SetAgentStatus(w, gen, ns, name, values)
	patch, err := json.Marshal(map[string]any{"status": w.Status})
	if err != nil {
		return err
	}
	a.writes.Add(1)
	return a.c.Status().Patch(ctx, w, client.RawPatch(types.MergePatchType, patch))
}

// workEvent takes an added or updated ManifestWork: a new one, or one whose generation the
// agent has not applied yet, is queued for its status.
func (a *agents) workEvent(w *workv1.ManifestWork) {
	key := types.NamespacedName{Namespace: w.Namespace, Name: w.Name}
	if manifestwork.IsProbe(w) {
		// A claim probe: answered, not counted as a work.
		if !manifestwork.ProbeCurrent(w) || len(w.Status.ResourceStatus.Manifests) != len(w.Spec.Workload.Manifests) {
			a.queue <- key
		}
		return
	}
	if w.Labels[directLabel] == "true" {
		if w.Labels[api.ManagedByLabel] != api.ManagedByValue {
			return // the baseline without agents: nobody answers
		}
		if meta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied) == nil {
			a.queue <- key
		}
		return
	}
	a.mu.Lock()
	if !a.works[key] {
		a.works[key] = true
		now := time.Now()
		if a.firstWork.IsZero() {
			a.firstWork = now
		}
		a.lastWork = now
	}
	a.mu.Unlock()
	a.mu.Lock()
	st := a.state[key]
	if st == nil {
		st = &workState{}
		a.state[key] = st
	}
	st.asksReconciled = manifestwork.AsksReconciledAt(w)
	a.mu.Unlock()
	if applied := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied); applied == nil || applied.ObservedGeneration != w.Generation {
		a.queue <- key
	}
}

func (a *agents) workCount() (n int, first, last time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.works), a.firstWork, a.lastWork
}

// run applies queued works until ctx ends.
func (a *agents) run(ctx context.Context) {
	for range a.workers {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case key := <-a.queue:
					if err := a.apply(ctx, key); err != nil && ctx.Err() == nil {
						a.queue <- key // retried, as the agent would
					}
				}
			}
		}()
	}
}

// apply reports a work Applied with the initial feedback, or answers a claim probe: the simulated
// clusters have no Application but those their works made.
func (a *agents) apply(ctx context.Context, key types.NamespacedName) error {
	if key.Name == manifestwork.ProbeName {
		w := &workv1.ManifestWork{}
		if err := a.c.Get(ctx, key, w); err != nil {
			return client.IgnoreNotFound(err)
		}
		if !manifestwork.IsProbe(w) {
			return nil
		}
		testenv.AnswerProbe(w, nil)
		a.writes.Add(1)
		return client.IgnoreNotFound(a.c.Status().Update(ctx, w))
	}
	return a.writeStatus(ctx, key, initialFeedback())
}

// initialFeedback is what an agent first reports of a delivered Application.
func initialFeedback() map[string]string {
	return map[string]string{
		manifestwork.FeedbackHealth: "Progressing", manifestwork.FeedbackSync: "OutOfSync", manifestwork.FeedbackRevision: initialRevision,
		manifestwork.FeedbackPhase: "Running", manifestwork.FeedbackStartedAt: "2026-01-01T00:00:00Z",
		manifestwork.FeedbackResources: sampleResources, manifestwork.FeedbackConditions: "[]"}
}

// sampleResources is the .status.resources a managed Argo CD reports for a small app (a
// Deployment, a Service, a ConfigMap, a ServiceAccount, a Role and its binding), 700 bytes: close
// to what fits the work agent's JsonRaw limit (1024 bytes), beyond which the real agent drops it.
const sampleResources = `[{"version":"v1","kind":"ServiceAccount","namespace":"guestbook","name":"guestbook-ui","status":"Synced"},` +
	`{"version":"v1","kind":"ConfigMap","namespace":"guestbook","name":"guestbook-ui-config","status":"Synced"},` +
	`{"group":"rbac.authorization.k8s.io","version":"v1","kind":"Role","namespace":"guestbook","name":"guestbook-ui","status":"Synced"},` +
	`{"group":"rbac.authorization.k8s.io","version":"v1","kind":"RoleBinding","namespace":"guestbook","name":"guestbook-ui","status":"Synced"},` +
	`{"version":"v1","kind":"Service","namespace":"guestbook","name":"guestbook-ui","status":"Synced","health":{"status":"Healthy"}},` +
	`{"group":"apps","version":"v1","kind":"Deployment","namespace":"guestbook","name":"guestbook-ui","status":"Synced","health":{"status":"Healthy"}}]`

func (a *agents) writeStatus(ctx context.Context, key types.NamespacedName, values map[string]string) error {
	w := &workv1.ManifestWork{}
	if err := a.c.Get(ctx, key, w); err != nil {
		return client.IgnoreNotFound(err)
	}
	appNs, appName := w.Annotations[api.HubApplicationNamespaceAnnotation], w.Annotations[api.HubApplicationNameAnnotation]
	direct := w.Labels[directLabel] == "true"
	if !direct {
		a.remember(key, w.Generation, appNs, appName, values)
	}
	testenv.SetAgentStatus(w, w.Generation, appNs, appName, values)
	a.writes.Add(1)
	if err := a.c.Status().Update(ctx, w); err != nil {
		return client.IgnoreNotFound(err)
	}
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case direct:
		a.directAnswered++
		a.directLastAnswer = now
	case !a.answered[key]:
		a.answered[key] = true
		a.lastAnswer = now
	}
	return nil
}

// answers is how many of the controller's works were answered, and when the last of them was
// first answered.
func (a *agents) answers() (n int, last time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.answered), a.lastAnswer
}

// directAnswers is how many works of the direct-create baseline were answered, and when the last
// of them was.
func (a *agents) directAnswers() (n int, last time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.directAnswered, a.directLastAnswer
}

// remember records what the agent of a work wrote, for its periodic reconciliations; values
// without resources keep the last ones, and a reconciledAt already written is kept.
func (a *agents) remember(key types.NamespacedName, generation int64, appNs, appName string, values map[string]string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.state[key]
	if st == nil {
		st = &workState{}
		a.state[key] = st
	}
	if values[manifestwork.FeedbackResources] == "" && st.values != nil {
		values[manifestwork.FeedbackResources], values[manifestwork.FeedbackConditions] = st.values[manifestwork.FeedbackResources], st.values[manifestwork.FeedbackConditions]
	}
	if at := st.values[manifestwork.FeedbackReconciledAt]; at != "" {
		values[manifestwork.FeedbackReconciledAt] = at
	}
	st.appNs, st.appName, st.generation, st.values = appNs, appName, generation, values
	if st.next.IsZero() && a.resync > 0 {
		st.next = a.nextReconcile(time.Now())
	}
}

// change writes new feedback for the Application of appSet on cluster: Healthy, Synced, revision.
func (a *agents) change(ctx context.Context, appSet, cluster, revision string) error {
	key := types.NamespacedName{Namespace: cluster, Name: manifestwork.WorkName(argoNamespace, appName(appSet, cluster))}
	a.mu.Lock()
	ch := change{revision: revision, written: time.Now()}
	if listed, ok := a.reportListed[appSet]; ok && report.UnlistedAreHealthy(a.reportNotes[appSet]) && !listed[cluster] {
		ch.report = true
		a.unobservable++
	}
	a.pending[appSet+"/"+cluster] = ch
	deployments := 1
	if st := a.state[key]; st != nil {
		st.deployments++
		deployments = st.deployments
	}
	a.mu.Unlock()
	values := map[string]string{manifestwork.FeedbackHealth: "Healthy", manifestwork.FeedbackSync: "Synced", manifestwork.FeedbackRevision: revision,
		manifestwork.FeedbackPhase: "Succeeded", manifestwork.FeedbackStartedAt: "2026-01-01T00:00:00Z",
		// What a managed Argo CD reports besides: the summary, and a history one deployment longer.
		manifestwork.FeedbackSourceType: "Directory", manifestwork.FeedbackImages: `["gcr.io/heptio-images/ks-guestbook-demo:0.2"]`}
	maps.Copy(values, historyFeedback(deployments, revision))
	for {
		err := a.writeStatus(ctx, key, values)
		if !apierrors.IsConflict(err) {
			return err
		}
	}
}

// historyFeedback is the status.history of an Application deployed n times, the last at revision,
// as the work agent reports it: one column per field, Argo CD's newest 10 entries.
func historyFeedback(n int, revision string) map[string]string {
	first := max(0, n-10)
	var ids, revisions, times, urls, paths, targets []any
	for id := first; id < n; id++ {
		rev := fmt.Sprintf("%040x", id)
		if id == n-1 {
			rev = revision
		}
		ids, revisions = append(ids, id), append(revisions, rev)
		times = append(times, time.Date(2026, 1, 1, 0, 0, id%60, 0, time.UTC).Format(time.RFC3339))
		urls, paths, targets = append(urls, "https://github.com/argoproj/argocd-example-apps.git"), append(paths, "guestbook"), append(targets, "HEAD")
	}
	column := func(values []any) string {
		if len(values) == 1 {
			return fmt.Sprint(values[0])
		}
		raw, _ := json.Marshal(values)
		return string(raw)
	}
	return map[string]string{
		manifestwork.FeedbackHistoryIDs: column(ids), manifestwork.FeedbackHistoryRevisions: column(revisions),
		manifestwork.FeedbackHistoryDeployedAt: column(times), manifestwork.FeedbackHistoryDeployStartedAt: column(times),
		manifestwork.FeedbackHistoryRepoURLs: column(urls), manifestwork.FeedbackHistoryPaths: column(paths),
		manifestwork.FeedbackHistoryTargetRevisions: column(targets),
	}
}
