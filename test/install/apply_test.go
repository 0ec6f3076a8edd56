package install

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argocd-pull/argocd-pull/internal/localproc"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

// The objects an install creates in its namespace and cluster-wide, as docs/install.md's uninstall
// commands name them.
var (
	namespacedObjects = []string{
		"deployment.apps/" + deploymentName,
		"service/" + metricsService,
		"serviceaccount/" + serviceAccount,
		"role.rbac.authorization.k8s.io/" + leaderElection,
		"rolebinding.rbac.authorization.k8s.io/" + leaderElection,
	}
	// argocd-pull's Role in the Argo CD namespace: its only rights to Secrets, ConfigMaps, Roles
	// and RoleBindings; and the NetworkPolicy that admits it to Argo CD's redis.
	argoCDNamespaceObjects = []string{
		"role.rbac.authorization.k8s.io/" + argoCDNamespaceRole,
		"rolebinding.rbac.authorization.k8s.io/" + argoCDNamespaceRole,
		"networkpolicy.networking.k8s.io/argocd-pull-redis",
	}
	clusterObjects = []string{
		"clusterrole.rbac.authorization.k8s.io/" + clusterRole,
		"clusterrolebinding.rbac.authorization.k8s.io/" + clusterRole,
		"validatingadmissionpolicy.admissionregistration.k8s.io/" + resourceViewsPolicy,
		"validatingadmissionpolicybinding.admissionregistration.k8s.io/" + resourceViewsPolicy,
		"validatingadmissionpolicy.admissionregistration.k8s.io/" + viewHoldersPolicy,
		"validatingadmissionpolicybinding.admissionregistration.k8s.io/" + viewHoldersPolicy,
	}
	crds = []string{
		"customresourcedefinition.apiextensions.k8s.io/gitopsclusters.apps.open-cluster-management.io",
		"customresourcedefinition.apiextensions.k8s.io/multiclusterapplicationsetreports.apps.open-cluster-management.io",
		"customresourcedefinition.apiextensions.k8s.io/resourceviewholders.apps.open-cluster-management.io",
	}
)

// kube runs kubectl against the test apiserver.
type kube struct {
	t          *testing.T
	bin        string
	kubeconfig string
}

func newKube(t *testing.T, env *testenv.Env) kube {
	return kube{t: t, bin: kubectl(t), kubeconfig: env.Kubeconfig(t)}
}

func (k kube) run(args ...string) string {
	k.t.Helper()
	return string(run(k.t, nil, k.bin, append([]string{"--kubeconfig", k.kubeconfig}, args...)...))
}

func (k kube) runErr(args ...string) (string, error) {
	out, err := runErr(nil, k.bin, append([]string{"--kubeconfig", k.kubeconfig}, args...)...)
	return string(out), err
}

// serverSideApply applies a rendering the way docs/install.md says, optionally as a server dry run.
func (k kube) serverSideApply(manifest string, extra ...string) {
	k.t.Helper()
	k.run(append([]string{"apply", "--server-side", "--field-manager=argocd-pull-install", "-f", manifest}, extra...)...)
}

// createNamespace creates a namespace (server-side apply: it may exist already).
func (k kube) createNamespace(name string) {
	k.t.Helper()
	k.serverSideApply(writeFile(k.t, "namespace-"+name+".yaml", []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+name+"\n")))
}

func TestKustomizeInstall(t *testing.T) {
	env := testenv.Get(t)
	k := newKube(t, env)
	manifest := writeFile(t, "install.yaml", renderKustomize(t))
	// Argo CD runs in its namespace before argocd-pull is installed: the install puts a Role there.
	k.createNamespace(argoCDNamespace)

	// The test apiserver already has our CRDs (testenv installs them): applying identical CRDs
	// over them must succeed, as it does on a hub that had an earlier version.
	k.serverSideApply(manifest)
	t.Cleanup(func() { uninstall(t, k) })
	// Applying again is a no-op the apiserver accepts (what an upgrade with no change does).
	k.serverSideApply(manifest, "--dry-run=server")

	checkInstalled(t, k)
	checkServiceAccountPermissions(t, k)

	var dep appsv1.Deployment
	find(t, decode(t, renderKustomize(t)), "Deployment", deploymentName, &dep)
	runControllerAsServiceAccount(t, k, dep.Spec.Template.Spec.Containers[0].Args, "guestbook-kustomize", asProcess).Stop()
}

