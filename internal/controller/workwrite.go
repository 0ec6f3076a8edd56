package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/metrics"
	"github.com/argocd-pull/argocd-pull/internal/propagation"
)

// A workWrite is one ManifestWork write the propagation controller decided on. Every write of a
// work goes through (*PropagationReconciler).write: the one place that stamps, logs, sends and
// counts it.
type workWrite struct {
	op   string // metrics.OpCreate, metrics.OpUpdate or metrics.OpDelete
	work *workv1.ManifestWork
	// why is the log line, e.g. "Freezing ManifestWork" or "Deleting ManifestWork: another
	// Application delivers the same managed-cluster Application"; its part before a colon,
	// lowercased, begins the error.
	why string
	kv  []any // more values for the log line
	// exact deletes only this very work (a UID precondition): one another controller writes, which
	// may have been deleted and written again meanwhile.
	exact bool
}

// write carries w out. A create or update stamps the work written now
// (manifestwork.StampWritten); deleting a work already gone is done. The error wraps the
// apiserver's, so that callers can tell a conflict or a missing work.
func (r *PropagationReconciler) write(ctx context.Context, w workWrite) error {
	ctrl.LoggerFrom(ctx).Info(w.why, append([]any{"manifestWork", klog.KObj(w.work)}, w.kv...)...)
	var err error
	switch w.op {
	case metrics.OpCreate:
		manifestwork.StampWritten(w.work, time.Now())
		err = r.Create(ctx, w.work)
	case metrics.OpUpdate:
		manifestwork.StampWritten(w.work, time.Now())
		from := w.work.ResourceVersion
		if err = r.Update(ctx, w.work); err == nil && w.work.ResourceVersion != from {
			r.writtenFrom.Store(client.ObjectKeyFromObject(w.work), from)
		}
	case metrics.OpDelete:
		var opts []client.DeleteOption
		if w.exact {
			opts = append(opts, client.Preconditions{UID: &w.work.UID})
		}
		r.writtenFrom.Delete(client.ObjectKeyFromObject(w.work))
		if err = r.Delete(ctx, w.work, opts...); apierrors.IsNotFound(err) {
			return nil
		}
	default:
		return fmt.Errorf("unknown ManifestWork write %q", w.op)
	}
	if err != nil {
		what, _, _ := strings.Cut(w.why, ":")
		return fmt.Errorf("%s%s %s/%s: %w", strings.ToLower(what[:1]), what[1:], w.work.Namespace, w.work.Name, err)
	}
	metrics.WorkWrites.WithLabelValues(w.op).Inc()
	return nil
}

// behindOwnWrite says whether the cache still shows work as it was before this controller's last
// update of it: what is decided from it would be decided again from an old copy (a second delivery
// of the same request, a write that conflicts). The update's own event reconciles the Application
// again once the cache has it.
func (r *PropagationReconciler) behindOwnWrite(work *workv1.ManifestWork) bool {
	if work == nil {
		return false
	}
	from, ok := r.writtenFrom.Load(client.ObjectKeyFromObject(work))
	return ok && from.(string) == work.ResourceVersion
}

// execute carries out steps in order, through write, and records what each says: the created
// works, the latency of the Application's change, events and takeover counts. It stops at the
// first failure and returns how many steps were carried out before it. app is nil when the
// Application is gone (no events then).
func (r *PropagationReconciler) execute(ctx context.Context, app *unstructured.Unstructured, steps []propagation.Step) (int, error) {
	for i, step := range steps {
		if err := r.executeStep(ctx, app, step); err != nil {
			return i, err
		}
	}
	return len(steps), nil
}

