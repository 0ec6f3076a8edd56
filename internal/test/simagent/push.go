package simagent

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/internal/argocd"
)

// Push is the fleet's Argo CD acting on the hub Applications themselves, as a push-model Argo CD
// does: no ManifestWork, no work agent, no argocd-pull between the ApplicationSet controller and
// the syncs. Each hub Application is synced as App syncs a managed one (the same Behaviour: sync
// duration, failures, resyncs), and its status and the clearing of its .operation are written
// straight to the hub Application. The rollout benchmark runs it as the limit the pull model is
// measured against: the same hub, the same ApplicationSet controller, the same simulated syncs,
// without the pull model's cost.
//
// What real push-model Argo CD does that it does not: it holds credentials for every cluster and
// applies the resources there (here nothing is deployed); it compares with Git through its repo
// server (here Resolve); it writes .status with a computed patch, often in several writes per
// sync (operation started, finished, refreshed), where Push writes once per change, as App does.
type Push struct {
	c         client.Client
	behaviour Behaviour
	queue     workqueue.TypedRateLimitingInterface[types.NamespacedName]

	mu   sync.Mutex
	apps map[types.NamespacedName]*pushed

	// Writes counts the writes to the hub Applications.
	Writes atomic.Int64
	// OnChange, when set, is called (outside any lock) with the Application's key and the
	// simulation's Application after the simulation changed it; it must not keep the object.
	OnChange func(key types.NamespacedName, app *App, now time.Time)
}

// pushed is what the Argo CD of one hub Application holds.
type pushed struct {
	hub     *unstructured.Unstructured // the last version seen
	app     App
	written map[string]any // the status last written
	timer   *time.Timer
}

// NewPush returns the push-model fleet, writing to the hub with c.
func NewPush(c client.Client, b Behaviour) *Push {
	return &Push{c: c, behaviour: b, apps: map[types.NamespacedName]*pushed{},
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](50*time.Millisecond, 5*time.Second))}
}

// Observe takes a hub Application, added or updated.
func (p *Push) Observe(app *unstructured.Unstructured) {
	key := client.ObjectKeyFromObject(app)
	p.mu.Lock()
	a := p.apps[key]
	if a == nil {
		a = &pushed{}
		p.apps[key] = a
	}
	a.hub = app
	p.mu.Unlock()
	p.queue.Add(key)
}

// Forget takes a deleted hub Application.
func (p *Push) Forget(key types.NamespacedName) {
	p.mu.Lock()
	if a := p.apps[key]; a != nil && a.timer != nil {
		a.timer.Stop()
	}
	delete(p.apps, key)
	p.mu.Unlock()
}

// App returns a copy of what the simulation holds for the hub Application key; false when none.
func (p *Push) App(key types.NamespacedName) (App, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	a := p.apps[key]
	if a == nil || a.app.Object == nil {
		return App{}, false
	}
	return a.app.snapshot(), true
}

// Redeliveries counts the sync requests some Application's Argo CD started more than once.
func (p *Push) Redeliveries() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, a := range p.apps {
		n += a.app.redeliveries()
	}
	return n
}

// Run works on the queue with workers goroutines until ctx ends.
func (p *Push) Run(ctx context.Context, workers int) { runQueue(ctx, p.queue, workers, p.sync) }

// desired is the part of a hub Application its Argo CD acts on: what App.Apply takes as the
// manifest (its status is Argo CD's own).
func desired(hub *unstructured.Unstructured) map[string]any {
	metadata := map[string]any{"name": hub.GetName(), "namespace": hub.GetNamespace()}
	for _, field := range []string{"labels", "annotations"} {
		if v, ok, _ := unstructured.NestedFieldNoCopy(hub.Object, "metadata", field); ok {
			metadata[field] = v
		}
	}
	m := map[string]any{"apiVersion": hub.GetAPIVersion(), "kind": hub.GetKind(), "metadata": metadata, "spec": hub.Object["spec"]}
	if op, ok := hub.Object["operation"]; ok && op != nil {
		m["operation"] = op
	}
	return runtime.DeepCopyJSON(m)
}

// sync is one Application's Argo CD acting now: take the hub's spec and request, sync, and write
// what changed back to the hub Application.
func (p *Push) sync(ctx context.Context, key types.NamespacedName) error {
	now := time.Now()
	p.mu.Lock()
	a := p.apps[key]
	if a == nil {
		p.mu.Unlock()
		return nil
	}
	manifest := desired(a.hub)
	_, requested := manifest["operation"]
	changed := a.app.Apply(manifest, now, p.behaviour)
	next, stepped := a.app.Step(now, p.behaviour)
	changed = changed || stepped
	if a.timer != nil {
		a.timer.Stop()
		a.timer = nil
	}
	if !next.IsZero() {
		a.timer = time.AfterFunc(time.Until(next), func() { p.queue.Add(key) })
	}
	status := runtime.DeepCopyJSON(a.app.status())
	// Argo CD removes a finished operation from the Application it ran on.
	clear := requested && a.app.Object["operation"] == nil
	write := clear || !equality.Semantic.DeepEqual(a.written, status)
	var snapshot App
	notify := changed && p.OnChange != nil
	if notify {
		snapshot = a.app.snapshot()
	}
	p.mu.Unlock()
	if notify {
		p.OnChange(key, &snapshot, now)
	}
	if !write {
		return nil
	}
	body := map[string]any{"status": status}
	if clear {
		body["operation"] = nil
	}
	patch, err := json.Marshal(body)
	if err != nil {
		return err
	}
	p.Writes.Add(1)
	out := argocd.NewApplication()
	out.SetNamespace(key.Namespace)
	out.SetName(key.Name)
	if err := p.c.Patch(ctx, out, client.RawPatch(types.MergePatchType, patch)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("status of %s: %w", key, err)
	}
	p.mu.Lock()
	if a := p.apps[key]; a != nil {
		a.written = status
		if clear {
			// The hub Application without the request is what this Argo CD made it: seeing it
			// come back is no change to act on.
			delete(manifest, "operation")
			raw, _ := json.Marshal(manifest)
			a.app.applied = string(raw)
		}
	}
	p.mu.Unlock()
	return nil
}
