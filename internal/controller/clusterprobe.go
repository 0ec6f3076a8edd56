// The probe of the clusters whose own trees the hub holds (resourceviews.go): one request each,
// every ClusterTrees.ProbeEvery, so that a cluster that stops answering while nothing changes on
// the hub (a token revoked while no new one can come, a channel gone down) turns its trees to the
// display tree within that period.

package controller

import (
	"context"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/argocd-pull/argocd-pull/internal/gitops"
	"github.com/argocd-pull/argocd-pull/internal/metrics"
	"github.com/argocd-pull/argocd-pull/internal/resourceviews"
)

// probeConcurrency is how many clusters a probe round asks at once.
const probeConcurrency = 8

// probeClusters asks, every ProbeEvery until ctx ends, each cluster whose own tree was read
// within the TTL whether it still answers through its channel, and marks down one that does not:
// its Applications take the display tree at once (ClusterTrees.failed), with one
// ClusterTreeNotRead that names the cluster's answer.
func (r *ResourceTreeReconciler) probeClusters(ctx context.Context) error {
	ticker := time.NewTicker(r.ClusterTrees.ProbeEvery)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
		clusters := r.ClusterTrees.toProbe(time.Now(), r.TTL)
		sem := make(chan struct{}, probeConcurrency)
		var wg sync.WaitGroup
		for _, cluster := range clusters {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				r.probe(ctx, cluster)
			})
		}
		wg.Wait()
	}
}

// probe asks cluster once, through its secret's channel as the cache holds it now.
func (r *ResourceTreeReconciler) probe(ctx context.Context, cluster string) {
	ct := r.ClusterTrees
	secret := &corev1.Secret{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: r.ArgoCDNamespace, Name: gitops.SecretName(cluster)}, secret); err != nil {
		secret = nil
	}
	cfg, _ := resourceviews.ClusterChannel(cluster, secret, ct.Channel)
	if cfg == nil {
		ct.up.Delete(cluster) // the secret changed: its Applications are read again (applicationsOfSecret)
		return
	}
	err := resourceviews.Probe(ctx, cfg)
	switch {
	case err == nil:
		metrics.ClusterProbes.WithLabelValues(metrics.ProbeAnswered).Inc()
	case ctx.Err() == nil:
		metrics.ClusterProbes.WithLabelValues(metrics.ProbeFailed).Inc()
		ctrl.Log.WithName("resourcetree").Info("A cluster no longer answers through its channel: its trees are the display tree", "cluster", cluster, "reason", err.Error())
		ct.failed(cluster, channelOf(cfg), err.Error(), time.Now())
	}
}

// toProbe are the clusters read within the last within, which probeClusters asks; the others are
// forgotten (their trees are renewed within half the TTL: none of them is the cluster's own now).
func (ct *ClusterTrees) toProbe(now time.Time, within time.Duration) []string {
	var clusters []string
	ct.up.Range(func(k, v any) bool {
		if now.Sub(v.(time.Time)) > within {
			ct.up.CompareAndDelete(k, v)
		} else {
			clusters = append(clusters, k.(string))
		}
		return true
	})
	slices.Sort(clusters)
	return clusters
}
