package sandbox_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/internal/clusteraccess"
	"github.com/argocd-pull/argocd-pull/internal/controller"
	"github.com/argocd-pull/argocd-pull/internal/gitops"
	"github.com/argocd-pull/argocd-pull/internal/sandbox"
)

// The documents' GitOpsCluster with managedServiceAccountRef: argocd-pull, in the lab where both
// add-ons run: cluster1's Argo CD secret reaches cluster1 through cluster-proxy, and kubectl with
// exactly that secret's server, token and CA (no kubeconfig) reads cluster1's live objects and is
// refused, by cluster1, every write, the Secrets' contents and exec. Without the field, the
// secrets are credential-free again.
func TestTheHubReadsAClusterThroughOCMsChannel(t *testing.T) {
	requireLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	hub, err := lab.Hub.Client()
	if err != nil {
		t.Fatal(err)
	}
	c1 := lab.Managed[0]
	setRef := func(ref string) { setManagedServiceAccountRef(ctx, t, ref) }
	secretOf := func(cluster string) (string, map[string]any, string) { return channelSecretOf(ctx, hub, cluster) }
	server, config := useChannel(ctx, t, hub, c1.Name)
	if want := lab.ClusterProxy.ClusterURL(c1.Name); server != want {
		t.Errorf("%s's secret's server %q, want cluster-proxy's user server for it, %q", c1.Name, server, want)
	}
	token, _ := config["bearerToken"].(string)
	tls, _ := config["tlsClientConfig"].(map[string]any)
	caData, _ := tls["caData"].(string) // []byte in Argo CD's ClusterConfig: base64 in JSON
	ca, err := decodeBase64(caData)
	if err != nil || len(ca) == 0 {
		t.Fatalf("%s's secret's caData: %v", c1.Name, err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, ca, 0o600); err != nil {
		t.Fatal(err)
	}
	kubectl := tokenKubectl(ctx, t, server, caFile, token)

	// Its live objects: what the managed Argo CD deployed (the work agent's namespace, the
	// Applications' Deployments), the Pods' and events' lists Argo CD's views read.
	if out, err := kubectl("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"); err != nil || out != "system:serviceaccount:"+sandbox.AddonInstallNamespace+":argocd-pull" {
		t.Errorf("kubectl auth whoami with %s's secret: %v: %q, want the ManagedServiceAccount's account", c1.Name, err, out)
	}
	for _, read := range [][]string{
		{"get", "namespaces", "-o", "name"}, {"get", "deployments", "-A", "-o", "name"}, {"get", "pods", "-A"},
		{"get", "events", "-A"}, {"get", "configmaps", "-n", sandbox.ArgoNamespace, "-o", "name"},
	} {
		if out, err := kubectl(read...); err != nil {
			t.Errorf("kubectl %s with %s's secret: %v\n%s", strings.Join(read, " "), c1.Name, err, out)
		}
	}
	if out, _ := kubectl("get", "namespaces", "-o", "name"); !strings.Contains(out, "namespace/"+sandbox.WorkAgentNamespace) {
		t.Errorf("%s's namespaces through its secret do not show the work agent's:\n%s", c1.Name, out)
	}

	// Refused by cluster1: every write, the Secrets' contents, exec.
	for _, write := range [][]string{
		{"create", "configmap", "written-with-the-hubs-token", "-n", "default"},
		{"delete", "namespace", sandbox.WorkAgentNamespace, "--dry-run=server"},
		{"label", "namespace", "default", "written=by-the-hub"},
		{"get", "secrets", "-A"},
		{"get", "secret", "-n", sandbox.ArgoNamespace, "argocd-secret"},
	} {
		if out, err := kubectl(write...); err == nil || !strings.Contains(out, "forbidden") {
			t.Errorf("kubectl %s with %s's secret: want forbidden by %s, got %v\n%s", strings.Join(write, " "), c1.Name, c1.Name, err, out)
		}
	}
	for _, can := range [][]string{
		{"create", "pods", "--subresource=exec"}, {"get", "pods", "--subresource=exec"}, {"create", "pods", "--subresource=attach"},
		{"create", "pods", "--subresource=portforward"}, {"get", "nodes", "--subresource=proxy"}, {"get", "secrets"}, {"create", "deployments.apps"},
	} {
		// The answer is the last line (kubectl warns first of a cluster-scoped resource).
		if out, _ := kubectl(append([]string{"auth", "can-i"}, can...)...); !strings.HasSuffix(strings.TrimSpace(out), "\nno") && strings.TrimSpace(out) != "no" {
			t.Errorf("kubectl auth can-i %s with %s's secret: %q, want no", strings.Join(can, " "), c1.Name, out)
		}
	}

	// doctor asks cluster1 the same way, with the secret's server, token and CA: read-only. Then
	// cluster1's administrator binds the account to more (a write, Secrets): doctor fails and names
	// them, and passes again once the binding is gone.
	cl1, err := c1.Client()
	if err != nil {
		t.Fatal(err)
	}
	if status, msg := doctorClusterAccess(t, c1.Name); status != "pass" {
		t.Errorf("doctor's cluster-access for %s: %s: %s", c1.Name, status, msg)
	}
	// --cluster-proxy-url: the user server as this machine reaches it under another name (as
	// through a port-forward), the certificate still checked against the secret's server's name;
	// and a port nothing listens on fails, so the flag is what doctor asked.
	userServer, err := url.Parse(lab.ClusterProxy.URL)
	if err != nil {
		t.Fatal(err)
	}
	if status, msg := doctorClusterAccess(t, c1.Name, "--cluster-proxy-url", "https://localhost:"+userServer.Port()); status != "pass" {
		t.Errorf("doctor --cluster-proxy-url https://localhost:%s, cluster-access for %s: %s: %s", userServer.Port(), c1.Name, status, msg)
	}
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := fmt.Sprint(closed.Addr().(*net.TCPAddr).Port)
	_ = closed.Close()
	if status, msg := doctorClusterAccess(t, c1.Name, "--cluster-proxy-url", "https://localhost:"+closedPort); status != "fail" || !strings.Contains(msg, "localhost:"+closedPort) {
		t.Errorf("doctor --cluster-proxy-url at a closed port, cluster-access for %s: %s: %s; want a failure naming it", c1.Name, status, msg)
	}
	more := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "more-than-argocd-pull-asked"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}},
	}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: more.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: more.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "argocd-pull", Namespace: sandbox.AddonInstallNamespace}}}
	doctorFailsWhileBound(t, c1.Name, cl1, "it may write", []string{"create configmaps", "read secrets (secrets)", "more than read-only"}, more, binding)

	// A RoleBinding in another namespace than Argo CD's gives the token Secrets there: doctor asks
	// each namespace and names that one (it asked only Argo CD's namespace before, and passed).
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "more-than-argocd-pull-asked"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}},
	}}
	roleBinding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: binding.Subjects}
	doctorFailsWhileBound(t, c1.Name, cl1, "it may read Secrets in one namespace",
		[]string{"in namespace default the token may read secrets (secrets): more than read-only"}, role, roleBinding)

	// Without managedServiceAccountRef the secret is credential-free again.
	setRef("")
	eventually(t, c1.Name+"'s secret credential-free again", time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		now, config, _ := secretOf(c1.Name)
		return config == nil && now == gitops.Server(c1.Name), nil
	})
	// And the account argocd-pull made goes from the hub and from cluster1, with its rights' work:
	// the token opens nothing any more, and no later test finds the work.
	for _, c := range lab.Managed {
		eventually(t, c.Name+"'s account and its rights removed", time.Minute, "hub-argocd-pull.log", func() (bool, error) {
			msa := &unstructured.Unstructured{}
			msa.SetGroupVersionKind(controller.ManagedServiceAccountGVK)
			errAccount := hub.Get(ctx, client.ObjectKey{Namespace: c.Name, Name: "argocd-pull"}, msa)
			errWork := hub.Get(ctx, client.ObjectKey{Namespace: c.Name, Name: clusteraccess.AccessWorkName("argocd-pull")}, &workv1.ManifestWork{})
			return apierrors.IsNotFound(errAccount) && apierrors.IsNotFound(errWork), nil
		})
	}
	// cluster1's apiserver keeps a token it authenticated for 10 s (its token cache), then refuses
	// it (401).
	eventually(t, "cluster1 refusing the hub's old token", time.Minute, "cluster1-managed-serviceaccount-agent.log", func() (bool, error) {
		out, err := kubectl("auth", "whoami")
		return err != nil && strings.Contains(out, "must be logged in"), nil
	})
}

