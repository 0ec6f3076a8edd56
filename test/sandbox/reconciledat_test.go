package sandbox_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/sandbox"
	"github.com/argocd-pull/argocd-pull/internal/scheme"
)

// runningSync is one sync of one hub Application (its key and the operation's startedAt) as the
// hub saw it while it ran.
type runningSync struct {
	app       types.NamespacedName
	startedAt string
}

func (s runningSync) String() string { return s.app.Name + " sync started " + s.startedAt }

// reconciledAtWhileRunning is what watchReconciledAt saw: when each sync's work status first showed
// a comparison since its start while it ran (and when that work's status next changed), which of
// those syncs the hub Application showed so, and every hub reconciledAt that moved back.
type reconciledAtWhileRunning struct {
	mu        sync.Mutex
	reported  map[runningSync]time.Time // the work's status first showed it
	nextWork  map[runningSync]time.Time // the work's status changed after that
	shown     map[runningSync]bool      // a hub Application write showed it while the sync ran
	last      map[types.NamespacedName]string
	movedBack []string
}

// comparedWhileRunning says whether a status (a work's feedback or a hub Application's status)
// shows a sync running and a comparison not before its start: then it returns that sync's start.
func comparedWhileRunning(phase, startedAt, reconciledAt string) (string, bool) {
	if phase != "Running" || startedAt == "" || reconciledAt == "" {
		return "", false
	}
	started, errS := time.Parse(time.RFC3339, startedAt)
	compared, errC := time.Parse(time.RFC3339, reconciledAt)
	return startedAt, errS == nil && errC == nil && !compared.Before(started)
}

// watchReconciledAt watches, until the test ends, the hub's ManifestWorks and Applications of the
// hub Application key(cluster) of each of clusters, for what docs/status.md promises of reconciledAt while a sync runs: once
// the managed cluster reports a comparison since the sync started, the hub Application shows that
// reconciledAt while the sync still runs (Argo CD 3.5's RollingSync moves a step's Application on
// from Pending only then, and requests its sync again otherwise: argo-cd#21502), and the hub's
// reconciledAt never moves back. check, called once the rollouts are done, fails the test where it
// did not.
func watchReconciledAt(t *testing.T, clusters []string, key func(cluster string) types.NamespacedName) (check func()) {
	t.Helper()
	var keys []types.NamespacedName
	for _, c := range clusters {
		keys = append(keys, key(c))
	}
	s, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	hub, err := client.NewWithWatch(lab.Hub.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	seen := &reconciledAtWhileRunning{reported: map[runningSync]time.Time{}, nextWork: map[runningSync]time.Time{},
		shown: map[runningSync]bool{}, last: map[types.NamespacedName]string{}}
	stop := make(chan struct{})
	var done sync.WaitGroup
	// watchAll watches list's objects in namespace until stop, again after the apiserver ends a watch.
	watchAll := func(list client.ObjectList, namespace string, each func(watch.Event)) {
		defer done.Done()
		for {
			w, err := hub.Watch(ctx, list, client.InNamespace(namespace))
			if err != nil {
				select {
				case <-stop:
					return
				case <-time.After(time.Second):
					continue
				}
			}
			for open := true; open; {
				select {
				case <-stop:
					w.Stop()
					return
				case ev, ok := <-w.ResultChan():
					if open = ok; ok {
						each(ev)
					}
				}
			}
		}
	}
	// Each work's last feedback, and the syncs it showed compared while they ran.
	lastFeedback := map[types.NamespacedName]string{}
	onWork := func(ev watch.Event) {
		work, ok := ev.Object.(*workv1.ManifestWork)
		if !ok {
			return
		}
		app, ok := manifestwork.HubApplicationOf(work)
		if !ok || !slices.Contains(keys, app) {
			return
		}
		values := map[string]string{}
		for _, m := range work.Status.ResourceStatus.Manifests {
			if m.ResourceMeta.Kind == "Application" {
				values = manifestwork.FeedbackText(m.StatusFeedbacks.Values)
			}
		}
		now := time.Now()
		seen.mu.Lock()
		defer seen.mu.Unlock()
		text := fmt.Sprint(values)
		if text == lastFeedback[app] {
			return
		}
		lastFeedback[app] = text
		for s := range seen.reported {
			if s.app == app && seen.nextWork[s].IsZero() {
				seen.nextWork[s] = now
			}
		}
		if start, ok := comparedWhileRunning(values[manifestwork.FeedbackPhase], values[manifestwork.FeedbackStartedAt], values[manifestwork.FeedbackReconciledAt]); ok {
			if s := (runningSync{app, start}); seen.reported[s].IsZero() {
				seen.reported[s] = now
			}
		}
	}
	onApp := func(ev watch.Event) {
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			return
		}
		app := client.ObjectKeyFromObject(u)
		if !slices.Contains(keys, app) {
			return
		}
		phase, _, _ := unstructured.NestedString(u.Object, "status", "operationState", "phase")
		started, _, _ := unstructured.NestedString(u.Object, "status", "operationState", "startedAt")
		reconciled, _, _ := unstructured.NestedString(u.Object, "status", "reconciledAt")
		seen.mu.Lock()
		defer seen.mu.Unlock()
		if start, ok := comparedWhileRunning(phase, started, reconciled); ok {
			seen.shown[runningSync{app, start}] = true
		}
		if reconciled == "" {
			return
		}
		if last := seen.last[app]; last != "" && reconciled < last {
			seen.movedBack = append(seen.movedBack, fmt.Sprintf("%s: %s after %s", app.Name, reconciled, last))
		}
		seen.last[app] = reconciled
	}
	for _, cluster := range clusters { // a cluster's works are in its namespace on the hub
		done.Add(1)
		go watchAll(&workv1.ManifestWorkList{}, cluster, onWork)
	}
	apps := &unstructured.UnstructuredList{}
	apps.SetGroupVersionKind(argocd.NewApplication().GroupVersionKind())
	done.Add(1)
	go watchAll(apps, sandbox.ArgoNamespace, onApp)
	stopped := false
	stopWatching := func() {
		if !stopped {
			stopped = true
			close(stop)
			done.Wait()
		}
	}
	t.Cleanup(stopWatching)
	return func() {
		t.Helper()
		stopWatching()
		seen.mu.Lock()
		defer seen.mu.Unlock()
		for _, m := range seen.movedBack {
			t.Errorf("a hub Application's status.reconciledAt moved back: %s", m)
		}
		shown := 0
		for s, at := range seen.reported {
			if seen.shown[s] {
				shown++
				continue
			}
			// The work's next status may have come too soon for any write between the two (the
			// sync ended at once): only a miss with a second or more to write it in is one.
			if next := seen.nextWork[s]; next.IsZero() || next.Sub(at) >= time.Second {
				t.Errorf("%s: its cluster reported a comparison since the start while it ran (%s), and the hub Application never showed it while it ran", s, at.Format(time.RFC3339Nano))
			}
		}
		t.Logf("syncs whose cluster reported a comparison since their start while they ran: %d, shown so on the hub: %d", len(seen.reported), shown)
	}
}