// uninstall runs docs/install.md's uninstall commands and checks that they remove every object of the
// install but the namespace (on an OCM hub, open-cluster-management holds OCM itself) and the
// CRDs (removing them deletes every GitOpsCluster and report).
func uninstall(t *testing.T, k kube) {
	t.Helper()
	k.run("delete", "-n", installNamespace, "deployment,service,serviceaccount,role,rolebinding", "-l", partOfLabel, "--wait=false")
	k.run("delete", "clusterrole,clusterrolebinding,validatingadmissionpolicy,validatingadmissionpolicybinding", "-l", partOfLabel, "--wait=false")
	k.run("delete", "-n", argoCDNamespace, "role,rolebinding,networkpolicy", "-l", partOfLabel, "--wait=false")
	checkUninstalled(t, k, "uninstall")
	k.run("get", "namespace", installNamespace)
	k.run(append([]string{"get", "-o", "name"}, crds...)...)
}

// checkUninstalled checks that none of the install's objects is left.
func checkUninstalled(t *testing.T, k kube, what string) {
	t.Helper()
	left := func(ns string, objs []string) {
		for _, obj := range objs {
			if out, err := k.runErr("get", "-n", ns, obj, "-o", "name"); err == nil {
				t.Errorf("%s left %s in %s", what, strings.TrimSpace(out), ns)
			}
		}
	}
	left(installNamespace, append(append([]string{}, namespacedObjects...), clusterObjects...))
	left(argoCDNamespace, argoCDNamespaceObjects)
}

func checkInstalled(t *testing.T, k kube) {
	t.Helper()
	k.run(append([]string{"wait", "--for=condition=Established", "--timeout=60s"}, crds...)...)
	k.run(append([]string{"get", "-n", installNamespace, "-o", "name"}, namespacedObjects...)...)
	k.run(append([]string{"get", "-n", argoCDNamespace, "-o", "name"}, argoCDNamespaceObjects...)...)
	k.run(append([]string{"get", "-o", "name"}, clusterObjects...)...)
}

