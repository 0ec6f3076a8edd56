package sandbox_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/internal/gitops"
	"github.com/argocd-pull/argocd-pull/internal/sandbox"
)

// A managed cluster's registration agent may update its own ManagedCluster, client config URL
// included: that URL is the cluster's word, and a credential-free cluster secret that names the
// hub (https://kubernetes.default.svc above all, which Argo CD answers with its own in-cluster
// credentials) would turn "destination.name: cluster1" into the hub. Here cluster1's agent, with
// the certificate OCM issued it, aims its client config at each of the hub's addresses in turn;
// the GitOpsCluster's secret never names any of them, and the hub's Argo CD API server still
// resolves cluster1 to the cluster, and the hub to in-cluster.
func TestAClusterCannotAimItsClusterSecretAtTheHub(t *testing.T) {
	requireLab(t)
	hub, _ := clients(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", lab.AgentHubKubeconfig("cluster1"))
	if err != nil {
		t.Fatal(err)
	}
	agent, err := client.New(cfg, client.Options{Scheme: hub.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	const cluster = "cluster1"
	secretKey := types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: gitops.SecretName(cluster)}
	original := &clusterv1.ManagedCluster{}
	if err := agent.Get(ctx, types.NamespacedName{Name: cluster}, original); err != nil {
		t.Fatalf("cluster1's agent reads its ManagedCluster: %v", err)
	}
	t.Cleanup(func() {
		// The agent's own word again: the URL it registered with, no probe label.
		eventually(t, "cluster1's client config restored", 30*time.Second, "cluster1-registration-agent.log", func() (bool, error) {
			mc := &clusterv1.ManagedCluster{}
			if err := agent.Get(ctx, types.NamespacedName{Name: cluster}, mc); err != nil {
				return false, err
			}
			mc.Spec.ManagedClusterClientConfigs = original.Spec.ManagedClusterClientConfigs
			delete(mc.Labels, "attack-probe")
			return agent.Update(ctx, mc) == nil, nil
		})
	})

	hubURL, err := url.Parse(lab.Hub.URL)
	if err != nil {
		t.Fatal(err)
	}
	kubernetesSvc := &corev1.Service{}
	if err := hub.Get(ctx, types.NamespacedName{Namespace: "default", Name: "kubernetes"}, kubernetesSvc); err != nil {
		t.Fatal(err)
	}
	// https://kubernetes.default.svc last: Argo CD answers it with its in-cluster credentials, and the
	// CLI's checks below read the API server right after it.
	forged := []string{
		"https://kubernetes.default.svc:443",
		"https://kubernetes.default.svc.cluster.local",
		"https://kubernetes.default",
		"https://kubernetes",
		"https://KUBERNETES.DEFAULT.SVC/",
		lab.Hub.URL,
		"https://" + net.JoinHostPort("localhost", hubURL.Port()),
		"https://" + net.JoinHostPort("::1", hubURL.Port()),
		"https://" + net.JoinHostPort(kubernetesSvc.Spec.ClusterIP, "443"),
		"https://169.254.169.254",
		"https://kubernetes.default.svc",
	}
	want := "https://" + cluster + ".pull-model.invalid"
	for i, forgedURL := range forged {
		probe := fmt.Sprint(i)
		eventually(t, "cluster1's agent writes "+forgedURL, 30*time.Second, "cluster1-registration-agent.log", func() (bool, error) {
			mc := &clusterv1.ManagedCluster{}
			if err := agent.Get(ctx, types.NamespacedName{Name: cluster}, mc); err != nil {
				return false, err
			}
			mc.Spec.ManagedClusterClientConfigs = []clusterv1.ClientConfig{{URL: forgedURL}}
			if mc.Labels == nil {
				mc.Labels = map[string]string{}
			}
			mc.Labels["attack-probe"] = probe // the secret copies labels: it shows the controller read this update
			if err := agent.Update(ctx, mc); err != nil {
				return false, fmt.Errorf("as cluster1's agent: %w", err)
			}
			return true, nil
		})
		eventually(t, "the GitOpsCluster reads cluster1's update "+probe, 30*time.Second, "hub-argocd-pull.log", func() (bool, error) {
			s := &corev1.Secret{}
			if err := hub.Get(ctx, secretKey, s); err != nil {
				return false, err
			}
			return s.Labels["attack-probe"] == probe, nil
		})
		s := &corev1.Secret{}
		if err := hub.Get(ctx, secretKey, s); err != nil {
			t.Fatal(err)
		}
		if got := string(s.Data["server"]); got != want {
			t.Errorf("cluster1's agent wrote %s into its client config; %s says server %q, want %q", forgedURL, secretKey, got, want)
		}
	}

	// The hub's Argo CD API server: cluster1 is the cluster's placeholder, in-cluster is still the
	// hub, and no cluster named cluster1 is the hub.
	cli := loginArgoCD(t)
	out, err := cli.run(time.Minute, "cluster", "list", "-o", "json")
	if err != nil {
		t.Fatalf("argocd cluster list: %v\n%s", err, out)
	}
	var list []struct {
		Name   string `json:"name"`
		Server string `json:"server"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("argocd cluster list: %v\n%s", err, out)
	}
	byName := map[string]string{}
	for _, c := range list {
		byName[c.Name] = c.Server
	}
	if byName[cluster] != want || byName["in-cluster"] != "https://kubernetes.default.svc" {
		t.Errorf("argocd cluster list: %s is %q, in-cluster %q; want %q and the hub: %s", cluster, byName[cluster], byName["in-cluster"], want, out)
	}
	if out, err := cli.run(time.Minute, "cluster", "get", cluster, "-o", "json"); err != nil || !json.Valid([]byte(out)) {
		t.Errorf("argocd cluster get %s: %v\n%s", cluster, err, out)
	} else {
		var got struct {
			Server string `json:"server"`
		}
		_ = json.Unmarshal([]byte(out), &got)
		if got.Server != want {
			t.Errorf("argocd cluster get %s resolves to %q, want %q", cluster, got.Server, want)
		}
	}
}