func (r *PropagationReconciler) executeStep(ctx context.Context, app *unstructured.Unstructured, step propagation.Step) error {
	w := step.Work
	event := func(eventType, reason, action, note string, args ...any) {
		if app != nil {
			r.Recorder.Eventf(app, nil, eventType, reason, action, note, args...)
		}
	}
	switch {
	case step.Action == propagation.ActCreate:
		if err := r.write(ctx, workWrite{op: metrics.OpCreate, work: w, why: "Creating ManifestWork", kv: requestsOf(w)}); err != nil {
			return err
		}
		r.created.add(w, time.Now())
		// No event: one per created work was a quarter of the requests of a fleet's rollout. The
		// work itself, the log line and argocd_pull_work_writes_total record it; events are for
		// refusals, moves, freezes and deliveries.
		r.written(app)
	case step.Action == propagation.ActUpdate:
		if err := r.write(ctx, workWrite{op: metrics.OpUpdate, work: w, why: "Updating ManifestWork", kv: requestsOf(w)}); err != nil {
			return err
		}
		r.written(app)
	case step.Action == propagation.ActFreeze:
		if err := r.write(ctx, workWrite{op: metrics.OpUpdate, work: w, why: "Freezing ManifestWork", kv: []any{"reason", step.Reason}}); err != nil {
			return err
		}
		event(corev1.EventTypeWarning, ReasonFrozen, "Freeze",
			"Froze ManifestWork %s/%s: the managed cluster keeps what it runs, with automated sync off (%s)", w.Namespace, w.Name, step.Reason)
	case step.Action == propagation.ActPause:
		return r.write(ctx, workWrite{op: metrics.OpUpdate, work: w, why: "Pausing ManifestWork", kv: []any{"reason", step.Reason}})
	case step.Action == propagation.ActYield:
		return r.write(ctx, workWrite{op: metrics.OpDelete, work: w, kv: []any{"other", step.Other},
			why: "Deleting ManifestWork: another Application delivers the same managed-cluster Application"})
	case step.Action == propagation.ActRelease && step.Upstream:
		writer := manifestwork.UpstreamWriter(w)
		if err := r.write(ctx, workWrite{op: metrics.OpUpdate, work: w, kv: []any{"writer", writer},
			why: "Releasing the upstream ManifestWork: its Application belongs to argocd-pull's work too"}); err != nil {
			return client.IgnoreNotFound(err)
		}
		metrics.Takeovers.WithLabelValues(metrics.TakeoverReleased).Inc()
		event(corev1.EventTypeNormal, ReasonAdopting, "Adopt",
			"Released ManifestWork %s/%s of %s: the managed-cluster Application belongs to ManifestWork %s too, and stays when it goes",
			w.Namespace, w.Name, writer, step.Other)
	case step.Action == propagation.ActRelease:
		return client.IgnoreNotFound(r.write(ctx, workWrite{op: metrics.OpUpdate, work: w,
			why: "Releasing paused ManifestWork before deleting it: the managed cluster keeps its Application"}))
	case step.Action == propagation.ActDelete && step.Upstream:
		writer := manifestwork.UpstreamWriter(w)
		err := r.write(ctx, workWrite{op: metrics.OpDelete, work: w, exact: true, kv: []any{"writer", writer},
			why: "Deleting the released upstream ManifestWork: the agent leaves its Application to argocd-pull's work"})
		switch {
		case apierrors.IsConflict(err):
			return nil // deleted and written again meanwhile: its events bring the Application back
		case err != nil:
			return err
		}
		metrics.Takeovers.WithLabelValues(metrics.TakeoverAdopted).Inc()
		event(corev1.EventTypeNormal, ReasonAdopted, "Adopt",
			"Took the managed-cluster Application over from %s: its ManifestWork %s/%s is deleted, nothing on the cluster was deleted or recreated",
			writer, w.Namespace, w.Name)
	case step.Action == propagation.ActDelete:
		if err := r.write(ctx, workWrite{op: metrics.OpDelete, work: w, why: "Deleting ManifestWork"}); err != nil {
			return err
		}
		if step.MovedTo != "" {
			event(corev1.EventTypeNormal, ReasonRetargeted, "Propagate", "Moved from cluster %s to cluster %s", w.Namespace, step.MovedTo)
		}
	case step.Action == propagation.ActAsk:
		target, _, err := manifestwork.ReadMarkers(app)
		if err != nil {
			return err
		}
		return r.ask(ctx, target.Cluster, *step.Ask)
	case step.Action == propagation.ActFinalize:
		return r.write(ctx, workWrite{op: metrics.OpUpdate, work: w,
			why: "Updating ManifestWork before deleting it: what its Application's deletion needs reaches the managed cluster first"})
	default:
		return fmt.Errorf("unknown step %q", step.Action)
	}
	return nil
}

// remove deletes works, except keep (nil: all), as propagation.PlanRemoval says: paused ones are
// released first.
func (r *PropagationReconciler) remove(ctx context.Context, app *unstructured.Unstructured, works []workv1.ManifestWork, keep *workv1.ManifestWork) error {
	steps, err := propagation.PlanRemoval(works, keep)
	if err != nil {
		return err
	}
	_, err = r.execute(ctx, app, steps)
	return err
}

// requestsOf are the log values of the sync and refresh requests a work carries
// (api.DeliveriesAnnotation), none when it carries none.
func requestsOf(w *workv1.ManifestWork) []any {
	if d := w.Annotations[api.DeliveriesAnnotation]; d != "" {
		return []any{"requests", d}
	}
	return nil
}
