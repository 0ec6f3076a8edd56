package simagent

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"maps"
	"math/rand/v2"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

// Behaviour is how every simulated managed Argo CD syncs.
type Behaviour struct {
	// SyncDuration is how long a sync runs, from its start to Succeeded (or Failed).
	SyncDuration time.Duration
	// Fails says whether a sync of the Application's targetRevision fails (nil: none does).
	Fails func(targetRevision string) bool
	// Resync is how often Argo CD compares an Application with nothing to do with Git again
	// (timeout.reconciliation), plus up to Jitter; 0: never.
	Resync, Jitter time.Duration
	// Compare is how long Argo CD takes to compare an Application with Git once it changed (its
	// repo server generating the manifests): the status of that comparison is written this much
	// after the change; 0: at once. Real Argo CD takes from tens of milliseconds (manifests
	// cached) to seconds (a new commit fetched). A status written within milliseconds of the
	// ApplicationSet controller's own patch is lost from that controller's view in Argo CD 3.4 and
	// later, which writes each patch's response back into its informer cache, over a newer object
	// already there, until the Application changes again (argo-cd#26578).
	Compare time.Duration
}

// nextResync is when Argo CD reconciles an Application compared at from again.
func (b Behaviour) nextResync(from time.Time) time.Time {
	if b.Resync <= 0 {
		return time.Time{}
	}
	next := from.Add(b.Resync)
	if b.Jitter > 0 {
		next = next.Add(time.Duration(rand.Int64N(int64(b.Jitter))))
	}
	return next
}

// Resolve is the commit a targetRevision resolves to in the simulated Git repository: 40 hex
// digits, as Argo CD reports a Git revision.
func Resolve(targetRevision string) string {
	sum := sha1.Sum([]byte(targetRevision))
	return hex.EncodeToString(sum[:])
}

// App is one managed cluster's Application: the object the work agent applied, with the status
// its Argo CD writes. Not safe for concurrent use.
type App struct {
	// Object is the Application as it is on the managed cluster.
	Object map[string]any
	// applied is the last manifest the work agent applied; it applies a manifest only when the
	// manifest changes (OCM's OnSpokeChange: it hashes the manifest), so what Argo CD cleared
	// (.operation, the refresh annotation) stays cleared until then.
	applied string
	// deployed is the revision the last successful sync deployed ("" before any).
	deployed string
	// running is the operation in progress, nil when none.
	running *operation
	// resync is when Argo CD next compares the Application on its own.
	resync time.Time
	// comparing is when the comparison a change started ends (zero: none is under way).
	comparing time.Time
	// autoSynced is the revision the automated sync policy last tried.
	autoSynced string
	// Starts counts, per delivery ID, the operations Argo CD started under it: one request run
	// twice (a redelivery) counts 2.
	Starts map[string]int
	// Finished is when the last operation finished, by its delivery ID.
	Finished map[string]time.Time
}

type operation struct {
	id       string
	revision string // the commit it syncs
	target   string // the targetRevision it syncs
	started  time.Time
	finishes time.Time
}

// snapshot is a copy of a that shares nothing with it.
func (a *App) snapshot() App {
	out := *a
	if a.Object != nil {
		out.Object = runtime.DeepCopyJSON(a.Object)
	}
	out.Starts, out.Finished = maps.Clone(a.Starts), maps.Clone(a.Finished)
	if a.running != nil {
		r := *a.running
		out.running = &r
	}
	return out
}

