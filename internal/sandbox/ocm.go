package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// How the lab registers its managed clusters: as `clusteradm init`, `clusteradm join` and
// `clusteradm accept` do. The hub runs OCM's registration controller; a bootstrap service account
// may only create a ManagedCluster and a CertificateSigningRequest; each cluster's registration
// agent joins with it, the lab approves the CSR and accepts the cluster, the hub's
// kube-controller-manager signs the agent's client certificate, and OCM's hub controller creates
// the cluster's namespace and the agents' RBAC. Both agents then use that certificate
// (user system:open-cluster-management:<cluster>:<agent id>), with exactly OCM's rights on the hub.
const (
	// OCMHubNamespace is where OCM's hub components and the bootstrap service account live.
	OCMHubNamespace = "open-cluster-management"
	// BootstrapServiceAccount is the identity a joining agent uses until its CSR is approved
	// (clusteradm init --use-bootstrap-token=false).
	BootstrapServiceAccount = "agent-registration-bootstrap"
	// bootstrapClusterRole is OCM's (deploy/cluster-manager chart): create ManagedClusters and CSRs,
	// join cluster sets, nothing else.
	bootstrapClusterRole = "open-cluster-management:bootstrap"
	// LeaseDurationSeconds is the lab clusters' lease. OCM's hub marks a cluster's availability
	// Unknown when its lease has not been renewed for five of them: 25 s in the lab, 5 minutes with
	// OCM's default of 60 s.
	LeaseDurationSeconds = 5
	// ClusterSetName is the ManagedClusterSet the lab's clusters join, bound to the Argo CD and
	// tenant namespaces.
	ClusterSetName = "gitops"
)

// ClusterLabels are the labels the lab gives each ManagedCluster on acceptance, like the blog's.
func ClusterLabels(name string) map[string]string {
	return map[string]string{clusterv1beta2.ClusterSetLabel: ClusterSetName, "name": name, "cloud": "AWS", "vendor": "Kubernetes"}
}

// agentNamespace is where OCM's agents keep their hub kubeconfig Secret on the managed cluster. The
// agents take it from the service account namespace file when one is mounted (as when this lab
// runs inside a pod, e.g. in CI) and have no flag for it, so the lab follows the same rule.
func agentNamespace() string {
	if ns, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil && len(ns) > 0 {
		return strings.TrimSpace(string(ns))
	}
	return WorkAgentNamespace
}

// setUpHubRegistration creates what `clusteradm init` adds for joining clusters: the bootstrap
// service account and OCM's bootstrap ClusterRole bound to it.
func setUpHubRegistration(ctx context.Context, hub client.Client) error {
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: OCMHubNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: BootstrapServiceAccount, Namespace: OCMHubNamespace}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: bootstrapClusterRole}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}},
			{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"create", "get", "list", "watch"}},
			{APIGroups: []string{clusterv1.GroupName}, Resources: []string{"managedclusters"}, Verbs: []string{"get", "create", "list", "watch"}},
			{APIGroups: []string{clusterv1.GroupName}, Resources: []string{"managedclustersets/join"}, Verbs: []string{"create"}},
		}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: bootstrapClusterRole + ":agent-registration"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: bootstrapClusterRole},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: BootstrapServiceAccount, Namespace: OCMHubNamespace}}},
	}
	for _, o := range objs {
		if err := client.IgnoreAlreadyExists(hub.Create(ctx, o)); err != nil {
			return fmt.Errorf("creating %T %s on the hub: %w", o, o.GetName(), err)
		}
	}
	return nil
}

