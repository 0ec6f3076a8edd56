package install

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/argocd-pull/argocd-pull/internal/cli"
)

// The objects both installs create, besides the Namespace (kustomize renders it; Helm users pass
// --create-namespace).
var wantObjects = []string{
	"CustomResourceDefinition/gitopsclusters.apps.open-cluster-management.io",
	"CustomResourceDefinition/multiclusterapplicationsetreports.apps.open-cluster-management.io",
	"CustomResourceDefinition/resourceviewholders.apps.open-cluster-management.io",
	"ServiceAccount/" + installNamespace + "/" + serviceAccount,
	"ClusterRole/" + clusterRole,
	"ClusterRoleBinding/" + clusterRole,
	"Role/" + installNamespace + "/" + leaderElection,
	"RoleBinding/" + installNamespace + "/" + leaderElection,
	"Role/" + argoCDNamespace + "/" + argoCDNamespaceRole,
	"RoleBinding/" + argoCDNamespace + "/" + argoCDNamespaceRole,
	"Deployment/" + installNamespace + "/" + deploymentName,
	"Service/" + installNamespace + "/" + metricsService,
	"NetworkPolicy/" + argoCDNamespace + "/argocd-pull-redis",
	"ValidatingAdmissionPolicy/" + resourceViewsPolicy,
	"ValidatingAdmissionPolicyBinding/" + resourceViewsPolicy,
	"ValidatingAdmissionPolicy/" + viewHoldersPolicy,
	"ValidatingAdmissionPolicyBinding/" + viewHoldersPolicy,
}

func TestKustomizeAndHelmRenderTheSameObjects(t *testing.T) {
	g := NewWithT(t)
	kustomized := byKey(decode(t, renderKustomize(t)))
	templated := byKey(decode(t, renderHelm(t)))

	g.Expect(kustomized).To(HaveKey("Namespace/"+installNamespace), "config/default creates the install namespace")
	delete(kustomized, "Namespace/"+installNamespace)
	g.Expect(sortedKeys(kustomized)).To(ConsistOf(wantObjects), "objects of config/default")
	g.Expect(sortedKeys(templated)).To(ConsistOf(wantObjects), "objects of the Helm chart")

	// Same content: only the labels of the objects themselves differ (managed-by, chart, version).
	for _, k := range wantObjects {
		if kustomized[k] == nil || templated[k] == nil {
			continue
		}
		if chart, config := withoutLabels(t, templated[k]), withoutLabels(t, kustomized[k]); chart != config {
			t.Errorf("%s differs between the chart and config/ (after 'make generate', run 'make chart'; else edit both)\nchart:\n%s\nconfig/default:\n%s", k, chart, config)
		}
	}
}

