package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
// (propagation.StampWritten); deleting a work already gone is done. The error wraps the
// apiserver's, so that callers can tell a conflict or a missing work.
func (r *PropagationReconciler) write(ctx context.Context, w workWrite) error {
	ctrl.LoggerFrom(ctx).Info(w.why, append([]any{"manifestWork", klog.KObj(w.work)}, w.kv...)...)
	var err error
	switch w.op {
	case metrics.OpCreate:
		propagation.StampWritten(w.work, time.Now())
		err = r.Create(ctx, w.work)
	case metrics.OpUpdate:
		propagation.StampWritten(w.work, time.Now())
		err = r.Update(ctx, w.work)
	case metrics.OpDelete:
		var opts []client.DeleteOption
		if w.exact {
			opts = append(opts, client.Preconditions{UID: &w.work.UID})
		}
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
