package install

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

// A tenant with the rights of its own hub namespace (update on its Applications, as Argo CD's
// "applications in any namespace" gives it) cannot move a pull-model Application that names its
// cluster off that cluster, nor take it out of the pull model: Argo CD's API server sends each
// resource view (get-resource, patch-resource, delete-resource, logs, events) to the destination
// it reads at that request, so one such edit would aim the cluster's tree of uids at the hub (the
// in-cluster server, with the API server's own rights) or at another cluster (issue 92: proven in
// the lab with the argocd CLI). The policy of config/admission refuses it, for anyone, with a
// message that says why and what to do; nothing of the Application changes. What stays open: the
// updates the ApplicationSet controller makes that keep the destination, the documents' in-cluster
// form (its tree never carries a uid) moved to the hardened form, and push-model Applications.
func TestThePolicyKeepsAPullModelApplicationOnItsDestination(t *testing.T) {
	g := NewWithT(t)
	env := testenv.Get(t)
	k := withTheAdmissionPolicies(t, env)
	ctx := context.Background()
	ns := env.Namespace(t)
	admin := env.Client

	tenant := tenantOf(t, env, ns)
	app := func(name string, pull bool, dest map[string]any) types.NamespacedName {
		a := argocd.NewApplication()
		a.SetName(name)
		a.SetNamespace(ns)
		if pull {
			a.SetLabels(map[string]string{api.PullLabel: "true"})
			a.SetAnnotations(map[string]string{api.ClusterAnnotation: "cluster1", "argocd.argoproj.io/skip-reconcile": "true"})
		}
		a.Object["spec"] = map[string]any{"project": "default", "destination": dest,
			"source": map[string]any{"repoURL": "https://github.com/argoproj/argocd-example-apps.git", "path": "guestbook", "targetRevision": "HEAD"}}
		g.Expect(tenant.Create(ctx, a)).To(Succeed())
		return client.ObjectKeyFromObject(a)
	}
	// edit applies change to the Application as c would (a merge patch, as kubectl patch and the
	// ApplicationSet controller write) and returns the apiserver's answer.
	edit := func(c client.Client, key types.NamespacedName, change func(a *unstructured.Unstructured)) error {
		a := argocd.NewApplication()
		g.Expect(c.Get(ctx, key, a)).To(Succeed())
		patch := client.MergeFrom(a.DeepCopy())
		change(a)
		return c.Patch(ctx, a, patch)
	}
	destination := func(d map[string]any) func(a *unstructured.Unstructured) {
		return func(a *unstructured.Unstructured) { a.Object["spec"].(map[string]any)["destination"] = d }
	}
	named := map[string]any{"name": "cluster1", "namespace": "guestbook"}
	hub := map[string]any{"server": argocd.LocalServer, "namespace": "guestbook"}
	views := app("views", true, named)

	// The policy is in force once the apiserver has loaded it (a few seconds; longer on a busy
	// machine). An edit that passed before then is undone, so that the next try starts again from
	// the named destination (from the in-cluster one, the move back would be allowed).
	g.Eventually(func() error {
		err := edit(tenant, views, destination(hub))
		if err == nil {
			g.Expect(edit(admin, views, destination(named))).To(Succeed())
		}
		return err
	}, 3*time.Minute, 200*time.Millisecond).Should(MatchError(ContainSubstring("is fixed")), "the destination aimed at the hub")
	refused := func(what string, c client.Client, change func(a *unstructured.Unstructured), words string) {
		t.Helper()
		err := edit(c, views, change)
		g.Expect(apierrors.IsInvalid(err) || apierrors.IsForbidden(err)).To(BeTrue(), "%s: %v", what, err)
		g.Expect(err).To(MatchError(And(ContainSubstring("argocd-pull"), ContainSubstring(words), ContainSubstring("docs/security.md"))), what)
	}
	refused("the in-cluster server by name", tenant, destination(map[string]any{"name": "in-cluster", "namespace": "guestbook"}), "is fixed")
	refused("another managed cluster", tenant, destination(map[string]any{"name": "cluster2", "namespace": "guestbook"}), "is fixed")
	refused("a push-registered cluster's server", tenant, destination(map[string]any{"server": "https://cluster2.example.com:6443", "namespace": "guestbook"}), "is fixed")
	refused("a server beside the name", tenant, destination(map[string]any{"name": "cluster1", "server": argocd.LocalServer, "namespace": "guestbook"}), "is fixed")
	refused("the pull label removed", tenant, func(a *unstructured.Unstructured) { a.SetLabels(nil) }, "keeps its label")
	refused("the pull label false", tenant, func(a *unstructured.Unstructured) { a.SetLabels(map[string]string{api.PullLabel: "false"}) }, "keeps its label")
	refused("by the hub's admin too", admin, destination(hub), "is fixed")
	got := argocd.NewApplication()
	g.Expect(admin.Get(ctx, views, got)).To(Succeed())
	g.Expect(got.Object["spec"].(map[string]any)["destination"]).To(Equal(named), "nothing of the Application changed")
	g.Expect(got.GetLabels()).To(HaveKeyWithValue(api.PullLabel, "true"))

	// What stays open.
	g.Expect(edit(tenant, views, func(a *unstructured.Unstructured) {
		a.Object["spec"].(map[string]any)["source"].(map[string]any)["path"] = "helm-guestbook"
		a.SetAnnotations(map[string]string{api.ClusterAnnotation: "cluster1", "argocd.argoproj.io/skip-reconcile": "true", "team": "web"})
	})).To(Succeed(), "an update that keeps the destination, as the ApplicationSet controller's")
	g.Expect(edit(tenant, views, destination(map[string]any{"name": "cluster1", "namespace": "guestbook-2"}))).To(Succeed(),
		"another namespace on the same cluster: the tree is rebuilt for it (resourceviews.Route checks the project)")
	documents := app("documents", true, hub)
	g.Expect(edit(tenant, documents, destination(named))).To(Succeed(), "the documents' in-cluster form moved to the hardened form")
	push := app("push", false, named)
	g.Expect(edit(tenant, push, destination(hub))).To(Succeed(), "a push-model Application is not argocd-pull's")
	g.Expect(strings.Contains(k.run("get", "validatingadmissionpolicybinding", "argocd-pull-resource-views", "-o", "jsonpath={.spec.validationActions}"), "Deny")).To(BeTrue())
}

// tenantOf is a client with a tenant's rights: its Applications in namespace ns, nothing else.
func tenantOf(t *testing.T, env *testenv.Env, ns string) client.Client {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "tenant-applications", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"argoproj.io"}, Resources: []string{"applications"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "tenant-applications", Namespace: ns},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "tenant"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}}
	for _, o := range []client.Object{role, binding} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "tenant"}
	tenant, err := client.New(cfg, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return tenant
}

// withTheAdmissionPolicies applies config/admission as the install does, and deletes its policies
// and bindings when the test ends.
func withTheAdmissionPolicies(t *testing.T, env *testenv.Env) kube {
	k := newKube(t, env)
	k.run("apply", "--server-side", "--field-manager=argocd-pull-install", "-k", "config/admission")
	t.Cleanup(func() {
		k.run("delete", "validatingadmissionpolicy,validatingadmissionpolicybinding", resourceViewsPolicy, viewHoldersPolicy, "--ignore-not-found")
	})
	return k
}