func sortedKeys(m map[string]*unstructured.Unstructured) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// withoutLabels renders an object as YAML without its own labels, for a readable diff.
func withoutLabels(t *testing.T, o *unstructured.Unstructured) string {
	t.Helper()
	c := o.DeepCopy()
	c.SetLabels(nil)
	out, err := yaml.Marshal(c.Object)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func TestDeploymentContract(t *testing.T) {
	renderings := map[string]func(*testing.T) []byte{
		"kustomize": renderKustomize,
		"helm":      func(t *testing.T) []byte { return renderHelm(t) },
	}
	for name, render := range renderings {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			objs := decode(t, render(t))

			var dep appsv1.Deployment
			find(t, objs, "Deployment", deploymentName, &dep)
			g.Expect(dep.Namespace).To(Equal(installNamespace))
			g.Expect(*dep.Spec.Replicas).To(BeEquivalentTo(1))
			pod := dep.Spec.Template.Spec
			g.Expect(pod.ServiceAccountName).To(Equal(serviceAccount))
			g.Expect(pod.Containers).To(HaveLen(1), "one container: one manager runs every controller")
			c := pod.Containers[0]

			g.Expect(c.Image).To(Equal("ghcr.io/argocd-pull/argocd-pull:v0.1.0"))
			g.Expect(c.Args).To(HaveExactElements(
				"controller",
				"--leader-elect",
				"--leader-election-namespace=$(POD_NAMESPACE)",
				"--argocd-namespace="+argoCDNamespace,
				"--metrics-bind-address=:8080",
				"--health-probe-bind-address=:8081",
				// The hub Argo CD's redis, where the resource trees go.
				"--argocd-redis=argocd-redis."+argoCDNamespace+".svc:6379",
			))
			g.Expect(c.Env).To(ContainElement(HaveField("Name", "POD_NAMESPACE")))
			for _, e := range c.Env {
				if e.Name == "POD_NAMESPACE" {
					g.Expect(e.ValueFrom).NotTo(BeNil())
					g.Expect(e.ValueFrom.FieldRef.FieldPath).To(Equal("metadata.namespace"))
				}
			}
			checkControllerAccepts(t, c.Args)

			g.Expect(c.Ports).To(ConsistOf(
				corev1.ContainerPort{Name: "metrics", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
				corev1.ContainerPort{Name: "health", ContainerPort: 8081, Protocol: corev1.ProtocolTCP},
			))
			g.Expect(c.LivenessProbe).NotTo(BeNil())
			g.Expect(c.LivenessProbe.HTTPGet.Path).To(Equal("/healthz"))
			g.Expect(c.LivenessProbe.HTTPGet.Port).To(Equal(intstr.FromString("health")))
			g.Expect(c.ReadinessProbe).NotTo(BeNil())
			g.Expect(c.ReadinessProbe.HTTPGet.Path).To(Equal("/readyz"))
			g.Expect(c.ReadinessProbe.HTTPGet.Port).To(Equal(intstr.FromString("health")))

			g.Expect(c.Resources.Requests).To(HaveKey(corev1.ResourceCPU))
			g.Expect(c.Resources.Requests).To(HaveKey(corev1.ResourceMemory))
			g.Expect(c.Resources.Limits).To(HaveKey(corev1.ResourceMemory))

			g.Expect(pod.SecurityContext).NotTo(BeNil())
			g.Expect(pod.SecurityContext.RunAsNonRoot).To(HaveValue(BeTrue()))
			g.Expect(pod.SecurityContext.SeccompProfile).To(HaveValue(HaveField("Type", corev1.SeccompProfileTypeRuntimeDefault)))
			g.Expect(c.SecurityContext).NotTo(BeNil())
			g.Expect(c.SecurityContext.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()))
			g.Expect(c.SecurityContext.AllowPrivilegeEscalation).To(HaveValue(BeFalse()))
			g.Expect(c.SecurityContext.Capabilities).To(HaveValue(HaveField("Drop", ConsistOf(corev1.Capability("ALL")))))

			var svc corev1.Service
			find(t, objs, "Service", metricsService, &svc)
			g.Expect(labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(dep.Spec.Template.Labels))).To(BeTrue(),
				"the metrics Service selects the controller's pods")
			g.Expect(svc.Spec.Ports).To(ConsistOf(HaveField("TargetPort", intstr.FromString("metrics"))))

			var crb rbacv1.ClusterRoleBinding
			find(t, objs, "ClusterRoleBinding", clusterRole, &crb)
			g.Expect(crb.RoleRef.Name).To(Equal(clusterRole))
			g.Expect(crb.Subjects).To(ConsistOf(rbacv1.Subject{Kind: "ServiceAccount", Name: serviceAccount, Namespace: installNamespace}))

			var cr rbacv1.ClusterRole
			find(t, objs, "ClusterRole", clusterRole, &cr)
			g.Expect(cr.Rules).To(Equal(generatedRules(t)), "the ClusterRole is config/rbac/role.yaml's (run 'make chart' after 'make generate')")
			for _, r := range cr.Rules {
				g.Expect(r.Resources).NotTo(ContainElement(BeElementOf("secrets", "configmaps", "roles", "rolebindings", "*")),
					"no Secrets, ConfigMaps or RBAC objects cluster-wide")
			}
			checkArgoCDNamespaceRoles(t, objs, c.Args)

			var role rbacv1.Role
			find(t, objs, "Role", leaderElection, &role)
			g.Expect(role.Rules).To(ContainElement(And(
				HaveField("APIGroups", ContainElement("coordination.k8s.io")),
				HaveField("Resources", ContainElement("leases")),
				HaveField("Verbs", ContainElements("get", "create", "update")),
			)))
			var rb rbacv1.RoleBinding
			find(t, objs, "RoleBinding", leaderElection, &rb)
			g.Expect(rb.RoleRef.Name).To(Equal(leaderElection))
			g.Expect(rb.Subjects).To(ConsistOf(rbacv1.Subject{Kind: "ServiceAccount", Name: serviceAccount, Namespace: installNamespace}))
		})
	}
}

