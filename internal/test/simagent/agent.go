// Package simagent stands in, on the hub side, for the managed clusters of a fleet: each
// cluster's OCM work agent, which applies the ManifestWorks argocd-pull writes and reports their
// status feedback, and its Argo CD, which refreshes the Application, runs the syncs it is asked
// for (or its automated policy starts) and records them. The scale benchmark's rollout scenarios
// run it against a real apiserver, the real ApplicationSet controller and argocd-pull.
//
// What it does as the real components do:
//
//   - the agent applies a work's Application manifest only when the manifest changed, so what
//     Argo CD cleared (.operation once finished) stays cleared until the next change, and a
//     finished request the manifest still carries after a change runs again (a redelivery,
//     counted in App.Starts);
//
//   - a pending work (OCM's ReadOnly) creates nothing and reports the Application absent;
//
//   - feedback is read with the work's own rules, as the agent's status reader reads them
//     (Feedback), and written when it changes, as the agent's watch-based feedback does;
//
//   - Argo CD reports a new targetRevision OutOfSync at its commit, starts a requested sync at
//     once, finishes it after Behaviour.SyncDuration (Succeeded, or Failed for a revision
//     Behaviour.Fails names), removes .operation, deploys, and adds to the history.
//
//   - Argo CD compares each Application again every Behaviour.Resync (plus jitter), which changes
//     its reconciledAt: written to the hub when the work asks for it (while it carries a request).
//
// What the real components do that it does not (kinder than a real fleet):
//   - one process and one client connection for every cluster, where each real agent has its own
//     connection to the hub;
//   - one status write per change, where the agent writes its Applied condition and the feedback
//     in two; no write for the agent's periodic resync (every 10 s it re-reads, and writes only a
//     change, so this is the same on the hub);
//   - Argo CD starts a sync the instant .operation arrives and no sync retries (a failed sync of
//     the ApplicationSet controller's, which asks for 5 retries, fails once);
//   - no resources, health checks or hooks: an Application is Healthy once anything was deployed;
//   - a work's deletion deletes its Application at once (no finalizers run);
//   - no OCM admission webhook validates the works on the hub (a real hub's adds a round trip to
//     every work write).
package simagent

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

// Fleet is the work agents and Argo CDs of every simulated cluster, by work.
type Fleet struct {
	c         client.Client
	behaviour Behaviour
	// clusters holds each work as last seen and what its agent last wrote.
	clusters[*workv1.ManifestWork, *workv1.ManifestWorkStatus]
}

// New returns the fleet, writing to the hub with c.
func New(c client.Client, b Behaviour) *Fleet {
	return &Fleet{c: c, behaviour: b, clusters: newClusters[*workv1.ManifestWork, *workv1.ManifestWorkStatus]()}
}

// Observe takes a ManifestWork as a cluster's agent receives it (added or updated).
func (f *Fleet) Observe(w *workv1.ManifestWork) { f.observe(client.ObjectKeyFromObject(w), w) }

// Run works on the queue with workers goroutines until ctx ends.
func (f *Fleet) Run(ctx context.Context, workers int) { f.run(ctx, workers, f.sync) }

// sync is one work's agent and Argo CD acting now: apply the work's manifest if it changed, let
// Argo CD act, and report what changed.
func (f *Fleet) sync(ctx context.Context, key types.NamespacedName) error {
	now := time.Now()
	f.mu.Lock()
	c := f.entries[key]
	if c == nil {
		f.mu.Unlock()
		return nil
	}
	w := c.seen
	changed := false
	var status *workv1.ManifestWorkStatus
	if manifestwork.IsProbe(w) {
		// A claim probe: the simulated clusters have no Application but those their works made.
		answered := w.DeepCopy()
		testenv.AnswerProbe(answered, nil)
		status = &answered.Status
	} else {
		if manifestwork.Held(w) {
			if manifest, ok := applicationManifest(w); ok {
				changed = c.app.Apply(manifest, now, f.behaviour)
			}
		}
		next, stepped := c.app.Step(now, f.behaviour)
		changed = changed || stepped
		f.wake(key, c, next)
		status = agentStatus(w, &c.app, now)
	}
	write := c.written == nil || !sameStatus(c.written, status)
	f.unlockAndTell(key, c, changed, now)
	if !write {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	f.Writes.Add(1)
	out := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	if err := f.c.Status().Patch(ctx, out, client.RawPatch(types.MergePatchType, patch)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("status of %s: %w", key, err)
	}
	f.wrote(key, status)
	return nil
}

// applicationManifest is the Application manifest the work carries.
func applicationManifest(w *workv1.ManifestWork) (map[string]any, bool) {
	for _, m := range w.Spec.Workload.Manifests {
		var obj map[string]any
		if json.Unmarshal(m.Raw, &obj) == nil && obj["kind"] == argocd.ApplicationGVK.Kind {
			return obj, true
		}
	}
	return nil, false
}

// agentStatus is the status the work agent reports for w with app on the cluster: Applied and
// Available at w's generation, the Application's conditions and its feedback by w's rules.
func agentStatus(w *workv1.ManifestWork, app *App, now time.Time) *workv1.ManifestWorkStatus {
	at := metav1.NewTime(now)
	manifest, _ := applicationManifest(w)
	u := unstructured.Unstructured{Object: manifest}
	var values []workv1.FeedbackValue
	if app.Object != nil {
		for _, cfg := range w.Spec.ManifestConfigs {
			if cfg.ResourceIdentifier.Group == argocd.Group && cfg.ResourceIdentifier.Resource == "applications" {
				values = Feedback(app.Object, cfg.FeedbackRules)
			}
		}
	}
	return &workv1.ManifestWorkStatus{
		Conditions: testenv.AppliedConditions(w.Generation, at),
		ResourceStatus: workv1.ManifestResourceStatus{Manifests: []workv1.ManifestCondition{
			testenv.ApplicationManifestStatus(u.GetNamespace(), u.GetName(), values, app.Object != nil, at)}},
	}
}

// sameStatus compares two reports without their transition times.
func sameStatus(a, b *workv1.ManifestWorkStatus) bool {
	strip := func(s *workv1.ManifestWorkStatus) *workv1.ManifestWorkStatus {
		s = s.DeepCopy()
		for i := range s.Conditions {
			s.Conditions[i].LastTransitionTime = metav1.Time{}
		}
		for i := range s.ResourceStatus.Manifests {
			for j := range s.ResourceStatus.Manifests[i].Conditions {
				s.ResourceStatus.Manifests[i].Conditions[j].LastTransitionTime = metav1.Time{}
			}
		}
		return s
	}
	return equality.Semantic.DeepEqual(strip(a), strip(b))
}
