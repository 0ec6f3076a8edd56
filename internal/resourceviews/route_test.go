package resourceviews

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/argocd-pull/argocd-pull/internal/clusteraccess"
	"github.com/argocd-pull/argocd-pull/internal/gitops"
)

var channel = clusteraccess.Channel{URL: "https://cluster-proxy-addon-user.open-cluster-management-addon.svc:9092", CA: []byte("-----BEGIN CERTIFICATE-----\nCA\n"), Accounts: []string{"argocd-pull"}}

// channelSecret is cluster's secret as the GitOpsCluster controller writes it, with the channel.
func channelSecret(cluster string, token string) *corev1.Secret {
	s := gitops.WithAccess(gitops.ClusterSecret(&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}}, "openshift-gitops", "openshift-gitops/gitops"),
		channel, clusteraccess.Access{Server: channel.Server(cluster), Token: clusteraccess.Token{Value: token}})
	s.Data = map[string][]byte{}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	return s
}

func TestRouteOnlyThroughTheClustersOwnChannelSecret(t *testing.T) {
	ours := channelSecret("cluster1", "the-token")
	cfg, why := Route(Destination{Name: "cluster1"}, "cluster1", ours, channel, anywhere)
	if why != "" || cfg.Host != channel.Server("cluster1") || cfg.BearerToken != "the-token" || string(cfg.CAData) != string(channel.CA) {
		t.Fatalf("the documents' form (destination name), argocd-pull's channel secret: %v %q; want the channel to cluster1 with its token", cfg, why)
	}
	if _, why := Route(Destination{Server: channel.Server("cluster1")}, "cluster1", ours, channel, anywhere); why != "" {
		t.Errorf("the destination by the channel's server: %q, want it read", why)
	}

	credentialFree := gitops.ClusterSecret(&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster1"}}, "openshift-gitops", "c")
	credentialFree.Data = map[string][]byte{"name": []byte("cluster1"), "server": []byte(gitops.Server("cluster1"))}
	tokenless := channelSecret("cluster1", "the-token")
	tokenless.Data["config"] = []byte(`{"tlsClientConfig":{"caData":"Q0E="}}`)
	theirs := channelSecret("cluster1", "the-token")
	theirs.Labels = map[string]string{gitops.SecretTypeLabel: "cluster"}
	for _, c := range []struct {
		name    string
		dest    Destination
		cluster string
		secret  *corev1.Secret
		ch      clusteraccess.Channel
		why     string
	}{
		{"no channel configured", Destination{Name: "cluster1"}, "cluster1", ours, clusteraccess.Channel{}, "--cluster-proxy-url"},
		{"another cluster's name", Destination{Name: "cluster2"}, "cluster1", ours, channel, `names "cluster2"`},
		{"the hub", Destination{Server: "https://kubernetes.default.svc"}, "cluster1", ours, channel, `the server "https://kubernetes.default.svc"`},
		{"the hub by name", Destination{Name: "in-cluster"}, "cluster1", ours, channel, `names "in-cluster"`},
		{"a name and a server", Destination{Name: "cluster1", Server: "https://kubernetes.default.svc"}, "cluster1", ours, channel, "both"},
		{"no secret", Destination{Name: "cluster1"}, "cluster1", nil, channel, "no cluster secret"},
		{"another cluster's secret", Destination{Name: "cluster1"}, "cluster1", channelSecret("cluster2", "t"), channel, "no cluster secret"},
		{"a secret not argocd-pull's", Destination{Name: "cluster1"}, "cluster1", theirs, channel, "no cluster secret"},
		{"the credential-free secret", Destination{Name: "cluster1"}, "cluster1", credentialFree, channel, "does not reach it through OCM's channel"},
		{"no token", Destination{Name: "cluster1"}, "cluster1", tokenless, channel, "holds no token"},
	} {
		if cfg, why := Route(c.dest, c.cluster, c.secret, c.ch, anywhere); cfg != nil || !strings.Contains(why, c.why) {
			t.Errorf("%s: %v %q; want no read, saying %q", c.name, cfg, why, c.why)
		}
	}
}

// anywhere is an AppProject that permits every destination (Argo CD's default project).
var anywhere = project("default", map[string]any{"name": "*", "server": "*", "namespace": "*"})

func project(name string, destinations ...map[string]any) *unstructured.Unstructured {
	p := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
	p.SetName(name)
	var list []any
	for _, d := range destinations {
		list = append(list, d)
	}
	p.Object["spec"].(map[string]any)["destinations"] = list
	return p
}

// A tenant's Application is read from its cluster only when its AppProject permits that cluster
// and namespace as the hub resolves them, as Argo CD's own controller would before it built a
// tree: a project that keeps a tenant to cluster2 keeps the views of cluster1 from it.
func TestRouteOnlyWhereTheApplicationsProjectPermits(t *testing.T) {
	ours := channelSecret("cluster1", "the-token")
	server := channel.Server("cluster1")
	dest := Destination{Name: "cluster1", Namespace: "team-web"}
	for _, c := range []struct {
		name    string
		project *unstructured.Unstructured
		why     string
	}{
		{"by the cluster's name", project("team", map[string]any{"name": "cluster1", "namespace": "team-web"}), ""},
		{"by the channel's server", project("team", map[string]any{"server": server, "namespace": "team-*"}), ""},
		{"every destination", anywhere, ""},
		{"another tenant's cluster", project("team", map[string]any{"name": "cluster2", "namespace": "*"}), "AppProject team does not permit the destination cluster cluster1"},
		{"another namespace", project("team", map[string]any{"name": "cluster1", "namespace": "team-api"}), `namespace "team-web"`},
		{"denied by name", project("team", map[string]any{"name": "*", "namespace": "*"}, map[string]any{"name": "!cluster1", "namespace": "*"}), "does not permit"},
		{"denied namespace", project("team", map[string]any{"server": "*", "namespace": "*"}, map[string]any{"server": "*", "namespace": "!team-web"}), "does not permit"},
		{"the hub only (the pull model's in-cluster destination)", project("team", map[string]any{"server": "https://kubernetes.default.svc", "namespace": "team-web"}), "does not permit"},
		{"no destinations", project("team"), "does not permit"},
		{"no project", nil, "its AppProject does not exist"},
	} {
		_, why := Route(dest, "cluster1", ours, channel, c.project)
		if c.why == "" && why != "" || c.why != "" && !strings.Contains(why, c.why) {
			t.Errorf("%s: %q; want %q", c.name, why, c.why)
		}
	}
	scoped := project("team", map[string]any{"name": "cluster1", "namespace": "*"})
	scoped.Object["spec"].(map[string]any)["permitOnlyProjectScopedClusters"] = true
	if _, why := Route(dest, "cluster1", ours, channel, scoped); !strings.Contains(why, "does not permit") {
		t.Errorf("a project that admits only its own clusters (argocd-pull's secret is global): %q; want no read", why)
	}
}