// checkArgoCDNamespaceRoles checks that a rendering gives the controller its Role (the rules of
// config/argocd-namespace/role.yaml) in exactly the Argo CD namespaces its flags name.
func checkArgoCDNamespaceRoles(t *testing.T, objs []*unstructured.Unstructured, args []string) {
	t.Helper()
	g := NewWithT(t)
	var named []string
	for _, a := range args {
		if ns, ok := strings.CutPrefix(a, "--argocd-namespace="); ok {
			named = append(named, ns)
		}
		if nss, ok := strings.CutPrefix(a, "--gitops-namespaces="); ok {
			named = append(named, strings.Split(nss, ",")...)
		}
	}
	slices.Sort(named)
	named = slices.Compact(named)

	var file rbacv1.Role
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "config", "argocd-namespace", "role.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	find(t, decode(t, data), "Role", argoCDNamespaceRole, &file)

	var roles, bindings []string
	for _, o := range objs {
		if o.GetName() != argoCDNamespaceRole {
			continue
		}
		switch o.GetKind() {
		case "Role":
			roles = append(roles, o.GetNamespace())
			var role rbacv1.Role
			g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role)).To(Succeed())
			g.Expect(role.Rules).To(Equal(file.Rules), "the Role in %s is config/argocd-namespace/role.yaml's (run 'make chart')", o.GetNamespace())
		case "RoleBinding":
			bindings = append(bindings, o.GetNamespace())
			var rb rbacv1.RoleBinding
			g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &rb)).To(Succeed())
			g.Expect(rb.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: argoCDNamespaceRole}))
			g.Expect(rb.Subjects).To(ConsistOf(rbacv1.Subject{Kind: "ServiceAccount", Name: serviceAccount, Namespace: installNamespace}))
		}
	}
	g.Expect(roles).To(ConsistOf(named), "a Role in each Argo CD namespace the flags name, and nowhere else")
	g.Expect(bindings).To(ConsistOf(named), "a RoleBinding in each Argo CD namespace the flags name, and nowhere else")
}

// generatedRules are the rules controller-gen wrote into config/rbac/role.yaml.
func generatedRules(t *testing.T) []rbacv1.PolicyRule {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cr rbacv1.ClusterRole
	find(t, decode(t, data), "ClusterRole", clusterRole, &cr)
	return cr.Rules
}

// checkControllerAccepts parses the Deployment's arguments with the real command line, so a
// renamed or removed flag fails here rather than in a crash-looping pod.
func checkControllerAccepts(t *testing.T, args []string) {
	t.Helper()
	expanded := make([]string, len(args))
	for i, a := range args {
		expanded[i] = strings.ReplaceAll(a, "$(POD_NAMESPACE)", installNamespace)
	}
	cmd, rest, err := cli.NewRootCommand().Find(expanded)
	if err != nil {
		t.Fatalf("finding the command of %q: %v", args, err)
	}
	if cmd.Name() != "controller" {
		t.Fatalf("the Deployment runs %q, want the controller command", cmd.CommandPath())
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Fatalf("argocd-pull controller refuses the Deployment's arguments %q: %v", rest, err)
	}
	if ns, _ := cmd.Flags().GetString("leader-election-namespace"); ns != installNamespace {
		t.Errorf("--leader-election-namespace = %q after expanding $(POD_NAMESPACE), want %q", ns, installNamespace)
	}
}

