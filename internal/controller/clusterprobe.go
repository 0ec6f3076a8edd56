// The probe of the clusters whose own trees the hub holds (resourceviews.go): one request each,
// every ClusterTrees.ProbeEvery (and one more, probeRetryAfter later, for one that did not
// answer), so that a cluster that stops answering while nothing changes on
// the hub (a token revoked while no new one can come, a channel gone down) turns its trees to the
// display tree within that period.

package controller

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/argocd-pull/argocd-pull/internal/appstatus"
	"github.com/argocd-pull/argocd-pull/internal/gitops"
	"github.com/argocd-pull/argocd-pull/internal/metrics"
	"github.com/argocd-pull/argocd-pull/internal/resourceviews"
)

// probeConcurrency is how many clusters a probe round asks at once.
const probeConcurrency = 8

// probeRetryAfter is how long a probe round waits before it asks the clusters that did not answer
// once more: one failed request (cluster-proxy's tunnel reconnecting, a request lost) does not turn
// a cluster's trees to the display tree; two, this far apart, do.
var probeRetryAfter = 5 * time.Second

// probeClusters asks, every ProbeEvery until ctx ends, each cluster whose own tree was read
// within the TTL whether it still answers through its channel, those that did not once more after
// probeRetryAfter, and marks down one that failed both: its Applications take the display tree at
// once (ClusterTrees.failed), with one ClusterTreeNotRead that names the cluster's answer.
func (r *ResourceTreeReconciler) probeClusters(ctx context.Context) error {
	ticker := time.NewTicker(r.ClusterTrees.ProbeEvery)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
		unanswered := r.probeAll(ctx, r.ClusterTrees.toProbe(time.Now(), r.TTL))
		if len(unanswered) > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(probeRetryAfter):
			}
			unanswered = r.probeAll(ctx, slices.Sorted(maps.Keys(unanswered)))
		}
		for cluster, failed := range unanswered {
			if ctx.Err() != nil {
				return nil
			}
			metrics.ClusterProbes.WithLabelValues(metrics.ProbeFailed).Inc()
			ctrl.Log.WithName("resourcetree").Info("A cluster no longer answers through its channel: its trees are the display tree", "cluster", cluster, "reason", failed.err.Error())
			r.ClusterTrees.failed(cluster, channelOf(failed.cfg), appstatus.Truncate(failed.err.Error(), maxClusterText), time.Now())
		}
	}
}

// unanswered is a probe that failed: the channel it went through, and the cluster's answer.
type unanswered struct {
	cfg *rest.Config
	err error
}

// probeAll asks each of clusters once, probeConcurrency at once, counts those that answered, and
// returns those that did not.
func (r *ResourceTreeReconciler) probeAll(ctx context.Context, clusters []string) map[string]unanswered {
	sem := make(chan struct{}, probeConcurrency)
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		out = map[string]unanswered{}
	)
	for _, cluster := range clusters {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			cfg, err := r.probe(ctx, cluster)
			switch {
			case cfg == nil || ctx.Err() != nil:
			case err == nil:
				metrics.ClusterProbes.WithLabelValues(metrics.ProbeAnswered).Inc()
			default:
				mu.Lock()
				out[cluster] = unanswered{cfg, err}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return out
}

// probe asks cluster once, through its secret's channel as the cache holds it now (nil: it has
// none; its Applications are read again when the secret changes).
func (r *ResourceTreeReconciler) probe(ctx context.Context, cluster string) (*rest.Config, error) {
	ct := r.ClusterTrees
	secret := &corev1.Secret{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: r.ArgoCDNamespace, Name: gitops.SecretName(cluster)}, secret); err != nil {
		secret = nil
	}
	cfg, _ := resourceviews.ClusterChannel(cluster, secret, ct.Channel)
	if cfg == nil {
		ct.up.Delete(cluster) // the secret changed: its Applications are read again (applicationsOfSecret)
		return nil, nil
	}
	return cfg, resourceviews.Probe(ctx, cfg)
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
