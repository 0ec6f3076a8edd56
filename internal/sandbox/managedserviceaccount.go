package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// OCM's managed-serviceaccount add-on keeps, for each ManagedServiceAccount in a cluster's
// namespace on the hub, a ServiceAccount of that name on the cluster and its short-lived token in
// a Secret beside it on the hub. The lab runs it as an OCM hub runs an add-on, with the real
// programs: the add-on is enabled for each cluster (its ClusterManagementAddOn, and a
// ManagedClusterAddOn per cluster, as `clusteradm addon enable` makes them); its manager on the
// hub registers the agents (their hub identity, their RBAC in the cluster's namespace, the approval
// of their CSRs) and delivers the agent's namespace and rights on each cluster in a ManifestWork;
// each cluster's OCM registration agent gets the agent's hub certificate and writes its
// kubeconfig into that namespace; the lab starts the agent on it, as a pod would mount it.

const (
	// ManagedServiceAccountAddon is the add-on's name: its ClusterManagementAddOn, each cluster's
	// ManagedClusterAddOn, its lease.
	ManagedServiceAccountAddon = "managed-serviceaccount"
	// ClusterProxyAddon is cluster-proxy's add-on name (clusterproxy.go).
	ClusterProxyAddon = "cluster-proxy"
	// AddonInstallNamespace is where OCM installs add-on agents on a cluster (the default of a
	// ManagedClusterAddOn), and where managed-serviceaccount makes its ServiceAccounts.
	AddonInstallNamespace = "open-cluster-management-agent-addon"
	// addonManagerNamespace is the hub namespace of the add-on's manager, as its chart installs it.
	addonManagerNamespace = "open-cluster-management-addon"
)

// ManagedServiceAccountCRD is the file of the ManagedServiceAccount CRD the Makefile copies beside
// the add-on's binaries.
func ManagedServiceAccountCRD(bin string) string {
	return filepath.Join(bin, "authentication.open-cluster-management.io_managedserviceaccounts.yaml")
}

// startManagedServiceAccount enables the add-on for every cluster, starts its manager, and starts
// each cluster's agent once the cluster's registration has issued its hub kubeconfig.
func (l *Lab) startManagedServiceAccount(ctx context.Context, bin string) error {
	done := l.progress.step("hub: managed-serviceaccount's manager; managed clusters: its agents, on the hub credentials OCM's registration issues them")
	hub, err := l.Hub.Client()
	if err != nil {
		return err
	}
	if err := enableAddon(ctx, hub, ManagedServiceAccountAddon, l.Managed); err != nil {
		return err
	}
	if _, err := start(l.Dir, "hub-managed-serviceaccount-manager", filepath.Join(bin, "managed-serviceaccount"), []string{
		"manager", "--kubeconfig=" + l.Hub.Kubeconfig, "--metrics-bind-address=0", "--health-probe-bind-address=0",
		// The image its ManifestWork names (no kubelet runs it): the release the lab built.
		"--agent-image-name=quay.io/open-cluster-management/managed-serviceaccount:" + filepath.Base(bin),
	}, "NAMESPACE="+addonManagerNamespace); err != nil {
		return err
	}
	for _, c := range l.Managed {
		cl, err := c.Client()
		if err != nil {
			return err
		}
		kubeconfig, err := l.addonHubKubeconfig(ctx, cl, c.Name, ManagedServiceAccountAddon, 2*time.Minute)
		if err != nil {
			return err
		}
		started := time.Now()
		if _, err := start(l.Dir, c.Name+"-managed-serviceaccount-agent", filepath.Join(bin, "agent"), []string{
			"--kubeconfig=" + kubeconfig, "--spoke-kubeconfig=" + c.Kubeconfig, "--cluster-name=" + c.Name,
		}, "NAMESPACE="+AddonInstallNamespace); err != nil {
			return err
		}
		if err := waitAddonLease(ctx, cl, c.Name, ManagedServiceAccountAddon, started.Add(-time.Second), time.Minute); err != nil {
			return err
		}
	}
	done()
	return nil
}

// waitAddonLease waits until an add-on's agent on the cluster cl reaches has renewed its lease (in
// the install namespace, which OCM reads to call the add-on available) since the time given: the
// agent runs.
func waitAddonLease(ctx context.Context, cl client.Client, cluster, addon string, since time.Time, timeout time.Duration) error {
	var lease coordinationv1.Lease
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := cl.Get(ctx, client.ObjectKey{Namespace: AddonInstallNamespace, Name: addon}, &lease); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return lease.Spec.RenewTime != nil && !lease.Spec.RenewTime.Time.Before(since), nil
	})
	if err != nil {
		return fmt.Errorf("%s: the %s agent renewed no lease within %s (see logs/%s-%s-agent.log): %w", cluster, addon, timeout, cluster, addon, err)
	}
	return nil
}

// enableAddon makes the add-on's ClusterManagementAddOn and a ManagedClusterAddOn in each
// cluster's namespace that it owns, as `clusteradm addon enable` does; kept if they exist.
func enableAddon(ctx context.Context, hub client.Client, name string, clusters []*Cluster) error {
	cma := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "addon.open-cluster-management.io/v1alpha1", "kind": "ClusterManagementAddOn",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"addOnMeta":        map[string]any{"displayName": name, "description": name},
			"supportedConfigs": []any{map[string]any{"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs"}},
		},
	}}
	if err := hub.Create(ctx, cma); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("enabling the add-on %s: %w", name, err)
	}
	if err := hub.Get(ctx, client.ObjectKey{Name: name}, cma); err != nil {
		return err
	}
	owner := []any{map[string]any{
		"apiVersion": "addon.open-cluster-management.io/v1alpha1", "kind": "ClusterManagementAddOn",
		"name": name, "uid": string(cma.GetUID()), "controller": true,
	}}
	for _, c := range clusters {
		mca := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "addon.open-cluster-management.io/v1alpha1", "kind": "ManagedClusterAddOn",
			"metadata": map[string]any{"name": name, "namespace": c.Name, "ownerReferences": owner},
			"spec":     map[string]any{"installNamespace": AddonInstallNamespace},
		}}
		if err := hub.Create(ctx, mca); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("enabling the add-on %s for %s: %w", name, c.Name, err)
		}
	}
	return nil
}

// addonHubKubeconfig waits for the hub kubeconfig OCM's registration agent writes for an add-on's
// agent on the cluster cl reaches (Secret <addon>-hub-kubeconfig in the install namespace), writes
// its files under the lab's directory, as a pod would mount them, and returns the kubeconfig's path.
func (l *Lab) addonHubKubeconfig(ctx context.Context, cl client.Client, cluster, addon string, timeout time.Duration) (string, error) {
	var secret corev1.Secret
	key := client.ObjectKey{Namespace: AddonInstallNamespace, Name: addon + "-hub-kubeconfig"}
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := cl.Get(ctx, key, &secret); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return len(secret.Data["kubeconfig"]) > 0 && len(secret.Data["tls.crt"]) > 0 && len(secret.Data["tls.key"]) > 0, nil
	})
	if err != nil {
		return "", fmt.Errorf("%s: no hub kubeconfig for the %s agent in %s/%s after %s (is the add-on's manager running? see logs/hub-%s-manager.log): %w",
			cluster, addon, key.Namespace, key.Name, timeout, addon, err)
	}
	dir := filepath.Join(l.Dir, cluster, addon+"-hub-kubeconfig")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	for _, k := range []string{"kubeconfig", "tls.crt", "tls.key"} {
		if err := os.WriteFile(filepath.Join(dir, k), secret.Data[k], 0o600); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, "kubeconfig"), nil
}
