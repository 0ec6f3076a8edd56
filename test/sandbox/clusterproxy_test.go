package sandbox_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/argocd-pull/argocd-pull/internal/assets"
	"github.com/argocd-pull/argocd-pull/internal/sandbox"
)

// OCM's channel from the hub to a cluster, as the lab runs it (cluster-proxy's user server, the
// konnectivity server and each cluster's konnectivity agent): kubectl on the hub, with the user
// server's address for cluster1, its CA and a token of cluster1, reads cluster1's live objects and
// nothing else's; cluster1's own RBAC refuses what the token may not do; the channel has no way to
// a cluster it has no tunnel from, nor to the hub.
func TestTheHubReachesAClusterThroughClusterProxy(t *testing.T) {
	requireLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c1 := lab.Managed[0]
	admin, err := kubernetes.NewForConfig(c1.Config)
	if err != nil {
		t.Fatal(err)
	}
	// A read-only account of cluster1 (the built-in view role), and a marker only cluster1 holds.
	const ns, account = "default", "channel-probe"
	if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: account}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: account},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: account, Namespace: ns}},
	}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	marker := "only-on-" + c1.Name
	if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: marker}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	expiry := int64(600)
	tr, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, account, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kubectl := channelKubectl(ctx, t, tr.Status.Token)

	// The tunnel comes up within seconds of its agent; a read is retried until it has.
	readMarker := func() {
		t.Helper()
		var out string
		deadline := time.Now().Add(time.Minute)
		for {
			if out, err = kubectl(c1.Name, "get", "configmap", marker, "-n", ns, "-o", "name"); err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Second)
		}
		if err != nil || strings.TrimSpace(out) != "configmap/"+marker {
			t.Fatalf("reading cluster1's ConfigMap through the channel: %v\n%s", err, out)
		}
	}
	readMarker()
	if out, err := kubectl(c1.Name, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"); err != nil || out != "system:serviceaccount:"+ns+":"+account {
		t.Errorf("kubectl auth whoami through the channel: %v: %q, want cluster1's account", err, out)
	}
	if out, err := kubectl(c1.Name, "get", "namespaces", "-o", "name"); err != nil || !strings.Contains(out, "namespace/"+sandbox.WorkAgentNamespace) {
		t.Errorf("listing cluster1's namespaces through the channel: %v\n%s", err, out)
	}

	// cluster1's RBAC, not the channel, says what the token may do: view writes nothing and reads
	// no Secret.
	if out, err := kubectl(c1.Name, "create", "configmap", "written-through-the-channel", "-n", ns); err == nil || !strings.Contains(out, "forbidden") {
		t.Errorf("a write through the channel with a view token: want forbidden by cluster1, got %v\n%s", err, out)
	}
	if out, err := kubectl(c1.Name, "get", "secrets", "-n", ns); err == nil || !strings.Contains(out, "forbidden") {
		t.Errorf("reading Secrets through the channel with a view token: want forbidden by cluster1, got %v\n%s", err, out)
	}

	// cluster2's address ends at cluster2, which does not know cluster1's token.
	if len(lab.Managed) > 1 {
		if out, err := kubectl(lab.Managed[1].Name, "get", "configmap", marker, "-n", ns); err == nil || !strings.Contains(out, "must be logged in") {
			t.Errorf("cluster1's token at cluster2's address: want cluster2 to refuse it (401: kubectl says you must be logged in), got %v\n%s", err, out)
		}
	}

	// The way in is the tunnel cluster1's agent opens: without the agent, none; with it again, the
	// same. `sandbox stop cluster1-agents` (a cut-off cluster) stops it with the OCM agents.
	if err := lab.Stop(c1.Name + "-proxy-agent"); err != nil {
		t.Fatal(err)
	}
	if out, err := kubectl(c1.Name, "get", "configmap", marker, "-n", ns); err == nil {
		t.Errorf("cluster1 reached with its konnectivity agent stopped:\n%s", out)
	}
	if err := lab.Start(ctx, c1.Name+"-proxy-agent"); err != nil {
		t.Fatal(err)
	}
	readMarker()

	// A cluster no agent serves has no way in: the user server answers, no apiserver does.
	pool := x509.NewCertPool()
	caPEM, err := os.ReadFile(lab.ClusterProxy.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(caPEM)
	httpc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	for _, cluster := range []string{"cluster-without-an-agent", "hub"} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, lab.ClusterProxy.ClusterURL(cluster)+"/api/v1/namespaces", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tr.Status.Token)
		resp, err := httpc.Do(req)
		if err != nil {
			t.Fatalf("asking the user server for %s: %v", cluster, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode < 400 || resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			t.Errorf("%s through the channel: HTTP %d, want the user server's own error (no apiserver behind it)", cluster, resp.StatusCode)
		}
	}
}

// channelKubectl runs kubectl with only the channel's flags for a cluster: the user server's
// address for it, its CA and token; no kubeconfig, so none of the lab's own credentials is used.
func channelKubectl(ctx context.Context, t *testing.T, token string) func(cluster string, args ...string) (string, error) {
	t.Helper()
	return func(cluster string, args ...string) (string, error) {
		return tokenKubectl(ctx, t, lab.ClusterProxy.ClusterURL(cluster), lab.ClusterProxy.CA, token)(args...)
	}
}

// tokenKubectl runs kubectl against server with the CA in caFile and token, and no kubeconfig.
func tokenKubectl(ctx context.Context, t *testing.T, server, caFile, token string) func(args ...string) (string, error) {
	t.Helper()
	root, err := assets.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := assets.Kubectl(root)
	if err != nil {
		t.Fatal(err)
	}
	return func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, bin, append([]string{
			"--kubeconfig=/dev/null", "--server=" + server, "--certificate-authority=" + caFile, "--token=" + token,
		}, args...)...).CombinedOutput()
		return string(out), err
	}
}