func TestHelmValues(t *testing.T) {
	g := NewWithT(t)
	objs := decode(t, renderHelm(t,
		"--set", "replicas=2",
		"--set", "argocdNamespace=argocd",
		"--set", "pullNamespaces={team-a,team-b}",
		"--set", "managedNamespaceGrants.team-a={team-a-prod,shared}",
		"--set", "gitopsNamespaces={argocd,team-argocd}",
		"--set", "argocdNamespaceGrants.team-a={argocd}",
		"--set", "argocdNamespaceGrants.team-b={argocd,team-argocd}",
		"--set", "extraArgs={--concurrency=8,--zap-log-level=debug}",
		"--set", "adoptUpstreamWorks=true",
		"--set", "image.repository=registry.example/argocd-pull,image.tag=dev,image.pullPolicy=Always",
		"--set", "nodeSelector.kubernetes\\.io/os=linux",
		"--set", "metrics.service.enabled=false",
	))
	var dep appsv1.Deployment
	find(t, objs, "Deployment", deploymentName, &dep)
	g.Expect(*dep.Spec.Replicas).To(BeEquivalentTo(2), "leader election is always on, so replicas may be raised")
	c := dep.Spec.Template.Spec.Containers[0]
	g.Expect(c.Image).To(Equal("registry.example/argocd-pull:dev"))
	g.Expect(c.ImagePullPolicy).To(Equal(corev1.PullAlways))
	g.Expect(c.Args).To(ContainElements(
		"--leader-elect",
		"--argocd-namespace=argocd",
		"--pull-namespaces=team-a,team-b",
		"--grant-managed-namespaces=team-a=team-a-prod,shared",
		"--gitops-namespaces=argocd,team-argocd",
		"--grant-argocd-namespaces=team-a=argocd",
		"--grant-argocd-namespaces=team-b=argocd,team-argocd",
		"--concurrency=8",
		"--zap-log-level=debug",
		"--adopt-upstream-works",
	))
	checkControllerAccepts(t, c.Args)
	checkArgoCDNamespaceRoles(t, objs, c.Args)
	g.Expect(byKey(objs)).To(HaveKey("Role/team-argocd/"+argoCDNamespaceRole), "a Role in each of gitopsNamespaces")
	g.Expect(byKey(objs)).NotTo(HaveKey("Role/"+argoCDNamespace+"/"+argoCDNamespaceRole), "none in the default Argo CD namespace once argocdNamespace moves")

	// A grant of a namespace the install does not name is refused at render time, as the
	// controller would refuse it at start.
	_, err := runErr(helmEnv(t), helm(t), "template", release, chartDir, "--set", "argocdNamespaceGrants.team-a={kube-system}")
	g.Expect(err).To(MatchError(ContainSubstring("argocdNamespaceGrants.team-a names kube-system")))
	g.Expect(dep.Spec.Template.Spec.NodeSelector).To(Equal(map[string]string{"kubernetes.io/os": "linux"}))
	g.Expect(byKey(objs)).NotTo(HaveKey("Service/"+installNamespace+"/"+metricsService), "metrics.service.enabled=false")
}