// writeBootstrapKubeconfig writes the kubeconfig `clusteradm join` hands the agent: the hub's
// address and CA and a token of the bootstrap service account.
func writeBootstrapKubeconfig(ctx context.Context, hub *Cluster, path string) error {
	cs, err := kubernetes.NewForConfig(hub.Config)
	if err != nil {
		return err
	}
	year := int64(365 * 24 * 3600)
	tr, err := cs.CoreV1().ServiceAccounts(OCMHubNamespace).CreateToken(ctx, BootstrapServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &year}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("requesting a bootstrap token: %w", err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["hub"] = &clientcmdapi.Cluster{Server: hub.URL, CertificateAuthorityData: hub.Config.CAData}
	cfg.AuthInfos["bootstrap"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["bootstrap"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "bootstrap"}
	cfg.CurrentContext = "bootstrap"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return err
	}
	return os.Chmod(path, 0o600)
}

// hubKubeconfigDir is where a cluster's registration agent writes the hub kubeconfig it obtained
// (OCM's --hub-kubeconfig-dir, the mount of its hub-kubeconfig-secret in a klusterlet pod).
func hubKubeconfigDir(dir string, c *Cluster) string {
	return filepath.Join(dir, c.Name, "hub-kubeconfig")
}

// startRegistrationAgent starts a managed cluster's registration agent: it joins the hub (or, on a
// restarted lab, finds its certificate still valid) and keeps the cluster's lease.
func (l *Lab) startRegistrationAgent(ctx context.Context, ocmBin string, c *Cluster, ports *portBook) error {
	bootstrap := filepath.Join(l.Dir, c.Name, "bootstrap-hub.kubeconfig")
	if err := writeBootstrapKubeconfig(ctx, l.Hub, bootstrap); err != nil {
		return err
	}
	listen, err := ports.addr(c.Name + "-registration-agent")
	if err != nil {
		return err
	}
	_, err = start(l.Dir, c.Name+"-registration-agent", filepath.Join(ocmBin, "registration-agent"), []string{
		"--cluster-name=" + c.Name, "--kubeconfig=" + c.Kubeconfig,
		"--bootstrap-kubeconfig=" + bootstrap, "--hub-kubeconfig-dir=" + hubKubeconfigDir(l.Dir, c),
		"--spoke-external-server-urls=" + c.URL, "--disable-leader-election", "--listen=" + listen,
	})
	return err
}

// startWorkAgent starts a managed cluster's work agent on the hub kubeconfig its registration
// agent obtained.
func (l *Lab) startWorkAgent(ocmBin string, c *Cluster, ports *portBook) error {
	listen, err := ports.addr(c.Name + "-work-agent")
	if err != nil {
		return err
	}
	_, err = start(l.Dir, c.Name+"-work-agent", filepath.Join(ocmBin, "work-agent"), []string{
		"--spoke-cluster-name=" + c.Name, "--workload-source-config=" + filepath.Join(hubKubeconfigDir(l.Dir, c), "kubeconfig"),
		"--kubeconfig=" + c.Kubeconfig, "--feature-gates=RawFeedbackJsonString=true", "--disable-leader-election", "--listen=" + listen,
	})
	return err
}

// accept does what `clusteradm accept` does once the cluster's agent has asked to join: approve
// its pending CSRs and set hubAcceptsClient; it also gives the cluster the lab's labels and lease.
// It returns when the agent has joined with a signed certificate.
func (l *Lab) accept(ctx context.Context, c *Cluster, timeout time.Duration) error {
	hub, err := l.Hub.Client()
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(l.Hub.Config)
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(hubKubeconfigDir(l.Dir, c), "kubeconfig")
	deadline := time.Now().Add(timeout)
	for {
		mc := &clusterv1.ManagedCluster{}
		err := hub.Get(ctx, types.NamespacedName{Name: c.Name}, mc)
		if err == nil {
			if err := acceptCluster(ctx, hub, mc); err != nil {
				return err
			}
			if err := approveCSRs(ctx, cs, c.Name); err != nil {
				return err
			}
			if _, statErr := os.Stat(kubeconfig); statErr == nil && meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionJoined) {
				return nil
			}
		} else if client.IgnoreNotFound(err) != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not join the hub within %s; read %s", c.Name, timeout, filepath.Join(l.Dir, "logs", c.Name+"-registration-agent.log"))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// acceptCluster sets hubAcceptsClient, the lab's lease and labels, by a merge patch of only what
// differs (the agent and OCM's hub controller write the same object).
func acceptCluster(ctx context.Context, hub client.Client, mc *clusterv1.ManagedCluster) error {
	want := ClusterLabels(mc.Name)
	labels := map[string]any{}
	for k, v := range want {
		if mc.Labels[k] != v {
			labels[k] = v
		}
	}
	if mc.Spec.HubAcceptsClient && mc.Spec.LeaseDurationSeconds == LeaseDurationSeconds && len(labels) == 0 {
		return nil
	}
	patch := map[string]any{"spec": map[string]any{"hubAcceptsClient": true, "leaseDurationSeconds": LeaseDurationSeconds}}
	if len(labels) > 0 {
		patch["metadata"] = map[string]any{"labels": labels}
	}
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	if err := hub.Patch(ctx, mc, client.RawPatch(types.MergePatchType, data)); err != nil {
		return fmt.Errorf("accepting ManagedCluster %s: %w", mc.Name, err)
	}
	return nil
}

// approveCSRs approves the cluster's pending registration CSRs, as `clusteradm accept` does: those
// labelled with its name and asked for by the bootstrap identity or the cluster's own agents.
func approveCSRs(ctx context.Context, cs kubernetes.Interface, cluster string) error {
	list, err := cs.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{
		LabelSelector: clusterv1.ClusterNameLabelKey + "=" + cluster})
	if err != nil {
		return err
	}
	bootstrapUser := "system:serviceaccount:" + OCMHubNamespace + ":" + BootstrapServiceAccount
	agentUsers := "system:open-cluster-management:" + cluster + ":"
	for i := range list.Items {
		csr := &list.Items[i]
		if decided(csr) || (csr.Spec.Username != bootstrapUser && !strings.HasPrefix(csr.Spec.Username, agentUsers)) {
			continue
		}
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue,
			Reason: "LabAccepted", Message: "approved by argocd-pull sandbox, as clusteradm accept does"})
		if _, err := cs.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("approving CSR %s of %s: %w", csr.Name, cluster, err)
		}
	}
	return nil
}

func decided(csr *certificatesv1.CertificateSigningRequest) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved || c.Type == certificatesv1.CertificateDenied {
			return true
		}
	}
	return false
}

// startRegistrationController starts OCM's registration hub controller.
func startRegistrationController(dir, ocmBin string, hub *Cluster, ports *portBook) error {
	listen, err := ports.addr("hub-registration-controller")
	if err != nil {
		return err
	}
	_, err = start(dir, "hub-registration-controller", filepath.Join(ocmBin, "registration-controller"), []string{
		"--kubeconfig=" + hub.Kubeconfig, "--disable-leader-election", "--listen=" + listen,
	})
	return err
}

// AgentHubKubeconfig is the hub kubeconfig OCM's registration issued to a managed cluster's agents
// (client certificate of system:open-cluster-management:<cluster>:<agent id>).
func (l *Lab) AgentHubKubeconfig(cluster string) string {
	return filepath.Join(l.Dir, cluster, "hub-kubeconfig", "kubeconfig")
}