// Apply is the work agent applying manifest (forced server-side apply of the hub's fields): the
// Application is created if absent, its labels, annotations, finalizers and spec become the
// manifest's, and its .operation the manifest's (gone when the manifest has none). Its status
// stays Argo CD's; Argo CD then refreshes it. Applying the manifest applied last changes nothing,
// and Apply says whether it changed anything.
func (a *App) Apply(manifest map[string]any, now time.Time, b Behaviour) bool {
	raw, _ := json.Marshal(manifest)
	if a.Object != nil && string(raw) == a.applied {
		return false
	}
	a.applied = string(raw)
	m := unstructured.Unstructured{Object: runtime.DeepCopyJSON(manifest)}
	if a.Object == nil {
		a.Object = map[string]any{"apiVersion": m.GetAPIVersion(), "kind": m.GetKind(),
			"metadata": map[string]any{"name": m.GetName(), "namespace": m.GetNamespace(), "uid": string(uuid.NewUUID())}}
		a.Starts, a.Finished = map[string]int{}, map[string]time.Time{}
	}
	u := unstructured.Unstructured{Object: a.Object}
	u.SetLabels(m.GetLabels())
	u.SetAnnotations(m.GetAnnotations())
	u.SetFinalizers(m.GetFinalizers())
	a.Object["spec"] = m.Object["spec"]
	if op, ok := m.Object["operation"]; ok {
		a.Object["operation"] = op
	} else {
		delete(a.Object, "operation")
	}
	if phase, _, _ := unstructured.NestedString(m.Object, "status", "operationState", "phase"); phase == manifestwork.PhaseTerminating && a.running != nil {
		a.finish(now, false, "Operation terminated")
	}
	if b.Compare > 0 {
		a.comparing = now.Add(b.Compare)
	} else {
		a.refresh(now)
	}
	a.resync = b.nextResync(now)
	a.Step(now, b)
	return true
}

// refresh is Argo CD comparing the Application with Git: the target revision's commit, Synced when
// the last sync deployed it, the refresh annotation removed.
func (a *App) refresh(now time.Time) {
	a.comparing = time.Time{}
	target, _, _ := unstructured.NestedString(a.Object, "spec", "source", "targetRevision")
	source, _, _ := unstructured.NestedMap(a.Object, "spec", "source")
	revision := Resolve(target)
	sync := "OutOfSync"
	if a.deployed == revision {
		sync = "Synced"
	}
	health := "Healthy"
	if a.deployed == "" {
		health = "Missing"
	}
	status := a.status()
	status["sync"] = map[string]any{"status": sync, "revision": revision,
		"comparedTo": map[string]any{"source": source, "destination": a.Object["spec"].(map[string]any)["destination"]}}
	status["health"] = map[string]any{"status": health}
	status["reconciledAt"] = now.UTC().Format(time.RFC3339)
	status["sourceType"] = "Directory"
	u := unstructured.Unstructured{Object: a.Object}
	if annotations := u.GetAnnotations(); annotations[argocd.RefreshAnnotation] != "" {
		annotations = maps.Clone(annotations)
		delete(annotations, argocd.RefreshAnnotation)
		u.SetAnnotations(annotations)
	}
}

func (a *App) status() map[string]any {
	status, _ := a.Object["status"].(map[string]any)
	if status == nil {
		status = map[string]any{}
		a.Object["status"] = status
	}
	return status
}