// OCM's channel (docs/install.md): the values that turn it on become the controller's flags, which
// it accepts, and probeInterval is passed only when set.
func TestHelmClusterAccess(t *testing.T) {
	g := NewWithT(t)
	channel := []string{
		"--set", "clusterAccess.clusterProxyURL=https://cluster-proxy-addon-user.multicluster-engine.svc:9092",
		"--set", "clusterAccess.caConfigMap=openshift-service-ca.crt",
		"--set", "clusterAccess.caConfigMapKey=service-ca.crt",
	}
	args := func(more ...string) []string {
		var dep appsv1.Deployment
		find(t, decode(t, renderHelm(t, append(slices.Clone(channel), more...)...)), "Deployment", deploymentName, &dep)
		return dep.Spec.Template.Spec.Containers[0].Args
	}
	byDefault := args()
	g.Expect(byDefault).To(ContainElements(
		"--cluster-proxy-url=https://cluster-proxy-addon-user.multicluster-engine.svc:9092",
		"--cluster-proxy-ca-file=/etc/argocd-pull/cluster-proxy-ca/ca.crt",
		"--managed-serviceaccounts=argocd-pull",
	))
	g.Expect(byDefault).NotTo(ContainElement(HavePrefix("--cluster-probe-interval")), "the controller's default")
	checkControllerAccepts(t, byDefault)
	set := args("--set", "clusterAccess.probeInterval=10m")
	g.Expect(set).To(ContainElement("--cluster-probe-interval=10m"))
	checkControllerAccepts(t, set)

	_, err := runErr(helmEnv(t), helm(t), "template", release, chartDir, "--set", "clusterAccess.probeInterval=ten minutes")
	g.Expect(err).To(MatchError(And(ContainSubstring("values don't meet the specifications of the schema"), ContainSubstring("probeInterval"))))
}

func TestHelmLint(t *testing.T) {
	out := run(t, helmEnv(t), helm(t), "lint", "--strict", chartDir)
	t.Logf("%s", out)
}

// values.schema.json: a wrong value fails at 'helm install' (here 'helm template', which checks
// the same), with helm's message naming it, instead of being ignored or failing in the cluster.
func TestHelmRefusesWrongValues(t *testing.T) {
	for name, tt := range map[string]struct {
		set, want string
	}{
		"a typo in a key":                {"imag.tag=dev", "additional properties 'imag' not allowed"},
		"no replicas":                    {"replicas=0", "replicas"},
		"a port out of range":            {"metrics.port=70000", "metrics.port"},
		"the health port":                {"metrics.port=8081", "metrics.port"},
		"a namespace that is not a name": {"pullNamespaces={Team_A}", "pullNamespaces"},
		"an unknown pull policy":         {"image.pullPolicy=Sometimes", "pullPolicy"},
		"a controller flag without --":   {"extraArgs={concurrency=8}", "extraArgs"},
		"a grant of a bad namespace":     {"managedNamespaceGrants.team-a={Prod}", "managedNamespaceGrants"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := runErr(helmEnv(t), helm(t), "template", release, chartDir, "--set", tt.set)
			NewWithT(t).Expect(err).To(MatchError(And(ContainSubstring("values don't meet the specifications of the schema"), ContainSubstring(tt.want))))
		})
	}
}

// With more than one replica (warm standbys), a PodDisruptionBudget keeps one to take the lease.
func TestHelmPodDisruptionBudget(t *testing.T) {
	g := NewWithT(t)
	g.Expect(byKey(decode(t, renderHelm(t)))).NotTo(HaveKey("PodDisruptionBudget/"+installNamespace+"/"+deploymentName), "one replica: no budget to keep")
	var pdb policyv1.PodDisruptionBudget
	find(t, decode(t, renderHelm(t, "--set", "replicas=3")), "PodDisruptionBudget", deploymentName, &pdb)
	g.Expect(pdb.Spec.MaxUnavailable.IntValue()).To(Equal(1))
	g.Expect(pdb.Spec.Selector.MatchLabels).To(Equal(map[string]string{"app.kubernetes.io/name": "argocd-pull", "app.kubernetes.io/component": "controller"}),
		"the Deployment's pods")
}
