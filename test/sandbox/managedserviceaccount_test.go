package sandbox_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/internal/clusteraccess"
	"github.com/argocd-pull/argocd-pull/internal/sandbox"
)

// OCM's managed-serviceaccount, as the lab runs it (its manager on the hub, an agent per cluster
// on the hub credentials OCM's registration issued it): a ManagedServiceAccount in cluster1's
// namespace on the hub becomes a ServiceAccount on cluster1 and its token in a Secret beside it on
// the hub. Through cluster-proxy's channel that token is cluster1's ServiceAccount, with no right
// the cluster did not give it, and with clusteraccess's read-only rules bound to it, their reads
// and nothing more; clusteraccess takes the real Secret the agent wrote; deleting the ManagedServiceAccount deletes the ServiceAccount, and
// the token opens nothing any more.
func TestAManagedServiceAccountsTokenIsItsClusterAccount(t *testing.T) {
	requireLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	hub, err := lab.Hub.Client()
	if err != nil {
		t.Fatal(err)
	}
	c1 := lab.Managed[0]
	const name = "channel-probe-msa"
	msa := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "authentication.open-cluster-management.io/v1beta1", "kind": "ManagedServiceAccount",
		"metadata": map[string]any{"name": name, "namespace": c1.Name},
		"spec":     map[string]any{"rotation": map[string]any{}},
	}}
	if err := hub.Create(ctx, msa); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	var secret corev1.Secret
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := hub.Get(ctx, client.ObjectKey{Namespace: c1.Name, Name: name}, &secret); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return len(secret.Data["token"]) > 0, nil
	}); err != nil {
		t.Fatalf("no token Secret %s/%s on the hub: %v", c1.Name, name, err)
	}
	if got := secret.Labels["authentication.open-cluster-management.io/is-managed-serviceaccount"]; got != "true" {
		t.Errorf("the token Secret's labels %v: want managed-serviceaccount's", secret.Labels)
	}
	kubectl := channelKubectl(ctx, t, string(secret.Data["token"]))
	want := "system:serviceaccount:" + sandbox.AddonInstallNamespace + ":" + name
	if out, err := kubectl(c1.Name, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"); err != nil || out != want {
		t.Fatalf("kubectl auth whoami through the channel with the token: %v: %q, want %s", err, out, want)
	}
	// managed-serviceaccount gives the account no right: the cluster refuses a read.
	if out, err := kubectl(c1.Name, "get", "namespaces"); err == nil || !strings.Contains(out, "forbidden") {
		t.Errorf("a read with a token of an account without rights: want forbidden by cluster1, got %v\n%s", err, out)
	}

	// The checks a token Secret passes before it may go into a cluster secret take the one the real
	// agent wrote.
	if err := hub.Get(ctx, client.ObjectKeyFromObject(msa), msa); err != nil {
		t.Fatal(err)
	}
	account := clusteraccess.Account{Cluster: c1.Name, Name: name, UID: msa.GetUID(), ServiceAccountNamespace: sandbox.AddonInstallNamespace}
	if tok, refusal := clusteraccess.DecideToken(&secret, account, time.Now()); refusal.Refused() || tok.Value != string(secret.Data["token"]) {
		t.Errorf("the agent's token Secret: %+v; want its token used", refusal)
	}

	// With the read-only rules bound to the account on cluster1 (what step 2's ManifestWork will
	// deliver), cluster1 lets the token read what the hub's views read, and nothing else.
	c1Client, err := c1.Client()
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: clusteraccess.ReadOnlyRules([]string{"argoproj.io"})}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: sandbox.AddonInstallNamespace}}}
	for _, o := range []client.Object{role, binding} {
		if err := c1Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c1Client.Delete(context.Background(), o) })
	}
	if out, err := kubectl(c1.Name, "get", "applications.argoproj.io,deployments.apps,pods", "-A", "-o", "name"); err != nil || strings.Contains(out, "forbidden") {
		t.Errorf("reading cluster1's Applications through the channel with the read-only rules: %v\n%s", err, out)
	}
	// can-i takes a subresource by --subresource: "pods/exec" would be the pod named exec.
	for _, c := range []struct{ args, want string }{
		{"get pods --subresource=log", "yes"}, {"list events", "yes"}, {"watch deployments.apps", "yes"},
		{"get secrets", "no"}, {"create pods --subresource=exec", "no"}, {"get pods --subresource=exec", "no"},
		{"get nodes --subresource=proxy", "no"}, {"get services --subresource=proxy", "no"},
		{"delete deployments.apps", "no"}, {"patch applications.argoproj.io", "no"}, {"create configmaps", "no"},
	} {
		out, _ := kubectl(c1.Name, append([]string{"auth", "can-i"}, strings.Fields(c.args)...)...)
		if out = strings.TrimSpace(out); out[strings.LastIndex(out, "\n")+1:] != c.want { // after a scope warning
			t.Errorf("kubectl auth can-i %s through the channel: %q, want %s (cluster1's RBAC)", c.args, out, c.want)
		}
	}

	if err := hub.Delete(ctx, msa); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := c1Client.Get(ctx, client.ObjectKey{Namespace: sandbox.AddonInstallNamespace, Name: name}, &corev1.ServiceAccount{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	}); err != nil {
		t.Fatalf("the ServiceAccount on cluster1 is still there after its ManagedServiceAccount was deleted: %v", err)
	}
	// The apiserver keeps a token it authenticated for 10 s (its token cache); then it refuses it.
	var out string
	if err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(context.Context) (bool, error) {
		out, err = kubectl(c1.Name, "auth", "whoami")
		return err != nil && strings.Contains(out, "must be logged in"), nil
	}); err != nil {
		t.Errorf("the token of a deleted ManagedServiceAccount through the channel: want cluster1 to refuse it (401) within a minute, got\n%s", out)
	}
}
