// What the lab creates on the hub before its components start: the registration's objects, the
// namespaces, the ManagedClusterSet and its bindings, the tenant's AppProject, and the documents'
// Placement and GitOpsCluster.

package sandbox

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitopsv1beta1 "github.com/argocd-pull/argocd-pull/api/v1beta1"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
)

// setUp creates on the hub what `clusteradm init` and the documents' setup would, and on each
// managed cluster the namespaces Applications land in. The ManagedClusters themselves are created by
// their registration agents (startRegistrationAgent) and accepted by the lab (accept).
func (l *Lab) setUp(ctx context.Context) error {
	hub, err := l.Hub.Client()
	if err != nil {
		return err
	}
	if err := setUpHubRegistration(ctx, hub); err != nil {
		return err
	}
	objects := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ArgoNamespace}},
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: ClusterSetName}},
		&clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: ClusterSetName, Namespace: ArgoNamespace},
			Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: ClusterSetName}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: TenantNamespace}},
		&clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: ClusterSetName, Namespace: TenantNamespace},
			Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: ClusterSetName}},
		tenantProject(),
		Placement(PlacementName, ArgoNamespace, ClusterSetName),
		GitOpsCluster(PlacementName, ArgoNamespace),
	}
	for _, o := range objects {
		if err := hub.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s on the hub: %w", o, o.GetName(), err)
		}
	}
	for _, c := range l.Managed {
		spoke, err := c.Client()
		if err != nil {
			return err
		}
		for _, ns := range []string{ArgoNamespace, TenantNamespace, agentNamespace()} {
			if err := spoke.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating namespace %s on %s: %w", ns, c.Name, err)
			}
		}
	}
	return nil
}

// Placement is the lab's Placement of every cluster of clusterSet. OCM taints a cluster whose lease
// ran out (unreachable) or that reports itself unhealthy (unavailable), and a Placement drops
// tainted clusters from its decisions unless it tolerates the taint: the ApplicationSet would then
// delete that cluster's Application, and nothing would be left to show stale. This one keeps them
// (see README, status).
func Placement(name, namespace, clusterSet string) *clusterv1beta1.Placement {
	return &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: clusterv1beta1.PlacementSpec{ClusterSets: []string{clusterSet}, Tolerations: []clusterv1beta1.Toleration{
			{Key: clusterv1.ManagedClusterTaintUnreachable, Operator: clusterv1beta1.TolerationOpExists},
			{Key: clusterv1.ManagedClusterTaintUnavailable, Operator: clusterv1beta1.TolerationOpExists},
		}}}
}

// GitOpsClusterName is the documents' GitOpsCluster's name.
const GitOpsClusterName = "argo-ocm-importer"

// GitOpsCluster is the documents' GitOpsCluster registering the clusters of
// the Placement named placement with the Argo CD of namespace.
func GitOpsCluster(placement, namespace string) *gitopsv1beta1.GitOpsCluster {
	return &gitopsv1beta1.GitOpsCluster{ObjectMeta: metav1.ObjectMeta{Name: GitOpsClusterName, Namespace: namespace},
		Spec: gitopsv1beta1.GitOpsClusterSpec{
			ArgoServer:   gitopsv1beta1.ArgoServerSpec{Cluster: "notused", ArgoNamespace: namespace},
			PlacementRef: &corev1.ObjectReference{Kind: "Placement", APIVersion: "cluster.open-cluster-management.io/v1beta1", Name: placement},
		}}
}

// tenantProject is the lab tenant's AppProject, in the hub's Argo CD namespace: it travels to the
// managed clusters' Argo CD namespace with the tenant's Applications.
func tenantProject() *unstructured.Unstructured {
	p := argocd.NewAppProject()
	p.SetName(TenantProject)
	p.SetNamespace(ArgoNamespace)
	p.Object["spec"] = map[string]any{
		"sourceRepos":      []any{"*"},
		"sourceNamespaces": []any{TenantNamespace},
		"destinations":     []any{map[string]any{"server": argocd.LocalServer, "namespace": TenantNamespace}},
	}
	return p
}
