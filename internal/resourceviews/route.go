package resourceviews

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/clusteraccess"
	"github.com/argocd-pull/argocd-pull/internal/gitops"
	"github.com/argocd-pull/argocd-pull/internal/tenancy"
)

// Destination is a hub Application's spec.destination: its name or server, which Argo CD's API
// server resolves to a cluster secret, and its namespace.
type Destination struct {
	Name, Server, Namespace string
}

// ReadTimeout bounds each read through the channel.
const ReadTimeout = 10 * time.Second

// Route decides whether the tree of a pull-model Application delivered to cluster is read from
// that cluster, and through what: only when the Application's destination resolves, on the hub,
// to argocd-pull's own secret for that same cluster (secret: the one the cache holds under
// gitops.SecretName(cluster), nil when none), and that secret reaches the cluster through OCM's
// channel with a token. Then the hub Argo CD's API server sends every view of the tree's uids to
// the cluster, as the read-only account; a uid on any other tree would send them elsewhere (the
// hub itself, with the API server's rights: docs/security.md). The Application's AppProject
// (project, nil when it does not exist) must permit that destination, as the hub's Argo CD would
// before it built a tree (tenancy.DestinationPermitted). why says why not, "" when it does.
func Route(dest Destination, cluster string, secret *corev1.Secret, ch clusteraccess.Channel, project *unstructured.Unstructured) (cfg *rest.Config, why string) {
	if !ch.Configured() {
		return nil, "the install names no cluster-proxy user server (--cluster-proxy-url)"
	}
	server := ch.Server(cluster)
	switch {
	case dest.Name != "" && dest.Name != cluster:
		return nil, fmt.Sprintf("its destination names %q, not its cluster %s", dest.Name, cluster)
	case dest.Name == "" && dest.Server != server:
		return nil, fmt.Sprintf("its destination is the server %q, not cluster %s's through OCM's channel", dest.Server, cluster)
	case dest.Name != "" && dest.Server != "":
		return nil, "its destination names both a cluster and a server"
	}
	cfg, why = ClusterChannel(cluster, secret, ch)
	if cfg == nil {
		return nil, why
	}
	switch {
	case project == nil:
		return nil, "its AppProject does not exist"
	case !tenancy.DestinationPermitted(project, cluster, server, dest.Namespace):
		return nil, fmt.Sprintf("its AppProject %s does not permit the destination cluster %s (server %s), namespace %q", project.GetName(), cluster, server, dest.Namespace)
	}
	return cfg, ""
}

// ClusterChannel is the way to cluster that secret (argocd-pull's cluster secret of it, as the
// cache holds it; nil when none) gives: the cluster's address on OCM's channel and its token, when
// the secret holds both. why says why not, "" when it does.
func ClusterChannel(cluster string, secret *corev1.Secret, ch clusteraccess.Channel) (cfg *rest.Config, why string) {
	if secret == nil || secret.Name != gitops.SecretName(cluster) || secret.Labels[api.ManagedByLabel] != api.ManagedByValue ||
		secret.Labels[api.ClusterLabel] != cluster || secret.Labels[gitops.SecretTypeLabel] != "cluster" {
		return nil, fmt.Sprintf("argocd-pull holds no cluster secret for %s", cluster)
	}
	server := ch.Server(cluster)
	if !ch.Configured() || string(secret.Data["name"]) != cluster || string(secret.Data["server"]) != server {
		return nil, fmt.Sprintf("the cluster secret of %s does not reach it through OCM's channel (no managedServiceAccountRef, or refused: see its GitOpsCluster)", cluster)
	}
	token, ca, err := clusteraccess.ParseClusterConfig(secret.Data["config"])
	if err != nil || token == "" {
		return nil, fmt.Sprintf("the cluster secret of %s holds no token", cluster)
	}
	return &rest.Config{Host: server, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: ca}, Timeout: ReadTimeout,
		UserAgent: "argocd-pull/resource-views"}, ""
}