func decodeBase64(s string) ([]byte, error) { return base64.StdEncoding.DecodeString(s) }

// setManagedServiceAccountRef sets the lab GitOpsCluster's managedServiceAccountRef ("": none).
func setManagedServiceAccountRef(ctx context.Context, t testing.TB, ref string) {
	t.Helper()
	if err := lab.SetChannelAccount(ctx, ref); err != nil {
		t.Fatal(err)
	}
}

// channelSecretOf reads cluster's Argo CD secret: its server, its config, and why it stays
// credential-free.
func channelSecretOf(ctx context.Context, hub client.Client, cluster string) (server string, config map[string]any, why string) {
	s := &corev1.Secret{}
	if err := hub.Get(ctx, client.ObjectKey{Namespace: sandbox.ArgoNamespace, Name: gitops.SecretName(cluster)}, s); err != nil {
		return "", nil, err.Error()
	}
	if raw := s.Data["config"]; len(raw) > 0 {
		_ = json.Unmarshal(raw, &config)
	}
	return string(s.Data["server"]), config, s.Annotations[gitops.AccessRefusedAnnotation]
}

// useChannel gives the lab's clusters OCM's channel (the documents' GitOpsCluster with
// managedServiceAccountRef: argocd-pull, taken away when the test ends) and waits for cluster's
// secret to carry the account's token; it returns the secret's server and config.
func useChannel(ctx context.Context, t testing.TB, hub client.Client, cluster string) (server string, config map[string]any) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_ = lab.SetChannelAccount(ctx, "")
	})
	setManagedServiceAccountRef(ctx, t, "argocd-pull")
	said := ""
	eventually(t, cluster+"'s secret reaching it through cluster-proxy", 3*time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		var why string
		server, config, why = channelSecretOf(ctx, hub, cluster)
		if why != said {
			t.Logf("%s's secret says: %s", cluster, why)
			said = why
		}
		return config["bearerToken"] != nil, nil
	})
	return server, config
}