// checkServiceAccountPermissions asks the apiserver's RBAC authorizer (a SubjectAccessReview, as
// 'kubectl auth can-i' does) what the controller's service account may do: what its controllers
// need, leader election in its own namespace only, Secrets, ConfigMaps and RBAC objects in the Argo
// CD namespace only, and nothing it does not need. Then it tries, as the service account, to mint
// RBAC (server dry run): the apiserver's escalation check lets it create no more than the
// placement reader Role the controller writes.
func checkServiceAccountPermissions(t *testing.T, k kube) {
	t.Helper()
	const tenant = "team-a" // any namespace but the Argo CD one; it need not exist
	as := "--as=system:serviceaccount:" + installNamespace + ":" + serviceAccount
	cases := []struct {
		verb, resource, subresource, namespace string // namespace "*": every namespace
		allowed                                bool
	}{
		{"create", "leases.coordination.k8s.io", "", installNamespace, true},
		{"update", "leases.coordination.k8s.io", "", installNamespace, true},
		{"create", "leases.coordination.k8s.io", "", "default", false},
		{"create", "manifestworks.work.open-cluster-management.io", "", "cluster1", true},
		{"patch", "applications.argoproj.io", "", argoCDNamespace, true},
		{"create", "applications.argoproj.io", "", argoCDNamespace, false},
		{"update", "gitopsclusters.apps.open-cluster-management.io", "status", argoCDNamespace, true},
		{"create", "multiclusterapplicationsetreports.apps.open-cluster-management.io", "", argoCDNamespace, true},
		// The resource view holders: argocd-pull's own records, in the Argo CD namespace, by name.
		{"create", "resourceviewholders.apps.open-cluster-management.io", "", argoCDNamespace, true},
		{"get", "resourceviewholders.apps.open-cluster-management.io/shard-0", "", argoCDNamespace, true},
		{"update", "resourceviewholders.apps.open-cluster-management.io/shard-7", "", argoCDNamespace, true},
		{"delete", "resourceviewholders.apps.open-cluster-management.io/shard-0", "", argoCDNamespace, false},
		{"list", "resourceviewholders.apps.open-cluster-management.io", "", argoCDNamespace, false},
		{"create", "resourceviewholders.apps.open-cluster-management.io", "", tenant, false},
		{"delete", "namespaces", "", "", false},
		{"create", "clusterrolebindings.rbac.authorization.k8s.io", "", "", false},

		// Secrets: the cluster secrets, in the Argo CD namespace only.
		{"create", "secrets", "", argoCDNamespace, true},
		{"list", "secrets", "", argoCDNamespace, true},
		{"watch", "secrets", "", argoCDNamespace, true},
		{"delete", "secrets", "", argoCDNamespace, true},
		{"list", "secrets", "", "*", false},
		{"watch", "secrets", "", "*", false},
		{"get", "secrets", "", "kube-system", false},
		{"get", "secrets", "", tenant, false},
		{"get", "secrets", "", installNamespace, false},
		{"create", "secrets", "", tenant, false},
		// ConfigMaps: create the placement generator, read it by name; nothing else.
		{"create", "configmaps", "", argoCDNamespace, true},
		{"get", "configmaps/ocm-placement-generator", "", argoCDNamespace, true},
		{"get", "configmaps/argocd-cm", "", argoCDNamespace, false},
		{"list", "configmaps", "", argoCDNamespace, false},
		{"update", "configmaps/ocm-placement-generator", "", argoCDNamespace, false},
		{"list", "configmaps", "", "*", false},
		{"get", "configmaps", "", "kube-system", false},
		{"create", "configmaps", "", tenant, false},
		// Roles and RoleBindings: create the placement reader, read it by name; never change,
		// delete, escalate or bind; nothing outside the Argo CD namespace.
		{"create", "roles.rbac.authorization.k8s.io", "", argoCDNamespace, true},
		{"create", "rolebindings.rbac.authorization.k8s.io", "", argoCDNamespace, true},
		{"get", "roles.rbac.authorization.k8s.io/argocd-pull-placement-reader", "", argoCDNamespace, true},
		{"get", "roles.rbac.authorization.k8s.io/argocd-server", "", argoCDNamespace, false},
		{"list", "roles.rbac.authorization.k8s.io", "", argoCDNamespace, false},
		{"update", "roles.rbac.authorization.k8s.io/argocd-pull-placement-reader", "", argoCDNamespace, false},
		{"delete", "rolebindings.rbac.authorization.k8s.io/argocd-pull-placement-reader", "", argoCDNamespace, false},
		{"escalate", "roles.rbac.authorization.k8s.io", "", argoCDNamespace, false},
		{"bind", "roles.rbac.authorization.k8s.io", "", argoCDNamespace, false},
		{"bind", "clusterroles.rbac.authorization.k8s.io", "", "", false},
		{"create", "roles.rbac.authorization.k8s.io", "", tenant, false},
		{"create", "rolebindings.rbac.authorization.k8s.io", "", "kube-system", false},
		{"create", "clusterroles.rbac.authorization.k8s.io", "", "", false},
	}
	for _, c := range cases {
		args := []string{"auth", "can-i", c.verb, c.resource, as}
		if c.subresource != "" {
			args = append(args, "--subresource="+c.subresource)
		}
		switch c.namespace {
		case "":
		case "*":
			args = append(args, "--all-namespaces")
		default:
			args = append(args, "-n", c.namespace)
		}
		// can-i prints yes or no (warnings aside) and exits 1 on no. Anything else is the command
		// failing, which must not pass for a "no".
		out, err := k.runErr(args...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		answer := strings.TrimSpace(lines[len(lines)-1])
		if answer != "yes" && answer != "no" || (answer == "yes") != (err == nil) {
			t.Errorf("kubectl %s gave no answer (%v):\n%s", strings.Join(args, " "), err, out)
			continue
		}
		if got := answer == "yes"; got != c.allowed {
			t.Errorf("the service account may %s %s (subresource %q) in %q: %q, want allowed=%t",
				c.verb, c.resource, c.subresource, c.namespace, answer, c.allowed)
		}
	}

	role := func(ns, rules string) string {
		return "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: minted\n  namespace: " + ns + "\nrules:\n" + rules
	}
	const (
		placementReader = "- apiGroups: [cluster.open-cluster-management.io]\n  resources: [placements, placementdecisions]\n  verbs: [get, list, watch]\n"
		secrets         = "- apiGroups: ['']\n  resources: [secrets]\n  verbs: [get, list]\n"
		everything      = "- apiGroups: ['*']\n  resources: ['*']\n  verbs: ['*']\n"
	)
	mints := []struct {
		what, manifest string
		allowed        bool
	}{
		{"the placement reader Role the controller writes", role(argoCDNamespace, placementReader), true},
		// What it holds in the Argo CD namespace it can hand on there, and no more (Kubernetes'
		// escalation rule): the secrets of that namespace, which a leaked token reads anyway.
		{"a Role granting the Argo CD namespace's secrets", role(argoCDNamespace, secrets), true},
		{"a Role granting everything in the Argo CD namespace", role(argoCDNamespace, everything), false},
		{"a Role granting secrets in kube-system", role("kube-system", secrets), false},
		{"a Role granting secrets in a tenant namespace", role("default", secrets), false},
		{"a ClusterRole granting secrets", "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: minted\nrules:\n" + secrets, false},
		{"a binding of cluster-admin in the Argo CD namespace", "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: minted\n  namespace: " + argoCDNamespace +
			"\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\nsubjects:\n- {kind: User, name: mallory}\n", false},
	}
	for i, m := range mints {
		out, err := k.runErr("create", "--dry-run=server", as, "-f", writeFile(t, fmt.Sprintf("mint-%d.yaml", i), []byte(m.manifest)))
		switch {
		case m.allowed && err != nil:
			t.Errorf("the service account may not create %s: %v", m.what, err)
		case !m.allowed && err == nil:
			t.Errorf("the service account may create %s: %s", m.what, out)
		case !m.allowed && !strings.Contains(err.Error(), "forbidden"):
			t.Errorf("creating %s failed, but not as forbidden: %v", m.what, err)
		}
	}
}

var (
	buildOnce sync.Once
	binaryDir string // removed when the test binary ends
	binary    string
	buildErr  error
)

// argocdPull builds bin/argocd-pull's equivalent once per test binary.
func argocdPull(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "argocd-pull-install-test-")
		if err != nil {
			buildErr = err
			return
		}
		binaryDir, binary = dir, filepath.Join(dir, "argocd-pull")
		_, buildErr = runErr(nil, "go", "build", "-o", binary, "./cmd/argocd-pull")
	})
	if buildErr != nil {
		t.Fatalf("building argocd-pull: %v", buildErr)
	}
	// Kept for the whole test binary (go test -count runs the tests again).
	return binary
}

