package sandbox_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/gitops"
	"github.com/argocd-pull/argocd-pull/internal/sandbox"
)

// Objects named as the hub's own Argo CD namespace names them: the Secret holding the hub's admin
// password and argocd-pull's placement generator ConfigMap. A tenant's repository may hold such
// manifests; delivered to cluster1 they are harmless there, and cluster1 reports them.
var hubNamedManifests = map[string]string{
	"hubnames/secret.yaml": `apiVersion: v1
kind: Secret
metadata:
  name: argocd-initial-admin-secret
  namespace: ` + sandbox.ArgoNamespace + `
stringData:
  password: cluster1-own
`,
	"hubnames/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: ocm-placement-generator
  namespace: ` + sandbox.ArgoNamespace + `
data:
  note: cluster1-own
`,
}

// The hub's Argo CD shows a pull-model Application's resources from the display tree argocd-pull
// writes (argocd app resources, with health), and every resource-level verb on it is refused or
// reaches nothing on the hub, even where the cluster reports objects named as the hub's own in
// its Argo CD namespace, for both destination forms: the documents' in-cluster one
// (https://kubernetes.default.svc, which is the hub itself to the hub's API server) and the
// hardened one naming the cluster (its GitOpsCluster secret on the hub, which holds no
// credentials). The hub objects are unchanged, and no answer carries their data. The web terminal,
// on a Pod running on the hub, runs nothing there (the hub apiserver's audit log).
// docs/security.md lists each row.
func TestResourceLevelVerbsOnTheHubsTreeReachNoHubObject(t *testing.T) {
	requireLab(t)
	hub, spokes := clients(t)
	cli := loginArgoCD(t)

	// The documents' Application: each resource cluster1 reports, from the tree.
	docs := appKey("cluster1")
	eventually(t, "argocd app resources listing the documents' Application's resources", time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		out, err := cli.run(time.Minute, "app", "resources", docs.Namespace+"/"+docs.Name)
		return err == nil && strings.Contains(out, "guestbook-ui"), fmt.Errorf("%v: %s", err, out)
	})
	// The web terminal on a Pod running on the hub, through the documents' Application.
	t.Run("terminal", func(t *testing.T) { terminalReachesNoHubPod(t, hub, docs) })
	if _, err := lab.CommitFiles("objects named as the hub's", hubNamedManifests); err != nil {
		t.Fatal(err)
	}
	for form, destination := range map[string]map[string]any{
		"in-cluster": {"server": argocd.LocalServer, "namespace": sandbox.ArgoNamespace},
		"named":      {"name": "cluster1", "namespace": sandbox.ArgoNamespace},
	} {
		t.Run(form, func(t *testing.T) {
			app := uiApp("hubnames-"+form, "hubnames", sandbox.ArgoNamespace, false)
			_ = unstructured.SetNestedMap(app.Object, destination, "spec", "destination")
			verbsReachNoHubObject(t, cli, hub, spokes["cluster1"], app, form == "named")
		})
	}
}

// hubNamedObjects are the hub's objects that hubNamedManifests name, and what no answer may
// carry: the Secret's values (plain and base64) and the ConfigMap's.
func hubNamedObjects(t *testing.T, hub client.Client) (*corev1.Secret, *corev1.ConfigMap, []string) {
	t.Helper()
	secret, configMap := &corev1.Secret{}, &corev1.ConfigMap{}
	if err := hub.Get(ctx, types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: "argocd-initial-admin-secret"}, secret); err != nil {
		t.Fatal(err)
	}
	if err := hub.Get(ctx, types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: "ocm-placement-generator"}, configMap); err != nil {
		t.Fatal(err)
	}
	var data []string
	for _, v := range secret.Data {
		data = append(data, string(v), base64.StdEncoding.EncodeToString(v))
	}
	for _, v := range configMap.Data {
		data = append(data, v)
	}
	return secret, configMap, data
}

// verbsReachNoHubObject delivers app, which deploys hubNamedManifests on cluster1, and runs every
// resource-level verb on them through the hub's API server. named: its destination names the
// cluster, and the calls that pass the uid guard go to cluster1's apiserver without credentials.
func verbsReachNoHubObject(t *testing.T, cli argocdCLI, hub, cluster1 client.Client, app *unstructured.Unstructured, named bool) {
	hubSecret, hubConfigMap, hubData := hubNamedObjects(t, hub)
	secretKey, configMapKey := client.ObjectKeyFromObject(hubSecret), client.ObjectKeyFromObject(hubConfigMap)

	_ = unstructured.SetNestedMap(app.Object, map[string]any{}, "spec", "syncPolicy", "automated")
	if err := hub.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Cascades: cluster1's objects go with it, before the next form deploys them again.
		_ = hub.Delete(ctx, app)
		eventually(t, "cluster1's objects gone with "+app.GetName(), 2*time.Minute, "cluster1-argocd-application-controller.log", func() (bool, error) {
			err := cluster1.Get(ctx, secretKey, &corev1.Secret{})
			return apierrors.IsNotFound(err), err
		})
	})
	appName := app.GetName()
	name := sandbox.ArgoNamespace + "/" + appName
	eventually(t, "argocd app resources listing the hub-named objects cluster1 holds, each with its health", 2*time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		out, err := cli.run(time.Minute, "app", "resources", name, "--output", "tree=detailed")
		return err == nil && strings.Contains(out, "argocd-initial-admin-secret") && strings.Contains(out, "Healthy"), fmt.Errorf("%v: %s", err, out)
	})
	for _, args := range [][]string{{"app", "resources", name}, {"app", "resources", name, "--output", "tree"}, {"app", "get", name, "--output", "tree"}, {"app", "list"}} {
		out, err := cli.run(time.Minute, args...)
		if err != nil {
			t.Errorf("argocd %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if named && args[1] == "list" && !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(name)+`\s+cluster1\s`).MatchString(out) {
			t.Errorf("argocd app list does not show %s's cluster by name:\n%s", name, out)
		}
		t.Logf("argocd %s:\n%s", strings.Join(args, " "), out)
	}

	answered := func(what, out string) {
		t.Helper()
		for _, v := range hubData {
			if v != "" && strings.Contains(out, v) {
				t.Errorf("%s answered with the hub object's data:\n%s", what, out)
			}
		}
		t.Logf("%s: %s", what, strings.TrimSpace(out))
	}
	notInApp := "argocd-initial-admin-secret not found as part of application " + appName
	const noCache = "error getting cached app managed resources: cache: key is missing"
	target := []string{"--kind", "Secret", "--resource-name", "argocd-initial-admin-secret", "--namespace", sandbox.ArgoNamespace}
	for _, c := range []struct {
		args []string
		want string // "" for an answer of nothing, exit 0
	}{
		{[]string{"app", "get-resource", name, "--kind", "Secret", "--resource-name", "argocd-initial-admin-secret"}, notInApp},
		{append([]string{"app", "patch-resource", name, "--patch", `{"data":{"password":"cGF0Y2hlZA=="}}`, "--patch-type", "application/merge-patch+json"}, target...), noCache},
		{append([]string{"app", "delete-resource", name}, target...), noCache},
		{append([]string{"app", "actions", "list", name}, target...), noCache},
		{append([]string{"app", "actions", "run", name, "restart"}, target...), noCache},
		{[]string{"app", "logs", name, "--kind", "Secret", "--name", "argocd-initial-admin-secret", "--namespace", sandbox.ArgoNamespace}, ""},
		{[]string{"app", "diff", name}, noCache},
		{[]string{"app", "diff", name, "--server-side-diff"}, noCache},
		{[]string{"app", "manifests", name, "--source", "live"}, noCache},
	} {
		what := "argocd " + strings.Join(c.args[:2], " ")
		out, err := cli.run(2*time.Minute, c.args...)
		switch {
		case c.want == "" && (err != nil || strings.TrimSpace(out) != ""):
			t.Errorf("%s: %v, want nothing, exit 0\n%s", what, err, out)
		case c.want != "" && (err == nil || !strings.Contains(out, c.want)):
			t.Errorf("%s: %v, want an error saying %q\n%s", what, err, c.want, out)
		}
		answered(what, out)
	}

	// The calls that pass the uid guard act on the destination. In-cluster: the hub itself; named:
	// the server in the cluster's GitOpsCluster secret, a placeholder that never resolves, with no
	// credentials.
	events := struct {
		status int
		want   string
	}{http.StatusOK, `"items":null`}
	serverSideDiff := events
	serverSideDiff.status, serverSideDiff.want = http.StatusInternalServerError, "error getting managed resources: cache: key is missing"
	if named {
		secret := &corev1.Secret{}
		if err := hub.Get(ctx, types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: gitops.SecretName("cluster1")}, secret); err != nil {
			t.Fatal(err)
		}
		server := string(secret.Data["server"])
		// "error listing resource events: Get \"<server>/api/v1/...\": dial tcp: lookup
		// <cluster>.pull-model.invalid: no such host", and "failed to get OpenAPI schema: ... Get
		// \"<server>/openapi/v2...": the placeholder, not the hub.
		events.status, events.want = http.StatusInternalServerError, server+"/api/v1/namespaces/"+sandbox.ArgoNamespace+"/events?"
		serverSideDiff.want = server + "/openapi/v2"
	}
	query := "?appNamespace=" + sandbox.ArgoNamespace + "&namespace=" + sandbox.ArgoNamespace + "&resourceName=argocd-initial-admin-secret&version=v1&kind=Secret"
	for _, c := range []struct {
		method, path, body string
		status             int
		want               string
	}{
		{http.MethodGet, "/api/v1/applications/" + appName + "/resource" + query, "", http.StatusBadRequest, notInApp},
		{http.MethodPost, "/api/v1/applications/" + appName + "/resource" + query + "&patchType=application/merge-patch%2Bjson", `"{\"data\":{\"password\":\"cGF0Y2hlZA==\"}}"`, http.StatusBadRequest, notInApp},
		{http.MethodDelete, "/api/v1/applications/" + appName + "/resource" + query, "", http.StatusBadRequest, notInApp},
		{http.MethodGet, "/api/v1/applications/" + appName + "/resource/actions" + query, "", http.StatusBadRequest, notInApp},
		{http.MethodPost, "/api/v1/applications/" + appName + "/resource/actions" + query, `"restart"`, http.StatusBadRequest, notInApp},
		{http.MethodPost, "/api/v1/applications/" + appName + "/resource/actions/v2", fmt.Sprintf(`{"name":%q,"appNamespace":%q,"namespace":%q,"resourceName":"argocd-initial-admin-secret","version":"v1","kind":"Secret","action":"restart"}`, appName, sandbox.ArgoNamespace, sandbox.ArgoNamespace), http.StatusBadRequest, notInApp},
		{http.MethodGet, "/api/v1/applications/" + appName + "/resource/links" + query, "", http.StatusBadRequest, notInApp},
		// The one path without the uid guard: an empty uid matches a uid-less node, and the
		// destination's events with an empty involvedObject.uid are listed: on the hub, none.
		{http.MethodGet, "/api/v1/applications/" + appName + "/events?appNamespace=" + sandbox.ArgoNamespace + "&resourceNamespace=" + sandbox.ArgoNamespace + "&resourceName=argocd-initial-admin-secret&resourceUID=", "", events.status, events.want},
		{http.MethodGet, "/api/v1/applications/" + appName + "/logs" + query + "&follow=false", "", http.StatusOK, ""},
		{http.MethodGet, "/api/v1/applications/" + appName + "/server-side-diff?appNamespace=" + sandbox.ArgoNamespace, "", serverSideDiff.status, serverSideDiff.want},
	} {
		what := c.method + " " + strings.SplitN(c.path, "?", 2)[0]
		status, body := cli.api(t, c.method, c.path, c.body)
		if status != c.status || !strings.Contains(body, c.want) || c.want == "" && strings.TrimSpace(body) != "" {
			t.Errorf("%s: %d, want %d with %q\n%s", what, status, c.status, c.want, body)
		}
		answered(what, body)
	}

	// The hub objects are as they were; so are cluster1's (no verb reached it either).
	after, afterConfigMap := &corev1.Secret{}, &corev1.ConfigMap{}
	if err := hub.Get(ctx, secretKey, after); err != nil || after.ResourceVersion != hubSecret.ResourceVersion {
		t.Errorf("the hub's %s changed: %v, resourceVersion %s, was %s", secretKey, err, after.ResourceVersion, hubSecret.ResourceVersion)
	}
	if err := hub.Get(ctx, configMapKey, afterConfigMap); err != nil || afterConfigMap.ResourceVersion != hubConfigMap.ResourceVersion {
		t.Errorf("the hub's %s changed: %v, resourceVersion %s, was %s", configMapKey, err, afterConfigMap.ResourceVersion, hubConfigMap.ResourceVersion)
	}
	onCluster1 := &corev1.Secret{}
	if err := cluster1.Get(ctx, secretKey, onCluster1); err != nil || string(onCluster1.Data["password"]) != "cluster1-own" {
		t.Errorf("cluster1's own %s: %v, password %q", secretKey, err, onCluster1.Data["password"])
	}
}