// doctorClusterAccess runs argocd-pull doctor on the lab's hub, with more flags if any, and gives
// the cluster-access check's verdict on cluster: its own result, or the one that folds the
// clusters that passed.
// doctorFailsWhileBound makes rbac (a role and its binding to the hub's account) on cluster, waits
// for doctor's cluster-access to fail saying each of want, then removes them and waits for it to
// pass again.
func doctorFailsWhileBound(t *testing.T, cluster string, cl client.Client, why string, want []string, rbac ...client.Object) {
	t.Helper()
	for _, o := range rbac {
		if err := cl.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	unbind := func() {
		for _, o := range slices.Backward(rbac) {
			_ = cl.Delete(context.Background(), o)
		}
	}
	t.Cleanup(unbind)
	var msg string
	eventually(t, "doctor failing "+cluster+"'s channel once "+why, time.Minute, "", func() (bool, error) {
		var status string
		status, msg = doctorClusterAccess(t, cluster)
		return status == "fail", nil
	})
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("doctor's cluster-access for %s does not say %q: %s", cluster, w, msg)
		}
	}
	unbind()
	eventually(t, "doctor passing "+cluster+"'s channel again", time.Minute, "", func() (bool, error) {
		status, _ := doctorClusterAccess(t, cluster)
		return status == "pass", nil
	})
}

func doctorClusterAccess(t *testing.T, cluster string, more ...string) (status, message string) {
	t.Helper()
	out, err := exec.Command(filepath.Join(labDir, "argocd-pull"), append([]string{"doctor", "--kubeconfig", lab.Hub.Kubeconfig, "-o", "json",
		"--managed-argocd-namespace", sandbox.ArgoNamespace}, more...)...).Output()
	var verdict struct {
		Checks []struct{ ID, Subject, Status, Message string } `json:"checks"`
	}
	if jsonErr := json.Unmarshal(out, &verdict); jsonErr != nil {
		t.Fatalf("doctor -o json: %v (exit: %v)\n%s", jsonErr, err, out)
	}
	for _, c := range verdict.Checks {
		if c.ID != "cluster-access" {
			continue
		}
		_, names, _ := strings.Cut(c.Message, ": ")
		if c.Subject == cluster || (c.Subject == "" && c.Status == "pass" && slices.Contains(strings.Split(names, ", "), cluster)) {
			return c.Status, c.Message
		}
	}
	return "absent", fmt.Sprintf("no cluster-access result names %s: %+v", cluster, verdict.Checks)
}
