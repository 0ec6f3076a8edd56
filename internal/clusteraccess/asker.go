package clusteraccess

import (
	"fmt"
	"slices"
	"strings"
)

// Reasons a GitOpsCluster may not ask for OCM's channel to a cluster at all: its secret stays
// credential-free, and no account is made there for it.
const (
	// ReasonChannelNotAllowedHere: the GitOpsCluster is not in an Argo CD namespace the install
	// names (--argocd-namespace, --gitops-namespaces): a tenant's namespace granted one for its
	// secrets is not.
	ReasonChannelNotAllowedHere = "ChannelNotAllowedHere"
	// ReasonHubNotReached: the cluster is the hub itself, which the channel never reaches.
	ReasonHubNotReached = "HubNotReached"
	// ReasonClusterNotBound: no ManagedClusterSet bound to the GitOpsCluster's namespace holds the
	// cluster; a PlacementDecision is never evidence of a binding.
	ReasonClusterNotBound = "ClusterNotBound"
)

// Asker is what the hub knows of a GitOpsCluster that asks, with managedServiceAccountRef, for
// OCM's channel to one cluster: its namespace, the namespaces the install lets ask (Allowed),
// whether the cluster is the hub, and whether a set bound to that namespace holds the cluster.
type Asker struct {
	Namespace, Cluster string
	Allowed            []string
	Hub, Bound         bool
}

// DecideAsker says why the GitOpsCluster may not have the channel to the cluster (the zero
// Refusal when it may). The channel's account reads the whole cluster, and its token goes into a
// cluster secret that every push-model Application and clusters generator of that Argo CD
// namespace whose project names the cluster can use: so only a GitOpsCluster of an Argo CD
// namespace the install names may ask for it, for the clusters bound to its namespace, never for
// the hub (issue 92, hole 4).
func DecideAsker(a Asker) Refusal {
	switch {
	case !slices.Contains(a.Allowed, a.Namespace):
		return Refusal{ReasonChannelNotAllowedHere, fmt.Sprintf(
			"managedServiceAccountRef is honoured only for GitOpsClusters in the Argo CD namespaces the install names (%s): this one is in %s, so %s's secret stays credential-free and no account is made for it",
			strings.Join(a.Allowed, ", "), a.Namespace, a.Cluster)}
	case a.Hub:
		return Refusal{ReasonHubNotReached, fmt.Sprintf("%s is the hub itself, which OCM's channel never reaches for Argo CD: its secret stays credential-free", a.Cluster)}
	case !a.Bound:
		return Refusal{ReasonClusterNotBound, fmt.Sprintf(
			"no ManagedClusterSet bound to namespace %s holds %s (a ManagedClusterSetBinding there gives it): its secret stays credential-free and no account is made for it", a.Namespace, a.Cluster)}
	}
	return Refusal{}
}