// Step is Argo CD acting at now: it starts the requested operation when none runs, as it does
// when .operation is set (again: a request applied twice runs twice), and finishes the running
// one once its time has come. It returns when it acts next (zero: not before something changes)
// and whether it changed anything.
func (a *App) Step(now time.Time, b Behaviour) (next time.Time, changed bool) {
	if a.Object == nil {
		return time.Time{}, false
	}
	if !a.comparing.IsZero() && !now.Before(a.comparing) {
		a.refresh(now)
		changed = true
	}
	if !a.resync.IsZero() && !now.Before(a.resync) {
		a.refresh(now)
		a.resync = b.nextResync(now)
		changed = true
	}
	if a.running != nil && !now.Before(a.running.finishes) {
		fails := b.Fails != nil && b.Fails(a.running.target)
		message := "successfully synced (all tasks run)"
		if fails {
			message = "one or more objects failed to apply, reason: the simulated revision fails"
		}
		a.finish(now, !fails, message)
		changed = true
	}
	if a.running == nil && a.Object["operation"] == nil {
		a.autoSync()
	}
	if op, ok := a.Object["operation"].(map[string]any); ok && a.running == nil {
		a.start(op, now, b)
		changed = true
	}
	next = a.resync
	for _, at := range []time.Time{a.comparing, a.runningFinishes()} {
		if !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	return next, changed
}

// runningFinishes is when the running operation finishes, zero when none runs.
func (a *App) runningFinishes() time.Time {
	if a.running == nil {
		return time.Time{}
	}
	return a.running.finishes
}

// autoSync is Argo CD's automated sync policy: an Application OutOfSync at a revision it has not
// tried to sync yet gets an operation of its own (a failed revision is not tried again).
func (a *App) autoSync() {
	if !argocd.AutomatedSync(&unstructured.Unstructured{Object: a.Object}) {
		return
	}
	sync, _, _ := unstructured.NestedString(a.Object, "status", "sync", "status")
	revision, _, _ := unstructured.NestedString(a.Object, "status", "sync", "revision")
	if sync != "OutOfSync" || revision == a.autoSynced {
		return
	}
	a.autoSynced = revision
	a.Object["operation"] = map[string]any{"initiatedBy": map[string]any{"automated": true}, "sync": map[string]any{"revision": revision}}
}

func (a *App) start(op map[string]any, now time.Time, b Behaviour) {
	target, _, _ := unstructured.NestedString(a.Object, "spec", "source", "targetRevision")
	revision, _, _ := unstructured.NestedString(op, "sync", "revision")
	if revision == "" {
		revision = Resolve(target)
	}
	id := manifestwork.DeliveryID(op)
	a.Starts[id]++
	a.running = &operation{id: id, revision: revision, target: target, started: now, finishes: now.Add(b.SyncDuration)}
	a.status()["operationState"] = map[string]any{
		"operation": runtime.DeepCopyJSON(op), "phase": "Running", "message": "one or more tasks are running",
		"startedAt": now.UTC().Format(time.RFC3339),
	}
}

// finish ends the running operation: Argo CD records the outcome and removes .operation; a
// successful sync deploys its revision and adds it to the history (Argo CD keeps the last 10).
func (a *App) finish(now time.Time, succeeded bool, message string) {
	run := a.running
	a.running = nil
	delete(a.Object, "operation")
	a.Finished[run.id] = now
	state, _ := a.status()["operationState"].(map[string]any)
	if state == nil {
		state = map[string]any{}
	}
	state["finishedAt"] = now.UTC().Format(time.RFC3339)
	state["message"] = message
	state["phase"] = "Failed"
	if succeeded {
		state["phase"] = "Succeeded"
		state["syncResult"] = map[string]any{"revision": run.revision}
		a.deployed = run.revision
		source, _, _ := unstructured.NestedMap(a.Object, "spec", "source")
		history, _ := a.status()["history"].([]any)
		var id int64
		if n := len(history); n > 0 {
			id, _ = history[n-1].(map[string]any)["id"].(int64)
			id++
		}
		history = append(history, map[string]any{"id": id, "revision": run.revision, "source": source,
			"deployStartedAt": run.started.UTC().Format(time.RFC3339), "deployedAt": now.UTC().Format(time.RFC3339)})
		if len(history) > 10 {
			history = history[len(history)-10:]
		}
		a.status()["history"] = history
	}
	a.status()["operationState"] = state
	a.refresh(now)
}

// Syncing is the commit of the sync running, false when none runs.
func (a *App) Syncing() (string, bool) {
	if a.running == nil {
		return "", false
	}
	return a.running.revision, true
}

// Runs counts the operations Argo CD started on the Application, requested or its own.
func (a *App) Runs() int {
	n := 0
	for _, starts := range a.Starts {
		n += starts
	}
	return n
}

// redeliveries counts the sync requests started more than once.
func (a *App) redeliveries() int {
	n := 0
	for id, starts := range a.Starts {
		if id != "" && starts > 1 {
			n++
		}
	}
	return n
}

// Deployed is the commit the last successful sync deployed, "" before any.
func (a *App) Deployed() string { return a.deployed }

// Name is the Application's name.
func (a *App) Name() string {
	name, _, _ := unstructured.NestedString(a.Object, "metadata", "name")
	return name
}
