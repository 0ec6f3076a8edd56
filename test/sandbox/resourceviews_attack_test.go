package sandbox_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/gitops"
	"github.com/argocd-pull/argocd-pull/internal/sandbox"
)

// The attack of issue 92 (hole 1), made as a tenant would make it, with only a tenant's rights:
// kubectl on its own Applications in its hub namespace, and an Argo CD account whose RBAC is its
// own AppProject. Its Application on cluster1's channel gets cluster1's tree with uids (its project
// permits the cluster by name, and the in-cluster server, which its Application becomes on the
// cluster). Then it aims the Application elsewhere, because Argo CD's API server sends each
// resource view to the destination it reads at that request: the hub (the in-cluster server, with
// the API server's own rights), another managed cluster by name, and a cluster registered for the
// push model (a cluster secret with credentials, as RHACM's push model writes). Each edit is
// refused, by kubectl (the policy of config/admission) and through Argo CD's API (the policy, or
// Argo CD's own project check first), and for 60 s
// from the edits every view (get-resource, patch-resource, delete-resource, logs, events) reaches
// cluster1 only, read-only: the hub's and cluster2's objects of the same name are never read or
// changed. Before the policy, the first edit passed, and get-resource answered the hub's object.
// Last, the Application deleted and made again under its name, aimed at the hub, while its tree of
// uids is still in the cache: refused (the policy argocd-pull-resource-view-holders).
func TestATenantCannotAimItsClustersViewsAtTheHubOrAnotherCluster(t *testing.T) {
	ctx, hub, cluster1, admin := onTheChannel(t, 12*time.Minute, "a tenant's ConfigMap named as the hub's",
		map[string]string{"tenantaim/cm.yaml": configMap("aim-target", nil, map[string]string{"owner": "cluster1"})})
	_, spokes := clients(t)
	cluster2 := spokes["cluster2"]
	ns := sandbox.TenantNamespace

	// The objects of the same name that the views must never reach: the hub's, which the tenant
	// may not read on the hub, and cluster2's.
	target := func(owner string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "aim-target", Namespace: ns}, Data: map[string]string{"owner": owner}}
	}
	onHub, onCluster2 := target("the-hub-itself"), target("cluster2-itself")
	for c, o := range map[client.Client]*corev1.ConfigMap{hub: onHub, cluster2: onCluster2} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Delete(ctx, o) })
	}
	// cluster2 registered for the push model: its address and credentials in a cluster secret.
	pushSecret := pushClusterSecret(t, lab.Managed[1].Config)
	if err := hub.Create(ctx, pushSecret); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hub.Delete(ctx, pushSecret) })

	project := argocd.NewAppProject()
	project.SetName("team-web-views")
	project.SetNamespace(sandbox.ArgoNamespace)
	project.Object["spec"] = map[string]any{"sourceRepos": []any{"*"}, "sourceNamespaces": []any{ns},
		"destinations": []any{map[string]any{"name": "cluster1", "namespace": ns}, map[string]any{"server": argocd.LocalServer, "namespace": ns}}}
	if err := hub.Create(ctx, project); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hub.Delete(ctx, project) })
	tenantKube := tenantKubectl(t, hub, ns)
	cli := tenantArgoCD(t, hub, admin, "team-web", project.GetName())

	app := tenantApp("aim", "tenantaim", func(u *unstructured.Unstructured) {
		u.Object["spec"].(map[string]any)["project"] = project.GetName()
		u.Object["spec"].(map[string]any)["destination"] = map[string]any{"name": "cluster1", "namespace": ns}
	})
	if err := tenantKube.Create(ctx, app); err != nil {
		t.Fatalf("the tenant creates its Application: %v", err)
	}
	key := client.ObjectKeyFromObject(app)
	t.Cleanup(func() {
		_ = hub.Delete(ctx, argocdApp(key))
		// Without Argo CD's resources finalizer the cluster keeps what the Application made.
		_ = cluster1.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "aim-target"}})
	})
	name := ns + "/" + app.GetName()
	object := []string{"--kind", "ConfigMap", "--resource-name", "aim-target", "--namespace", ns}
	get := []string{"app", "get-resource", name, "--kind", "ConfigMap", "--resource-name", "aim-target", "-o", "yaml"}
	var uid string
	eventually(t, "the tenant's argocd app get-resource answering with cluster1's ConfigMap", 4*time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		out, err := cli.run(time.Minute, get...)
		uid = uidIn(out)
		return err == nil && strings.Contains(out, "owner: cluster1") && uid != "", fmt.Errorf("%v: %s", err, out)
	})
	onCluster1 := &corev1.ConfigMap{}
	if err := cluster1.Get(ctx, client.ObjectKey{Namespace: ns, Name: "aim-target"}, onCluster1); err != nil {
		t.Fatal(err)
	}

	// The edits, each as kubectl and as the tenant's Argo CD account would make it.
	for _, aim := range []struct {
		what        string
		destination map[string]any
	}{
		{"the hub", map[string]any{"server": argocd.LocalServer, "namespace": ns}},
		{"cluster2 by name", map[string]any{"name": "cluster2", "namespace": ns}},
		{"cluster2's push-model secret", map[string]any{"server": string(pushSecret.Data["server"]), "namespace": ns}},
	} {
		err := editApp(tenantKube, key, func(a *unstructured.Unstructured) { a.Object["spec"].(map[string]any)["destination"] = aim.destination })
		if err == nil || !strings.Contains(err.Error(), "is fixed") {
			t.Errorf("kubectl, as the tenant, aimed its Application at %s: %v; want the policy's refusal", aim.what, err)
		} else {
			t.Logf("kubectl patch, at %s: %v", aim.what, err)
		}
		// Through Argo CD's API: a merge patch that also drops the name (argocd app set refuses a
		// name and a server together before it asks).
		patch := map[string]any{"spec": map[string]any{"destination": map[string]any{"name": nil, "server": nil, "namespace": ns}}}
		for k, v := range aim.destination {
			patch["spec"].(map[string]any)["destination"].(map[string]any)[k] = v
		}
		body, _ := json.Marshal(patch)
		out, err := cli.run(time.Minute, "app", "patch", name, "--patch", string(body), "--type", "merge")
		if err == nil {
			t.Errorf("argocd app patch, as the tenant, aimed its Application at %s:\n%s", aim.what, out)
		}
		t.Logf("argocd app patch, at %s: %v: %s", aim.what, err, strings.TrimSpace(out))
	}
	if err := editApp(tenantKube, key, func(a *unstructured.Unstructured) { a.SetLabels(nil) }); err == nil || !strings.Contains(err.Error(), "keeps its label") {
		t.Errorf("kubectl, as the tenant, took its Application out of the pull model: %v; want the policy's refusal", err)
	}

	// For 60 s from the edits, every view reaches cluster1 only, and cluster1 refuses the writes.
	events := fmt.Sprintf("/api/v1/applications/%s/events?appNamespace=%s&resourceNamespace=%s&resourceName=aim-target&resourceUID=%s",
		app.GetName(), ns, ns, url.QueryEscape(uid))
	for end := time.Now().Add(time.Minute); time.Now().Before(end); {
		for _, c := range []struct {
			args        []string
			fails, ends bool // fails: the verb fails; ends: either way (logs: cluster1's Application has no Pod)
			want        string
		}{
			{get, false, false, "owner: cluster1"},
			{append([]string{"app", "patch-resource", name, "--patch", `{"data":{"owner":"the tenant"}}`, "--patch-type", "application/merge-patch+json"}, object...), true, false, "forbidden"},
			{append([]string{"app", "delete-resource", name}, object...), true, false, "forbidden"},
			{[]string{"app", "logs", name}, false, true, ""},
		} {
			out, err := cli.run(time.Minute, c.args...)
			what := "argocd " + strings.Join(c.args[:2], " ")
			if (!c.ends && (err != nil) != c.fails) || !strings.Contains(out, c.want) || strings.Contains(out, "-itself") {
				t.Fatalf("%s: %v, want failing %t, saying %q, and nothing of the hub's or cluster2's object:\n%s", what, err, c.fails, c.want, out)
			}
		}
		if status, body := cli.api(t, "GET", events); status != 200 || strings.Contains(body, "-itself") {
			t.Fatalf("the events of cluster1's ConfigMap: %d %s", status, body)
		}
		time.Sleep(time.Second)
	}

	// Deleted and made again at once under the same name, aimed at the hub. Argo CD finds a tree by
	// the Application's name, so the first one's tree of cluster1's uids would serve the second
	// one's views for as long as it outlives the first: argocd-pull's queue time, and all the time
	// argocd-pull is stopped (stopped here, to hold that window open as long as the attack needs).
	// Before the record of the names that hold such a tree, the create passed and get-resource
	// answered the hub's object. Now the create is refused while the tree stands; the same
	// destination passes (the ApplicationSet controller making its Application again), and gets
	// cluster1's views once argocd-pull is back.
	if err := lab.Stop("argocd-pull"); err != nil {
		t.Fatal(err)
	}
	stopped := true
	t.Cleanup(func() {
		if stopped {
			_ = lab.Start(ctx, "argocd-pull")
		}
	})
	if err := tenantKube.Delete(ctx, argocdApp(key)); err != nil {
		t.Fatalf("the tenant deletes its Application: %v", err)
	}
	eventually(t, "the Application gone", time.Minute, "hub-apiserver.log", func() (bool, error) {
		err := hub.Get(ctx, key, argocdApp(key))
		return apierrors.IsNotFound(err), err
	})
	again := func(destination map[string]any) *unstructured.Unstructured {
		return tenantApp("aim", "tenantaim", func(u *unstructured.Unstructured) {
			u.Object["spec"].(map[string]any)["project"] = project.GetName()
			u.Object["spec"].(map[string]any)["destination"] = destination
		})
	}
	err := tenantKube.Create(ctx, again(map[string]any{"server": argocd.LocalServer, "namespace": ns}))
	if err == nil {
		out, gerr := cli.run(time.Minute, get...)
		t.Fatalf("the tenant made its Application again, aimed at the hub, while its tree of cluster1's uids was in the hub's cache; argocd app get-resource: %v\n%s", gerr, out)
	}
	if !strings.Contains(err.Error(), "still holds its cluster resource tree") || !strings.Contains(err.Error(), `"cluster1 "`) {
		t.Errorf("kubectl, as the tenant, made its Application again aimed at the hub: %v; want the policy's refusal naming the destination the tree was for", err)
	}
	t.Logf("kubectl create, at the hub: %v", err)
	if err := tenantKube.Create(ctx, again(map[string]any{"name": "cluster1", "namespace": ns})); err != nil {
		t.Fatalf("the tenant makes its Application again on cluster1: %v", err)
	}
	if err := lab.Start(ctx, "argocd-pull"); err != nil {
		t.Fatal(err)
	}
	stopped = false
	eventually(t, "argocd app get-resource answering with cluster1's ConfigMap again", 4*time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		out, err := cli.run(time.Minute, get...)
		return err == nil && strings.Contains(out, "owner: cluster1") && !strings.Contains(out, "-itself"), fmt.Errorf("%v: %s", err, out)
	})

	for c, was := range map[client.Client]*corev1.ConfigMap{hub: onHub, cluster2: onCluster2, cluster1: onCluster1} {
		now := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(was), now); err != nil || now.ResourceVersion != was.ResourceVersion {
			t.Errorf("%s/%s (owner %s) changed: %v, resourceVersion %s, was %s", was.Namespace, was.Name, was.Data["owner"], err, now.ResourceVersion, was.ResourceVersion)
		}
	}
	got := argocdApp(key)
	if err := hub.Get(ctx, key, got); err != nil {
		t.Fatal(err)
	}
	if dest := got.Object["spec"].(map[string]any)["destination"]; dest.(map[string]any)["name"] != "cluster1" || got.GetLabels()[api.PullLabel] != "true" {
		t.Errorf("the Application changed: destination %v, labels %v", dest, got.GetLabels())
	}
}

