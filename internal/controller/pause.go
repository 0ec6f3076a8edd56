package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/propagation"
)

// pauseOf says whether and why app is paused (see manifestwork.PauseOf), from the cache: its
// ApplicationSet and the pause ConfigMap.
func (r *PropagationReconciler) pauseOf(ctx context.Context, app *unstructured.Unstructured) (manifestwork.Pausing, bool, error) {
	var appSet *unstructured.Unstructured
	if name, ok := argocd.OwningApplicationSet(app); ok {
		// The cache's own object, not a copy: only its annotations are read. A RollingSync
		// ApplicationSet's status lists every Application (hundreds of KiB at 1,000 clusters), and
		// copying it on each propagation reconcile was a fifth of the controller's CPU in a rollout.
		appSet = argocd.NewApplicationSet()
		switch err := r.Get(ctx, types.NamespacedName{Namespace: app.GetNamespace(), Name: name}, appSet, client.UnsafeDisableDeepCopy); {
		case apierrors.IsNotFound(err):
			appSet = nil
		case err != nil:
			return manifestwork.Pausing{}, false, fmt.Errorf("reading ApplicationSet %s/%s: %w", app.GetNamespace(), name, err)
		}
	}
	global, err := globalPause(ctx, r.Cache, r.Options.ArgoCDNamespace)
	if err != nil {
		return manifestwork.Pausing{}, false, err
	}
	p, paused := manifestwork.PauseOf(app, appSet, global)
	return p, paused, nil
}

// globalPause is the reason the pause ConfigMap gives, "" when it does not pause or is missing.
func globalPause(ctx context.Context, c client.Reader, namespace string) (string, error) {
	cm := &corev1.ConfigMap{}
	switch err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: api.PauseConfigMap}, cm); {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("reading ConfigMap %s/%s: %w", namespace, api.PauseConfigMap, err)
	}
	return manifestwork.PauseValue(cm.Data[api.PauseKey]), nil
}

// pause switches the Application's held works to read only, once (propagation.PlanPause), writes
// nothing else for it, and says so on it.
func (r *PropagationReconciler) pause(ctx context.Context, app *unstructured.Unstructured, p manifestwork.Pausing, conditions hubAppConditions) error {
	works, err := r.worksOf(ctx, client.ObjectKeyFromObject(app))
	if err != nil {
		return err
	}
	steps, err := propagation.PlanPause(works, p.Reason)
	if err != nil {
		return err
	}
	done, err := r.execute(ctx, app, steps)
	for _, step := range steps[:done] {
		r.Recorder.Eventf(app, nil, corev1.EventTypeNormal, ReasonPaused, "Pause",
			"Paused ManifestWork %s/%s: the managed cluster keeps what it runs, its work agent only reports (%s)", step.Work.Namespace, step.Work.Name, p)
	}
	if err != nil {
		return err
	}
	return conditions.paused(ctx, app, p.String()+": nothing is delivered to the managed cluster, which keeps what it runs; status keeps flowing; what changes meanwhile is delivered on resume")
}
