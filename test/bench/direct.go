package main

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/scheme"
)

// directLabel marks the works of the direct-create baseline, so that they can be removed.
const directLabel = "bench.argocd-pull.io/direct"

// directCreate creates, with a plain client of the given concurrency and client-side limits,
// the same ManifestWorks the controller would write (built by the same function), and returns
// the rate to its last create. With ag, the simulated agents answer them as they answer the
// controller's works (their status writes load the apiserver in any real fleet), the works are
// removed once every one is answered, and toAnswered is the rate to the last answer (0 without
// ag), as the pull model's propagation is timed to its works' last answer. It removes them before
// returning, so the controller starts from the same hub.
func directCreate(ctx context.Context, base *rest.Config, f fleet, concurrency int, qps float32, burst int, ag *agents) (rate, toAnswered float64, err error) {
	rc := rest.CopyConfig(base)
	rc.QPS, rc.Burst = qps, burst
	s, err := scheme.New()
	if err != nil {
		return 0, 0, err
	}
	c, err := client.New(rc, client.Options{Scheme: s})
	if err != nil {
		return 0, 0, err
	}
	works := make([]*workv1.ManifestWork, f.apps())
	for i := range works {
		set, cluster := f.appSets[i/len(f.clusters)], f.clusters[i%len(f.clusters)]
		app := pullApplication(set, cluster, metav1.OwnerReference{APIVersion: "argoproj.io/v1alpha1", Kind: "ApplicationSet", Name: set})
		target, _, err := manifestwork.ReadMarkers(app)
		if err != nil {
			return 0, 0, fmt.Errorf("the benchmark's Application is not a valid pull-model Application: %w", err)
		}
		// The work the controller creates for a new Application: held, once its cluster's claim
		// probe found the name free.
		w, err := manifestwork.DesiredWork(app, nil, target, manifestwork.Deliveries{})
		if err != nil {
			return 0, 0, err
		}
		if w, err = manifestwork.Hold(w); err != nil {
			return 0, 0, err
		}
		w.Name = "direct-" + w.Name
		w.Labels = map[string]string{directLabel: "true"}
		if ag != nil {
			w.Labels[api.ManagedByLabel] = api.ManagedByValue // what the agents watch
		}
		works[i] = w
	}
	start := time.Now()
	err = parallel(ctx, len(works), concurrency, func(ctx context.Context, i int) error {
		return c.Create(ctx, works[i])
	})
	if err != nil {
		return 0, 0, fmt.Errorf("creating works directly: %w", err)
	}
	rate = float64(len(works)) / time.Since(start).Seconds()
	if ag != nil {
		if err := waitFor(ctx, patience(len(works)), "the agents answering every direct work", "", func() (bool, string) {
			n, _ := ag.directAnswers()
			return n >= len(works), fmt.Sprintf("%d of %d answered", n, len(works))
		}); err != nil {
			return 0, 0, err
		}
		_, last := ag.directAnswers()
		toAnswered = float64(len(works)) / last.Sub(start).Seconds()
	}
	cleanup, err := client.New(base, client.Options{Scheme: s})
	if err != nil {
		return 0, 0, err
	}
	err = parallel(ctx, len(f.clusters), 8, func(ctx context.Context, i int) error {
		return cleanup.DeleteAllOf(ctx, &workv1.ManifestWork{}, client.InNamespace(f.clusters[i]), client.MatchingLabels{directLabel: "true"})
	})
	if err != nil {
		return 0, 0, fmt.Errorf("removing the directly created works: %w", err)
	}
	return rate, toAnswered, nil
}