// launcher starts the controller with args as the installed service account, whose token is
// given, its output in logPath: as a process (asProcess) or in the image (inContainer).
type launcher func(t *testing.T, k kube, args []string, token, logPath string) (*localproc.Process, error)

// asProcess runs the binary with a kubeconfig that carries the service account's token.
func asProcess(t *testing.T, k kube, args []string, token, logPath string) (*localproc.Process, error) {
	kubeconfig := serviceAccountKubeconfig(t, k.kubeconfig, token)
	return localproc.Start(logPath, argocdPull(t), append(args, "--kubeconfig="+kubeconfig))
}

// globalClusters is the YAML of the samples' global ManagedClusterSet and, for each cluster, its
// namespace and an accepted ManagedCluster in that set, with the extra label lines (indented
// under labels).
func globalClusters(extraLabels string, clusters ...string) string {
	var out strings.Builder
	out.WriteString(`apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSet
metadata:
  name: global
spec:
  clusterSelector:
    selectorType: LabelSelector
    labelSelector: {}
`)
	for _, c := range clusters {
		fmt.Fprintf(&out, `---
apiVersion: v1
kind: Namespace
metadata:
  name: %[1]s
---
apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
metadata:
  name: %[1]s
  labels:
    cluster.open-cluster-management.io/clusterset: global
%[2]sspec:
  hubAcceptsClient: true
`, c, extraLabels)
	}
	return out.String()
}

