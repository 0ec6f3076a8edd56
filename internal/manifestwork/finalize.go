package manifestwork

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
)

// Deleting a hub Application whose deletion cascades (Argo CD's resources finalizer) deletes its
// work; the agent then deletes the managed Application, whose Argo CD deletes what it deployed
// before it lets the Application go. Two things must reach the managed cluster first:
//   - the finalizer itself: argocd app delete --cascade adds it to the hub Application in the
//     request that deletes it, so the work may still carry the Application without it;
//   - a request to terminate the operation the managed cluster runs: its Argo CD finishes an
//     operation before it acts on a deletion, and one stuck in a hook would keep the Application
//     there, and the hub Application in deletion, for good.
// FinalWork rewrites the work with both; the work is deleted once the agent applied it and no
// operation runs, or FinalGrace after it was written: a cluster that never answers keeps nothing
// on the hub. The hub reads the operation through the agent's status feedback, now and then: a
// request to terminate may land on an operation that ended meanwhile, where its phase stays
// Terminating beside the operation's finishedAt, and nothing runs (Reported.operationRunning).

// FinalGrace bounds how long a work is kept for FinalWork's rewrite to reach its cluster.
const FinalGrace = 2 * time.Minute

// FinalWork says what happens to work before it is deleted with its hub Application, whose
// finalizers are finalizers, given what its managed cluster reported (appstatus.Observed.Delivery):
// write updated, or wait that long (its status requeues it sooner), or, with neither, delete it
// now. A lost attempt to terminate is made again, as for argocd app terminate-op (planTerminate).
func FinalWork(work *workv1.ManifestWork, finalizers []string, reported Reported, now time.Time) (*workv1.ManifestWork, time.Duration, error) {
	if !slices.ContainsFunc(finalizers, IsResourcesFinalizer) || Paused(work) || Released(work) || ClaimOf(work) != ClaimOurs {
		return nil, 0, nil
	}
	running := reported.operationRunning()
	out := work.DeepCopy()
	changed := false
	for i, m := range out.Spec.Workload.Manifests {
		var obj map[string]any
		if json.Unmarshal(m.Raw, &obj) != nil || obj["kind"] != argocd.ApplicationGVK.Kind {
			continue
		}
		before, _ := json.Marshal(obj)
		metadata, _ := obj["metadata"].(map[string]any)
		if metadata == nil {
			continue
		}
		metadata["finalizers"] = finalizers
		switch attempt := terminateAttempt(obj); {
		case !running:
		case attempt == 0, attempt < MaxTerminateAttempts && reported.terminateLost(attempt):
			markTerminate(obj, attempt+1)
		}
		after, err := json.Marshal(obj)
		if err != nil {
			return nil, 0, err
		}
		if string(before) != string(after) {
			out.Spec.Workload.Manifests[i].Raw, changed = after, true
		}
	}
	if !changed {
		if AppliedAtGeneration(work) && !running {
			return nil, 0, nil
		}
		written, ok := WrittenAt(work)
		if !ok || now.Sub(written) >= FinalGrace {
			return nil, 0, nil
		}
		if _, marked := work.Annotations[api.FinalizingAnnotation]; marked {
			return nil, FinalGrace - now.Sub(written), nil
		}
		// Written a moment ago with all the deletion needs (the finalizer the delete added, say):
		// marked, so that its feedback reaches the propagation controller.
	}
	// Its feedback then matters to the propagation controller (see controller/predicates.go).
	out.Annotations = withAnnotation(out.Annotations, api.FinalizingAnnotation, "true")
	updated, err := Rehash(out)
	return updated, 0, err
}

// IsResourcesFinalizer is true for Argo CD's resources finalizer, in any of its forms
// (resources-finalizer.argocd.argoproj.io, with a /foreground or /background suffix).
func IsResourcesFinalizer(f string) bool {
	return f == argocd.ResourcesFinalizer || strings.HasPrefix(f, argocd.ResourcesFinalizer+"/")
}
