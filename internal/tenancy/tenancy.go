// Package tenancy decides which managed clusters a hub namespace may deliver Applications to.
//
// A tenant who may create Applications in namespace N may only reach clusters bound to N: a
// cluster in a ManagedClusterSet that a ManagedClusterSetBinding in N binds. The binding is the
// authority; a PlacementDecision is never evidence of one (a tenant may be able to write its
// status), and a Placement in N can only select clusters of sets bound to N anyway. The hub itself
// is never a target.
package tenancy

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	v1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Bindings is what namespace N has: its ManagedClusterSetBindings, with their sets.
type Bindings struct {
	// Sets are the ManagedClusterSets bound to the namespace (bindings whose set exists).
	Sets []clusterv1beta2.ManagedClusterSet
}

// ReadBindings reads what namespace has: its ManagedClusterSetBindings, with the sets that exist.
func ReadBindings(ctx context.Context, c client.Reader, namespace string) (Bindings, error) {
	var b Bindings
	bindings := &clusterv1beta2.ManagedClusterSetBindingList{}
	if err := c.List(ctx, bindings, client.InNamespace(namespace)); err != nil {
		return b, fmt.Errorf("listing ManagedClusterSetBindings in %s: %w", namespace, err)
	}
	for _, binding := range bindings.Items {
		set := clusterv1beta2.ManagedClusterSet{}
		if err := c.Get(ctx, client.ObjectKey{Name: binding.Spec.ClusterSet}, &set); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return b, fmt.Errorf("reading ManagedClusterSet %s: %w", binding.Spec.ClusterSet, err)
		}
		b.Sets = append(b.Sets, set)
	}
	return b, nil
}

// LocalClusterName and LocalClusterLabel name the hub's own ManagedCluster: OCM registers the hub
// as "local-cluster", labelled local-cluster=true (RHACM and clusteradm alike).
const (
	LocalClusterName  = "local-cluster"
	LocalClusterLabel = "local-cluster"
)

// IsHub reports whether a cluster name, or a ManagedCluster (nil when it does not exist), is the
// hub itself, which is never a target.
func IsHub(name string, cluster *clusterv1.ManagedCluster) bool {
	return name == LocalClusterName || cluster != nil && cluster.Labels[LocalClusterLabel] == "true"
}

// Allows reports whether the namespace's bindings reach the cluster, and says how.
func (b Bindings) Allows(cluster *clusterv1.ManagedCluster) (bool, string) {
	for i := range b.Sets {
		ok, err := SetSelects(&b.Sets[i], cluster)
		if err == nil && ok {
			return true, fmt.Sprintf("ManagedClusterSet %s", b.Sets[i].Name)
		}
	}
	return false, ""
}

// SetSelects reports whether a ManagedClusterSet contains the cluster.
func SetSelects(set *clusterv1beta2.ManagedClusterSet, cluster *clusterv1.ManagedCluster) (bool, error) {
	sel := set.Spec.ClusterSelector
	switch sel.SelectorType {
	case clusterv1beta2.LabelSelector:
		if sel.LabelSelector == nil {
			return false, nil
		}
		s, err := v1.LabelSelectorAsSelector(sel.LabelSelector)
		if err != nil {
			return false, fmt.Errorf("parsing the label selector of ManagedClusterSet %s: %w", set.Name, err)
		}
		return s.Matches(labels.Set(cluster.Labels)), nil
	default: // ExclusiveClusterSetLabel, the default
		return cluster.Labels[clusterv1beta2.ClusterSetLabel] == set.Name, nil
	}
}

// JoinedByOwnLabels reports whether a cluster may make itself a member of the set: a label-selector
// set whose selector requires a label other than the clusterset label. An accepted cluster's
// registration agent may update its own ManagedCluster (OCM's role for it grants update), and
// OCM's webhook checks the change of one label only, the clusterset label, whose change needs
// managedclustersets/join on both sets. An exclusive-label set is that label; an empty selector
// selects every cluster anyway.
func JoinedByOwnLabels(set *clusterv1beta2.ManagedClusterSet) bool {
	sel := set.Spec.ClusterSelector
	if sel.SelectorType != clusterv1beta2.LabelSelector || sel.LabelSelector == nil {
		return false
	}
	for key := range sel.LabelSelector.MatchLabels {
		if key != clusterv1beta2.ClusterSetLabel {
			return true
		}
	}
	for _, e := range sel.LabelSelector.MatchExpressions {
		if e.Key != clusterv1beta2.ClusterSetLabel {
			return true
		}
	}
	return false
}