// runControllerAsServiceAccount runs argocd-pull with the Deployment's arguments and a token of
// the installed service account, as the pod would: it must win the leader election in its
// namespace, start every controller without a forbidden request (its caches list Secrets only in
// the Argo CD namespace), serve its probes, reconcile the blog's GitOpsCluster (cluster secret,
// placement generator ConfigMap, ApplicationSet RBAC) and propagate a pull-model Application.
// The controller runs on for the caller until the test ends.
func runControllerAsServiceAccount(t *testing.T, k kube, deploymentArgs []string, app string, launch launcher) *localproc.Process {
	g := NewWithT(t)

	// The hub side of the samples: a cluster the placement selects, in the global
	// ManagedClusterSet (bound to the Argo CD namespace by the samples), with its namespace.
	k.run("apply", "--server-side", "-k", "config/samples")
	k.run("apply", "--server-side", "-f", writeFile(t, "cluster.yaml", []byte(globalClusters("    environment: dev\n", "cluster1")+`---
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: PlacementDecision
metadata:
  name: bgdk-app-placement-decision-1
  namespace: openshift-gitops
  labels:
    cluster.open-cluster-management.io/placement: bgdk-app-placement
    cluster.open-cluster-management.io/decision-group-index: "0"
`)))
	k.run("apply", "--server-side", "--subresource=status", "-f", writeFile(t, "decision.yaml", []byte(`
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: PlacementDecision
metadata:
  name: bgdk-app-placement-decision-1
  namespace: openshift-gitops
status:
  decisions:
  - clusterName: cluster1
    reason: selected
`)))

	// A run before this one may have registered the cluster: what the GitOpsCluster writes
	// (cluster secret, placement generator, placement reader Role and RoleBinding) must be written
	// again, under this install's RBAC.
	k.run("delete", "-n", argoCDNamespace, "secret/cluster1-cluster-secret", "configmap/ocm-placement-generator",
		"role/argocd-pull-placement-reader", "rolebinding/argocd-pull-placement-reader", "--ignore-not-found")

	token := strings.TrimSpace(k.run("create", "token", serviceAccount, "-n", installNamespace, "--duration=1h"))

	probes, metrics := freeAddr(t), freeAddr(t)
	args := make([]string, 0, len(deploymentArgs)+2)
	for _, a := range deploymentArgs {
		args = append(args, strings.ReplaceAll(a, "$(POD_NAMESPACE)", installNamespace))
	}
	// Flags given later win: the ports move to free loopback ports, nothing else changes.
	args = append(args, "--health-probe-bind-address="+probes, "--metrics-bind-address="+metrics)

	logPath := filepath.Join(t.TempDir(), "controller.log")
	ctl, err := launch(t, k, args, token, logPath)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		ctl.Stop()
		if t.Failed() {
			data, _ := os.ReadFile(logPath)
			t.Logf("controller log:\n%s", data)
		}
	})

	log := func() string {
		data, _ := os.ReadFile(logPath)
		return string(data)
	}
	check := func(what string, cond func() error) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for {
			select {
			case <-ctl.Done():
				t.Fatalf("the controller exited (%v) before %s", ctl.Err(), what)
			default:
			}
			if strings.Contains(log(), "is forbidden: User") {
				t.Fatalf("the controller was refused a request with the installed RBAC (%s)", what)
			}
			err := cond()
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %v", what, err)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}

	check("probes served", func() error {
		for _, path := range []string{"/healthz", "/readyz"} {
			if err := httpOK("http://" + probes + path); err != nil {
				return err
			}
		}
		return httpOK("http://" + metrics + "/metrics")
	})
	check("leader elected in "+installNamespace, func() error {
		out, err := k.runErr("get", "lease", "-n", installNamespace, "argocd-pull.apps.open-cluster-management.io",
			"-o", "jsonpath={.spec.holderIdentity}")
		if err != nil || strings.TrimSpace(out) == "" {
			return fmt.Errorf("no lease holder yet (%v)", err)
		}
		return nil
	})
	check("the sample GitOpsCluster registered cluster1", func() error {
		out, err := k.runErr("get", "secret", "-n", argoCDNamespace, "cluster1-cluster-secret",
			"-o", `jsonpath={.metadata.annotations.apps\.open-cluster-management\.io/gitopsclusters}`)
		if err != nil || out != argoCDNamespace+"/argo-acm-importer" {
			return fmt.Errorf("cluster secret claimed by %q (%v)", out, err)
		}
		return nil
	})
	check("the sample GitOpsCluster is Ready", func() error {
		out, err := k.runErr("get", "gitopscluster", "-n", argoCDNamespace, "argo-acm-importer",
			"-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.message}`)
		if err != nil || !strings.HasPrefix(out, "True") {
			return fmt.Errorf("ready: %q (%v)", out, err)
		}
		return nil
	})
	// Controllers start together after the election; by the time the GitOpsCluster is Ready
	// every one has logged "Starting Controller", and each must reach "Starting workers" (its
	// caches synced with the installed RBAC).
	check("every controller started", func() error {
		starting, started := controllerLogs(log(), "Starting Controller"), controllerLogs(log(), "Starting workers")
		if len(starting) == 0 {
			return fmt.Errorf("no controller started")
		}
		for name := range starting {
			if !started[name] {
				return fmt.Errorf("controller %s has not synced its caches", name)
			}
		}
		return nil
	})
	t.Logf("controllers running with the installed RBAC: %v", slices.Sorted(maps.Keys(controllerLogs(log(), "Starting workers"))))
	k.run("get", "configmap", "-n", argoCDNamespace, "ocm-placement-generator")
	k.run("get", "role,rolebinding", "-n", argoCDNamespace, "argocd-pull-placement-reader")

	// A pull-model Application, as the documents' ApplicationSet template makes it, becomes a
	// ManifestWork in the cluster's namespace, and its ApplicationSet gets a report.
	k.run("apply", "--server-side", "-f", writeFile(t, "applicationset.yaml", []byte(`
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata:
  name: `+app+`
  namespace: `+argoCDNamespace+`
spec:
  generators: []
  template:
    metadata: {}
    spec:
      project: default
      destination: {}
      source:
        repoURL: https://github.com/argoproj/argocd-example-apps.git
`)))
	t.Cleanup(func() {
		_, _ = k.runErr("delete", "applicationset", "-n", argoCDNamespace, app, "--ignore-not-found", "--wait=false")
	})
	appSetUID := k.run("get", "applicationset", "-n", argoCDNamespace, app, "-o", "jsonpath={.metadata.uid}")
	k.run("apply", "--server-side", "-f", writeFile(t, "application.yaml", []byte(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: `+app+`
  namespace: `+argoCDNamespace+`
  ownerReferences:
  - apiVersion: argoproj.io/v1alpha1
    kind: ApplicationSet
    name: `+app+`
    uid: `+appSetUID+`
  labels:
    apps.open-cluster-management.io/pull-to-ocm-managed-cluster: "true"
  annotations:
    apps.open-cluster-management.io/ocm-managed-cluster: cluster1
    argocd.argoproj.io/skip-reconcile: "true"
spec:
  project: default
  source:
    repoURL: https://github.com/argoproj/argocd-example-apps.git
    targetRevision: HEAD
    path: guestbook
  destination:
    server: https://kubernetes.default.svc
    namespace: guestbook
`)))
	t.Cleanup(func() {
		_, _ = k.runErr("delete", "application", "-n", argoCDNamespace, app, "--ignore-not-found", "--wait=false")
	})
	// The hub first asks cluster1 whether an Application of that name is there, through its claim
	// probe; standing in for cluster1's work agent, the test answers that there is none.
	check("cluster1 is asked about the Application through its claim probe", func() error {
		out, err := k.runErr("get", "manifestwork", "-n", "cluster1", manifestwork.ProbeName, "-o", "json")
		if err != nil {
			return fmt.Errorf("ManifestWork %s in cluster1: %v", manifestwork.ProbeName, err)
		}
		probe := &workv1.ManifestWork{}
		if err := json.Unmarshal([]byte(out), probe); err != nil {
			return err
		}
		if !manifestwork.ProbeAsks(probe, argoCDNamespace+"/"+app) {
			return fmt.Errorf("the claim probe asks about %v", manifestwork.ProbeEntries(probe))
		}
		testenv.AnswerProbe(probe, nil)
		answered, err := json.Marshal(probe)
		if err != nil {
			return err
		}
		_, err = k.runErr("replace", "--subresource=status", "-f", writeFile(t, "probe.json", answered))
		return err
	})
	work := manifestwork.WorkName(argoCDNamespace, app)
	check("the pull-model Application is propagated", func() error {
		out, err := k.runErr("get", "manifestwork", "-n", "cluster1", work,
			"-o", `jsonpath={.metadata.annotations.apps\.open-cluster-management\.io/hub-application-name}`)
		if err != nil || out != app {
			return fmt.Errorf("ManifestWork %s in cluster1: %q (%v)", work, out, err)
		}
		return nil
	})

	// One the hub refuses (no such cluster), so that every metric the monitoring reads has a
	// sample; then the alerts' and the dashboard's metrics are checked against this controller.
	k.run("apply", "--server-side", "-f", writeFile(t, "refused.yaml", []byte(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: `+app+`-refused
  namespace: `+argoCDNamespace+`
  labels:
    apps.open-cluster-management.io/pull-to-ocm-managed-cluster: "true"
  annotations:
    apps.open-cluster-management.io/ocm-managed-cluster: no-such-cluster
spec:
  project: default
  source:
    repoURL: https://github.com/argoproj/argocd-example-apps.git
    path: guestbook
  destination:
    server: https://kubernetes.default.svc
    namespace: guestbook
`)))
	t.Cleanup(func() {
		_, _ = k.runErr("delete", "application", "-n", argoCDNamespace, app+"-refused", "--ignore-not-found", "--wait=false")
	})
	check("the refused Application counted", func() error {
		body, err := scrape("http://" + metrics + "/metrics")
		if err != nil {
			return err
		}
		if !strings.Contains(body, `argocd_pull_refused_applications{reason="ManagedClusterNotFound"} 1`) {
			return fmt.Errorf("not in the scrape yet")
		}
		return nil
	})
	check("the ApplicationSet's report", func() error {
		_, err := k.runErr("get", "multiclusterapplicationsetreport", "-n", argoCDNamespace, app)
		return err
	})
	checkMonitoringNamesExportedMetrics(t, "http://"+metrics+"/metrics")
	return ctl
}

// controllerLogs returns the controllers named by the JSON log lines with the message msg.
func controllerLogs(log, msg string) map[string]bool {
	names := map[string]bool{}
	for _, line := range strings.Split(log, "\n") {
		var entry struct{ Msg, Controller string }
		if json.Unmarshal([]byte(line), &entry) == nil && entry.Msg == msg && entry.Controller != "" {
			names[entry.Controller] = true
		}
	}
	return names
}

// serviceAccountKubeconfig is the admin kubeconfig's cluster with the service account's token.
func serviceAccountKubeconfig(t *testing.T, admin, token string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(admin)
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil {
		t.Fatalf("kubeconfig %s has no current context", admin)
	}
	out := clientcmdapi.NewConfig()
	out.Clusters["hub"] = cfg.Clusters[ctx.Cluster]
	out.AuthInfos["controller"] = &clientcmdapi.AuthInfo{Token: token}
	out.Contexts["controller"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "controller"}
	out.CurrentContext = "controller"
	path := filepath.Join(t.TempDir(), "controller.kubeconfig")
	if err := clientcmd.WriteToFile(*out, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := localproc.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

func httpOK(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

func TestHelmInstall(t *testing.T) {
	env := testenv.Get(t)
	k := newKube(t, env)
	h := func(args ...string) string {
		t.Helper()
		return string(run(t, helmEnv(t), helm(t), append(args, "--kubeconfig", k.kubeconfig)...))
	}

	// The rendering passes the apiserver's validation and admission as a server-side apply into
	// the namespace (helm's --create-namespace creates it first) and the Argo CD namespace (Argo
	// CD runs there before argocd-pull is installed).
	k.createNamespace(installNamespace)
	k.createNamespace(argoCDNamespace)
	k.serverSideApply(writeFile(t, "chart.yaml", renderHelm(t)), "--dry-run=server")

	// The real thing: install (CRDs from crds/ already exist and are kept), upgrade, uninstall.
	h("install", release, chartDir, "--namespace", installNamespace, "--create-namespace")
	uninstalled := false
	t.Cleanup(func() {
		if !uninstalled {
			h("uninstall", release, "--namespace", installNamespace)
		}
	})
	checkInstalled(t, k)
	checkServiceAccountPermissions(t, k)
	var installed appsv1.Deployment
	find(t, decode(t, []byte(k.run("get", "deployment", "-n", installNamespace, deploymentName, "-o", "yaml"))), "Deployment", deploymentName, &installed)
	runControllerAsServiceAccount(t, k, installed.Spec.Template.Spec.Containers[0].Args, "guestbook-helm", asProcess).Stop()

	// The Argo CD namespace value moves the Role with the flag.
	k.createNamespace("argocd")

	h("upgrade", release, chartDir, "--namespace", installNamespace, "--reuse-values",
		"--set", "replicas=2", "--set", "argocdNamespace=argocd")
	var dep appsv1.Deployment
	find(t, decode(t, []byte(k.run("get", "deployment", "-n", installNamespace, deploymentName, "-o", "yaml"))), "Deployment", deploymentName, &dep)
	g := NewWithT(t)
	g.Expect(*dep.Spec.Replicas).To(BeEquivalentTo(2))
	g.Expect(dep.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--argocd-namespace=argocd"))
	k.run(append([]string{"get", "-n", "argocd", "-o", "name"}, argoCDNamespaceObjects...)...)
	for _, obj := range argoCDNamespaceObjects {
		if out, err := k.runErr("get", "-n", argoCDNamespace, obj, "-o", "name"); err == nil {
			t.Errorf("after the upgrade to argocdNamespace=argocd, %s is left in %s", strings.TrimSpace(out), argoCDNamespace)
		}
	}

	h("uninstall", release, "--namespace", installNamespace)
	uninstalled = true
	checkUninstalled(t, k, "helm uninstall")
	for _, obj := range argoCDNamespaceObjects {
		if out, err := k.runErr("get", "-n", "argocd", obj, "-o", "name"); err == nil {
			t.Errorf("helm uninstall left %s in argocd", strings.TrimSpace(out))
		}
	}
	// Helm never deletes the CRDs of crds/: GitOpsClusters and reports survive an uninstall.
	k.run(append([]string{"get", "-o", "name"}, crds...)...)
}