// uidIn is the metadata.uid of a manifest as argocd app get-resource prints it (YAML indented by
// four, followed by the CLI's log lines), "" when none.
func uidIn(manifest string) string {
	for _, line := range strings.Split(manifest, "\n") {
		if uid, ok := strings.CutPrefix(line, "    uid: "); ok {
			return strings.TrimSpace(uid)
		}
	}
	return ""
}

// editApp merge-patches the Application key as c (as kubectl patch does).
func editApp(c client.Client, key client.ObjectKey, change func(a *unstructured.Unstructured)) error {
	a := argocdApp(key)
	if err := c.Get(ctx, key, a); err != nil {
		return err
	}
	patch := client.MergeFrom(a.DeepCopy())
	change(a)
	return c.Patch(ctx, a, patch)
}

// tenantKubectl is a client of the hub as the tenant's user: its Applications in its namespace ns,
// nothing else (a Role the test makes).
func tenantKubectl(t *testing.T, hub client.Client, ns string) client.Client {
	t.Helper()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "tenant-applications", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"argoproj.io"}, Resources: []string{"applications"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "tenant-applications", Namespace: ns},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "team-web-user"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}}
	for _, o := range []client.Object{role, binding} {
		if err := hub.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = hub.Delete(ctx, o) })
	}
	cfg := rest.CopyConfig(lab.Hub.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "team-web-user"}
	c, err := client.New(cfg, client.Options{Scheme: hub.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tenantArgoCD gives the hub's Argo CD an account of the tenant's whose RBAC is project's
// Applications, their logs and terminal, and nothing else; admin makes it a token; the CLI
// returned uses it. The account and its policy go when the test ends.
func tenantArgoCD(t *testing.T, hub client.Client, admin argocdCLI, account, project string) argocdCLI {
	t.Helper()
	policy := fmt.Sprintf("p, %[1]s, applications, *, %[2]s/*, allow\np, %[1]s, logs, get, %[2]s/*, allow\np, %[1]s, exec, create, %[2]s/*, allow\n", account, project)
	change := func(name string, edit func(data map[string]string)) {
		cm := &corev1.ConfigMap{}
		if err := hub.Get(ctx, client.ObjectKey{Namespace: sandbox.ArgoNamespace, Name: name}, cm); err != nil {
			t.Fatal(err)
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		edit(cm.Data)
		if err := hub.Update(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	change("argocd-cm", func(d map[string]string) { d["accounts."+account] = "apiKey" })
	change("argocd-rbac-cm", func(d map[string]string) { d["policy.csv"] += policy })
	t.Cleanup(func() {
		change("argocd-cm", func(d map[string]string) { delete(d, "accounts."+account) })
		change("argocd-rbac-cm", func(d map[string]string) { d["policy.csv"] = strings.Replace(d["policy.csv"], policy, "", 1) })
	})
	var token string
	eventually(t, "a token of the tenant's Argo CD account", time.Minute, "hub-argocd-server.log", func() (bool, error) {
		out, err := admin.run(time.Minute, "account", "generate-token", "--account", account)
		token = strings.TrimSpace(out)
		return err == nil && token != "", fmt.Errorf("%v: %s", err, out)
	})
	addr := lab.ArgoCD.Addr
	config, err := yaml.Marshal(map[string]any{
		"contexts":        []any{map[string]any{"name": addr, "server": addr, "user": addr}},
		"current-context": addr,
		"servers":         []any{map[string]any{"server": addr, "plain-text": true}},
		"users":           []any{map[string]any{"name": addr, "auth-token": token}},
	})
	if err != nil {
		t.Fatal(err)
	}
	cli := argocdCLI{bin: lab.ArgoCDCLI, config: filepath.Join(t.TempDir(), "tenant.config")}
	if err := os.WriteFile(cli.config, config, 0o600); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the tenant's account seeing its project's Applications only", time.Minute, "hub-argocd-server.log", func() (bool, error) {
		out, err := cli.run(time.Minute, "app", "list", "-o", "name")
		return err == nil && !strings.Contains(out, sandbox.ArgoNamespace+"/"), fmt.Errorf("%v: %s", err, out)
	})
	return cli
}

// pushClusterSecret is a cluster secret for the push model, as RHACM's push model writes one: the
// cluster's address and credentials (cfg's), in the hub's Argo CD namespace.
func pushClusterSecret(t *testing.T, cfg *rest.Config) *corev1.Secret {
	t.Helper()
	config, err := json.Marshal(map[string]any{"bearerToken": cfg.BearerToken, "tlsClientConfig": map[string]any{
		"caData": cfg.CAData, "certData": cfg.CertData, "keyData": cfg.KeyData}})
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster2-push", Namespace: sandbox.ArgoNamespace, Labels: map[string]string{gitops.SecretTypeLabel: "cluster"}},
		Data:       map[string][]byte{"name": []byte("cluster2-push"), "server": []byte(cfg.Host), "config": config},
	}
}
