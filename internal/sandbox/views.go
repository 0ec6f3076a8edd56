package sandbox

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitopsv1beta1 "github.com/argocd-pull/argocd-pull/api/v1beta1"
	"github.com/argocd-pull/argocd-pull/internal/assets"
	"github.com/argocd-pull/argocd-pull/internal/clusteraccess"
	"github.com/argocd-pull/argocd-pull/internal/gitops"
)

// The lab's second ApplicationSet: the documents' one in the hardened form, its destination
// naming the cluster (docs/argocd-clients.md), into a namespace of its own on each cluster.
const (
	HardenedApplicationSetName = "guestbook-hardened-app-set"
	HardenedNamespace          = "guestbook-hardened"
	// ChannelAccount is the ManagedServiceAccount the lab's GitOpsCluster names for OCM's channel.
	ChannelAccount = "argocd-pull"
)

// HardenedApplication is the name of the hardened ApplicationSet's Application of cluster.
func HardenedApplication(cluster string) string { return cluster + "-guestbook-hardened" }

// ShowViews turns OCM's channel on for the lab's clusters, as RHACM enables cluster-proxy and
// managed-serviceaccount by default (the documents' GitOpsCluster with managedServiceAccountRef),
// and creates, beside the documents' ApplicationSet, the same in the hardened form, so that a
// click on a resource of its Applications in the hub's Argo CD UI shows the cluster's live object,
// diff, events and logs. It waits until the first cluster's secret carries the channel's token.
// The documents' own Applications keep the display tree: their destination, the in-cluster
// server, is the hub to Argo CD's API server.
func (l *Lab) ShowViews(ctx context.Context, timeout time.Duration) error {
	hub, err := l.Hub.Client()
	if err != nil {
		return err
	}
	if err := l.SetChannelAccount(ctx, ChannelAccount); err != nil {
		return err
	}
	root, err := assets.RepoRoot()
	if err != nil {
		return err
	}
	if _, err := applyHardenedApplicationSet(ctx, hub, root, l.RepoURL); err != nil {
		return err
	}
	if len(l.Managed) == 0 {
		return nil
	}
	cluster := l.Managed[0].Name
	return wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		s := &corev1.Secret{}
		if err := hub.Get(ctx, client.ObjectKey{Namespace: ArgoNamespace, Name: gitops.SecretName(cluster)}, s); err != nil {
			return false, nil
		}
		token, _, err := clusteraccess.ParseClusterConfig(s.Data["config"])
		return err == nil && token != "", nil
	})
}

// SetChannelAccount sets the lab GitOpsCluster's managedServiceAccountRef ("": OCM's channel off).
func (l *Lab) SetChannelAccount(ctx context.Context, ref string) error {
	if ref != "" && l.ClusterProxy.URL == "" {
		return fmt.Errorf("this lab runs without OCM's channel (Options.NoChannel; make test's second shard, LAB_CHANNEL=off): name the test in LAB_VIEWS_TESTS")
	}
	hub, err := l.Hub.Client()
	if err != nil {
		return err
	}
	gc := &gitopsv1beta1.GitOpsCluster{}
	if err := hub.Get(ctx, client.ObjectKey{Namespace: ArgoNamespace, Name: GitOpsClusterName}, gc); err != nil {
		return fmt.Errorf("reading the lab's GitOpsCluster: %w", err)
	}
	patch := client.MergeFrom(gc.DeepCopy())
	gc.Spec.ManagedServiceAccountRef = ref
	if err := hub.Patch(ctx, gc, patch); err != nil {
		return fmt.Errorf("setting the lab GitOpsCluster's managedServiceAccountRef to %q: %w", ref, err)
	}
	return nil
}

// RemoveViews undoes ShowViews: the hardened ApplicationSet (its Applications with it) and the
// channel go.
func (l *Lab) RemoveViews(ctx context.Context) error {
	hub, err := l.Hub.Client()
	if err != nil {
		return err
	}
	set := &unstructured.Unstructured{}
	set.SetAPIVersion("argoproj.io/v1alpha1")
	set.SetKind("ApplicationSet")
	set.SetNamespace(ArgoNamespace)
	set.SetName(HardenedApplicationSetName)
	if err := hub.Delete(ctx, set); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return l.SetChannelAccount(ctx, "")
}

// applyHardenedApplicationSet creates the documents' ApplicationSet in the hardened form: another
// name, its Applications' destination the cluster by name, into HardenedNamespace, from
// WebAppPath (the guestbook's ConfigMap and a Deployment).
func applyHardenedApplicationSet(ctx context.Context, c client.Client, root, repoURL string) (*unstructured.Unstructured, error) {
	set, err := documentsApplicationSet(root, repoURL)
	if err != nil {
		return nil, err
	}
	set.SetName(HardenedApplicationSetName)
	if err := unstructured.SetNestedField(set.Object, HardenedApplication("{{name}}"), "spec", "template", "metadata", "name"); err != nil {
		return nil, err
	}
	if err := unstructured.SetNestedMap(set.Object, map[string]any{"name": "{{name}}", "namespace": HardenedNamespace}, "spec", "template", "spec", "destination"); err != nil {
		return nil, err
	}
	// The guestbook with a Deployment beside its ConfigMap: a Pod whose logs the views show.
	if err := setEachSource(set, "path", WebAppPath); err != nil {
		return nil, err
	}
	if err := c.Create(ctx, set); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating the hardened ApplicationSet: %w", err)
	}
	return set, nil
}
