package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/gitops"
)

const (
	argoNamespace = "argocd"
	clusterSet    = "bench"
)

// fleet names what the benchmark creates at one size: clusters and ApplicationSets, and one
// pull-model Application per pair, as the ApplicationSet controller would create it.
type fleet struct {
	clusters []string
	appSets  []string
	// steps, when above 0, labels each ManagedCluster with its RollingSync step (stepLabel):
	// (its number - 1) mod steps, the step the goTemplate rollouts derive from its name.
	steps int
}

func newFleet(clusters, appSets int) fleet {
	var f fleet
	for i := range clusters {
		f.clusters = append(f.clusters, fmt.Sprintf("cluster%04d", i+1))
	}
	for i := range appSets {
		f.appSets = append(f.appSets, fmt.Sprintf("appset%02d", i+1))
	}
	return f
}

func (f fleet) apps() int { return len(f.clusters) * len(f.appSets) }

func appName(appSet, cluster string) string { return cluster + "-" + appSet }

// parallel runs do(0..n-1) on workers goroutines and returns the first error.
func parallel(ctx context.Context, n, workers int, do func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := do(ctx, i); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

// create makes the hub state: the clusters (createClusters), the ApplicationSets, and their
// Applications.
func (f fleet) create(ctx context.Context, c client.Client, workers int, lease time.Duration, progress func(string, ...any)) error {
	if err := f.createClusters(ctx, c, workers, lease, progress); err != nil {
		return err
	}
	return f.createApplications(ctx, c, workers, progress)
}

// createClusters makes the Argo CD namespace, a ManagedClusterSet bound to it, and the clusters
// (Available) with their namespaces and leases.
func (f fleet) createClusters(ctx context.Context, c client.Client, workers int, lease time.Duration, progress func(string, ...any)) error {
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: argoNamespace}},
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: clusterSet}},
		&clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: clusterSet, Namespace: argoNamespace},
			Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: clusterSet}},
	} {
		if err := c.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}
	err := parallel(ctx, len(f.clusters), workers, func(ctx context.Context, i int) error {
		name := f.clusters[i]
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			return err
		}
		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: f.clusterLabels(i)},
			Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
		if err := c.Create(ctx, mc); err != nil {
			return err
		}
		mc.Status.Conditions = []metav1.Condition{{Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionTrue,
			Reason: "ManagedClusterAvailable", LastTransitionTime: metav1.Now()}}
		if err := c.Status().Update(ctx, mc); err != nil {
			return err
		}
		if lease <= 0 {
			return nil
		}
		return c.Create(ctx, newClusterLease(name, lease))
	})
	if err != nil {
		return fmt.Errorf("creating clusters: %w", err)
	}
	progress("%d ManagedClusters, Available, with their namespaces", len(f.clusters))
	return nil
}

// clusterLabels are the labels of the ManagedCluster clusters[i]: its set, and its step.
func (f fleet) clusterLabels(i int) map[string]string {
	labels := map[string]string{clusterv1beta2.ClusterSetLabel: clusterSet}
	if f.steps > 0 {
		labels[stepLabel] = strconv.Itoa(i % f.steps) // cluster0001 is clusters[0]
	}
	return labels
}

// createClusterSecrets registers every cluster with Argo CD as the GitOpsCluster does (its
// labels copied; no credentials), for a hub without argocd-pull: the limit scenario's.
func (f fleet) createClusterSecrets(ctx context.Context, c client.Client, workers int) error {
	return parallel(ctx, len(f.clusters), workers, func(ctx context.Context, i int) error {
		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: f.clusters[i], Labels: f.clusterLabels(i)}}
		return c.Create(ctx, gitops.ClusterSecret(mc, argoNamespace, "bench"))
	})
}

// createApplications makes the ApplicationSets and one pull-model Application per cluster of
// each, as the ApplicationSet controller would.
func (f fleet) createApplications(ctx context.Context, c client.Client, workers int, progress func(string, ...any)) error {
	owners := make([]metav1.OwnerReference, len(f.appSets))
	for i, name := range f.appSets {
		set := &unstructured.Unstructured{}
		set.SetGroupVersionKind(argocd.ApplicationSetGVK)
		set.SetNamespace(argoNamespace)
		set.SetName(name)
		set.Object["spec"] = map[string]any{"generators": []any{}, "template": map[string]any{"metadata": map[string]any{}, "spec": map[string]any{
			"project": "default", "destination": map[string]any{}, "source": map[string]any{"repoURL": "https://git.example/apps"}}}}
		if err := c.Create(ctx, set); err != nil {
			return fmt.Errorf("creating ApplicationSet %s: %w", name, err)
		}
		owners[i] = metav1.OwnerReference{APIVersion: "argoproj.io/v1alpha1", Kind: "ApplicationSet", Name: name, UID: set.GetUID(),
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	}
	err := parallel(ctx, f.apps(), workers, func(ctx context.Context, i int) error {
		set, cluster := i/len(f.clusters), f.clusters[i%len(f.clusters)]
		return c.Create(ctx, pullApplication(f.appSets[set], cluster, owners[set]))
	})
	if err != nil {
		return fmt.Errorf("creating Applications: %w", err)
	}
	progress("%d ApplicationSets with %d pull-model Applications", len(f.appSets), f.apps())
	return nil
}

// pullApplication is the Application the documents' ApplicationSet template generates for cluster.
func pullApplication(appSet, cluster string, owner metav1.OwnerReference) *unstructured.Unstructured {
	app := argocd.NewApplication()
	app.SetNamespace(argoNamespace)
	app.SetName(appName(appSet, cluster))
	app.SetLabels(map[string]string{api.PullLabel: "true"})
	app.SetAnnotations(map[string]string{api.ClusterAnnotation: cluster, argocd.SkipReconcileAnnotation: "true",
		api.AppNamespaceAnnotation: argoNamespace})
	app.SetOwnerReferences([]metav1.OwnerReference{owner})
	app.Object["spec"] = map[string]any{
		"project":     "default",
		"source":      map[string]any{"repoURL": "https://github.com/argoproj/argocd-example-apps.git", "path": "guestbook", "targetRevision": "HEAD"},
		"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": "guestbook"},
		"syncPolicy":  map[string]any{"automated": map[string]any{"prune": true}, "syncOptions": []any{"CreateNamespace=true"}},
	}
	return app
}
