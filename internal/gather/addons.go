package gather

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/internal/clusteraccess"
)

// ChannelAddOns reads the cluster's add-ons of the hub's channel (clusteraccess): which are
// Available, and the namespace managed-serviceaccount's agent runs in, where it makes the
// ServiceAccounts (the add-on framework's status; spec.installNamespace is deprecated for
// AddOnDeploymentConfigs, which fill it), clusteraccess.DefaultServiceAccountNamespace when it
// does not say. An add-on that is not there, or whose API the hub does not serve, is not
// Available. The GitOpsCluster controller and the doctor read it alike.
func ChannelAddOns(ctx context.Context, c client.Reader, cluster string) (available map[string]bool, accountNamespace string, err error) {
	available, accountNamespace = map[string]bool{}, clusteraccess.DefaultServiceAccountNamespace
	for _, name := range []string{clusteraccess.ClusterProxyAddOn, clusteraccess.ManagedServiceAccountAddOn} {
		addOn := &addonv1alpha1.ManagedClusterAddOn{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: cluster, Name: name}, addOn); err != nil {
			if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
				available[name] = false
				continue
			}
			return nil, "", fmt.Errorf("reading ManagedClusterAddOn %s/%s: %w", cluster, name, err)
		}
		available[name] = meta.IsStatusConditionTrue(addOn.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionAvailable)
		if ns := addOn.Status.Namespace; name == clusteraccess.ManagedServiceAccountAddOn && ns != "" {
			accountNamespace = ns
		}
	}
	return available, accountNamespace, nil
}
