package simagent

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
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
// sync (operation started, finished, refreshed), where Push writes once per change, as App does;
// its comparison with Git takes the repo server's time, which Behaviour.Compare stands in for.
type Push struct {
	c         client.Client
	behaviour Behaviour
	// clusters holds each hub Application as last seen and the status last written to it.
	clusters[*unstructured.Unstructured, map[string]any]
}

// NewPush returns the push-model fleet, writing to the hub with c.
func NewPush(c client.Client, b Behaviour) *Push {
	return &Push{c: c, behaviour: b, clusters: newClusters[*unstructured.Unstructured, map[string]any]()}
}

// Observe takes a hub Application, added or updated.
func (p *Push) Observe(app *unstructured.Unstructured) {
	p.observe(client.ObjectKeyFromObject(app), app)
}

// Run works on the queue with workers goroutines until ctx ends.
func (p *Push) Run(ctx context.Context, workers int) { p.run(ctx, workers, p.sync) }

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
	a := p.entries[key]
	if a == nil {
		p.mu.Unlock()
		return nil
	}
	manifest := desired(a.seen)
	_, requested := manifest["operation"]
	changed := a.app.Apply(manifest, now, p.behaviour)
	next, stepped := a.app.Step(now, p.behaviour)
	changed = changed || stepped
	p.wake(key, a, next)
	status := runtime.DeepCopyJSON(a.app.status())
	// Argo CD removes a finished operation from the Application it ran on.
	clear := requested && a.app.Object["operation"] == nil
	write := clear || !equality.Semantic.DeepEqual(a.written, status)
	p.unlockAndTell(key, a, changed, now)
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
	if a := p.entries[key]; a != nil {
		a.written = status
		// What this write made is the newest version seen: a caller's read made before it (the
		// sync's start still requested) and handed over after it is older, and is not acted on
		// again (observe). An informer would hand this version over before any later one.
		if !older(out, a.seen) {
			a.seen = out
		}
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
