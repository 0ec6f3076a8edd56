package doctor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/cli"
	"github.com/argocd-pull/argocd-pull/internal/doctor"
	"github.com/argocd-pull/argocd-pull/internal/gitops"
	"github.com/argocd-pull/argocd-pull/internal/repocreds"
	"github.com/argocd-pull/argocd-pull/internal/resourcetree"
	"github.com/argocd-pull/argocd-pull/internal/scheme"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const placementName = "aws-app-placement" // the documents' ApplicationSet selects its decisions

// scenario is one test's pull-model setup: the test's namespace on the hub as the Argo CD
// namespace, a managed cluster named after it, and on the package's managed-cluster apiserver
// namespaces and service accounts of its own, so that tests sharing the apiservers stay apart.
type scenario struct {
	t          *testing.T
	g          *WithT
	ctx        context.Context
	hub, spoke *testenv.Env
	// ns is the Argo CD namespace on the hub.
	ns string
	// cluster is the managed cluster's name.
	cluster string
	// argoNS is Argo CD's namespace on the managed cluster, where the Applications go;
	// destNS is where they deploy; workNS is the work agent's namespace. All unique per test.
	argoNS, destNS, workNS string
}

func newScenario(t *testing.T) *scenario {
	hub := testenv.Get(t)
	spoke := testenv.GetManaged(t)
	ns := hub.Namespace(t)
	return &scenario{t: t, g: NewWithT(t), ctx: context.Background(), hub: hub, spoke: spoke, ns: ns,
		cluster: ns + "-c1", argoNS: ns + "-argocd", destNS: ns + "-guestbook", workNS: ns + "-agent"}
}

func (s *scenario) options() doctor.Options {
	s.t.Helper()
	sch, err := scheme.New()
	s.g.Expect(err).NotTo(HaveOccurred())
	hub, err := doctor.NewCluster("hub", s.hub.Config, sch)
	s.g.Expect(err).NotTo(HaveOccurred())
	spoke, err := doctor.NewCluster(s.cluster, s.spoke.Config, sch)
	s.g.Expect(err).NotTo(HaveOccurred())
	return doctor.Options{Hub: hub, ArgoCDNamespace: s.ns, Managed: []doctor.Cluster{spoke},
		ManagedArgoCDNamespace: s.argoNS, WorkAgentNamespace: s.workNS}
}

func (s *scenario) run() doctor.Report {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
	defer cancel()
	return doctor.Run(ctx, s.options())
}

// result finds the one result of a check.
func (s *scenario) result(r doctor.Report, id string) doctor.Result {
	s.t.Helper()
	var found []doctor.Result
	for _, c := range r.Checks {
		if c.ID == id {
			found = append(found, c)
		}
	}
	s.g.Expect(found).To(HaveLen(1), "results of %s in %+v", id, r.Checks)
	return found[0]
}

// expect runs the doctor and checks one check's status and that its message (and fix) say what
// is wanted.
func (s *scenario) expect(id string, status doctor.Status, message string) doctor.Result {
	s.t.Helper()
	r := s.result(s.run(), id)
	s.g.Expect(r.Status).To(Equal(status), "%s: %s", id, r.Message)
	s.g.Expect(r.Message).To(ContainSubstring(message))
	if status == doctor.StatusFail || status == doctor.StatusWarn {
		s.g.Expect(r.Fix).NotTo(BeEmpty())
	}
	return r
}

func (s *scenario) create(c client.Client, objs ...client.Object) {
	s.t.Helper()
	for _, o := range objs {
		s.g.Expect(c.Create(s.ctx, o)).To(Succeed(), "creating %T %s", o, o.GetName())
		if o.GetNamespace() == "" { // cluster-scoped objects outlive the test's namespace
			s.t.Cleanup(func() { _ = c.Delete(context.Background(), o) })
		}
	}
}

// applicationSet is the documents' pull-model ApplicationSet, in the test's namespaces.
func (s *scenario) applicationSet(mutate ...func(*unstructured.Unstructured)) *unstructured.Unstructured {
	s.t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "test", "testdata", "docs", "pull-applicationset.yaml"))
	s.g.Expect(err).NotTo(HaveOccurred())
	u := &unstructured.Unstructured{}
	s.g.Expect(yaml.Unmarshal(data, &u.Object)).To(Succeed())
	u.SetNamespace(s.ns)
	s.g.Expect(unstructured.SetNestedField(u.Object, s.argoNS, "spec", "template", "metadata", "annotations", api.AppNamespaceAnnotation)).To(Succeed())
	s.g.Expect(unstructured.SetNestedField(u.Object, s.destNS, "spec", "template", "spec", "destination", "namespace")).To(Succeed())
	for _, m := range mutate {
		m(u)
	}
	return u
}

func withoutTemplateAnnotation(key string) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "annotations", key)
	}
}

func (s *scenario) placementGenerator() {
	s.create(s.hub.Client, gitops.PlacementGenerator(s.ns))
}

func (s *scenario) placementDecision(clusters ...string) {
	s.t.Helper()
	d := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Name: placementName + "-decision-1", Namespace: s.ns,
		Labels: map[string]string{clusterv1beta1.PlacementLabel: placementName}}}
	s.create(s.hub.Client, d)
	for _, c := range clusters {
		d.Status.Decisions = append(d.Status.Decisions, clusterv1beta1.ClusterDecision{ClusterName: c, Reason: "test"})
	}
	s.g.Expect(s.hub.Client.Status().Update(s.ctx, d)).To(Succeed())
}

func (s *scenario) clusterSecret() {
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: s.cluster}}
	s.create(s.hub.Client, gitops.ClusterSecret(mc, s.ns, "test"))
}

func (s *scenario) clusterNamespace() {
	s.create(s.hub.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.cluster}})
}

func (s *scenario) managedCluster(available metav1.ConditionStatus) {
	s.t.Helper()
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: s.cluster}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
	s.create(s.hub.Client, mc)
	mc.Status.Conditions = []metav1.Condition{{Type: clusterv1.ManagedClusterConditionAvailable, Status: available,
		Reason: "Test", LastTransitionTime: metav1.Now()}}
	s.g.Expect(s.hub.Client.Status().Update(s.ctx, mc)).To(Succeed())
}

// registered makes everything the hub needs for the test's cluster.
func (s *scenario) registered() {
	s.placementGenerator()
	s.placementDecision(s.cluster)
	s.clusterSecret()
	s.clusterNamespace()
	s.managedCluster(metav1.ConditionTrue)
}

func (s *scenario) spokeNamespace(name string, labels map[string]string) {
	s.create(s.spoke.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}})
}

// controllerIsClusterAdmin is the documents' ClusterRoleBinding.
func (s *scenario) controllerIsClusterAdmin() {
	s.create(s.spoke.Client, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: s.argoNS + "-argo-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: doctor.DefaultControllerServiceAccount, Namespace: s.argoNS}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
	})
}

// workAgentManagesApplications is the ClusterRole and ClusterRoleBinding the doctor's fix gives.
func (s *scenario) workAgentManagesApplications() {
	name := s.workNS + "-applications"
	s.create(s.spoke.Client,
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{argocd.Group}, Resources: []string{"applications"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: doctor.DefaultWorkAgentServiceAccount, Namespace: s.workNS}},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}},
	)
}

// A hub with OCM, Argo CD and argocd-pull passes the API checks; the managed-cluster apiserver
// (Argo CD's CRDs only) as a hub fails the OCM and argocd-pull ones.
func TestHubAPIs(t *testing.T) {
	s := newScenario(t)
	for _, id := range []string{"hub-ocm-apis", "hub-argocd-apis", "hub-pull-apis"} {
		s.expect(id, doctor.StatusPass, "served")
	}

	s.hub = s.spoke
	r := s.run()
	ocm := s.result(r, "hub-ocm-apis")
	s.g.Expect(ocm.Status).To(Equal(doctor.StatusFail))
	s.g.Expect(ocm.Message).To(ContainSubstring("managedclusters.cluster.open-cluster-management.io"))
	s.g.Expect(ocm.Message).To(ContainSubstring("manifestworks.work.open-cluster-management.io"))
	s.g.Expect(ocm.Fix).To(ContainSubstring("clusteradm init"))
	pull := s.result(r, "hub-pull-apis")
	s.g.Expect(pull.Status).To(Equal(doctor.StatusFail))
	s.g.Expect(pull.Message).To(ContainSubstring("gitopsclusters.apps.open-cluster-management.io"))
	s.g.Expect(s.result(r, "hub-argocd-apis").Status).To(Equal(doctor.StatusPass))
}

// An apiserver without Argo CD fails the Argo CD API check as a hub and the Application API
// check as a managed cluster; the managed-cluster apiserver passes the latter.
func TestArgoCDMissing(t *testing.T) {
	s := newScenario(t)
	s.expect("managed-application-crd", doctor.StatusPass, "applications.argoproj.io is served")

	bare, err := testenv.StartWithCRDs()
	s.g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = bare.Stop() })
	s.hub, s.spoke = bare, bare
	r := s.run()
	argo := s.result(r, "hub-argocd-apis")
	s.g.Expect(argo.Status).To(Equal(doctor.StatusFail))
	s.g.Expect(argo.Message).To(Equal("not served: applications.argoproj.io, applicationsets.argoproj.io, appprojects.argoproj.io"))
	s.g.Expect(argo.Fix).To(ContainSubstring("install Argo CD on the hub"))
	crd := s.result(r, "managed-application-crd")
	s.g.Expect(crd.Status).To(Equal(doctor.StatusFail))
	s.g.Expect(crd.Subject).To(Equal(s.cluster))
	s.g.Expect(crd.Fix).To(ContainSubstring("install Argo CD on the managed cluster"))
	s.g.Expect(s.result(r, "applicationset-template").Status).To(Equal(doctor.StatusSkip))
}

// The documents' ApplicationSet passes; without skip-reconcile it fails with the fix; a template
// with the cluster annotation but no pull label is flagged.
func TestApplicationSetTemplate(t *testing.T) {
	s := newScenario(t)
	s.expect("applicationset-template", doctor.StatusSkip, "no ApplicationSet in "+s.ns)

	appset := s.applicationSet(withoutTemplateAnnotation(argocd.SkipReconcileAnnotation))
	s.create(s.hub.Client, appset)
	r := s.expect("applicationset-template", doctor.StatusFail, `annotation argocd.argoproj.io/skip-reconcile: "true" is missing`)
	s.g.Expect(r.Subject).To(Equal(s.ns + "/guestbook-allclusters-app-set"))
	s.g.Expect(r.Fix).To(ContainSubstring(`add to spec.template.metadata.annotations: argocd.argoproj.io/skip-reconcile: "true"`))

	s.g.Expect(s.hub.Client.Delete(s.ctx, appset)).To(Succeed())
	documents := s.applicationSet()
	s.create(s.hub.Client, documents)
	s.expect("applicationset-template", doctor.StatusWarn, "the destination is the in-cluster server https://kubernetes.default.svc, which on the hub is the hub itself")
	s.g.Expect(s.hub.Client.Delete(s.ctx, documents)).To(Succeed())
	s.create(s.hub.Client, s.applicationSet(namingTheCluster))
	s.expect("applicationset-template", doctor.StatusPass, "pull label, cluster annotation {{name}}, skip-reconcile and the destination naming the cluster are set")

	push := s.applicationSet(func(u *unstructured.Unstructured) {
		u.SetName("pushes")
		unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "labels", api.PullLabel)
	})
	s.create(s.hub.Client, push)
	var flagged []doctor.Result
	for _, c := range s.run().Checks {
		if c.ID == "applicationset-template" && c.Subject == s.ns+"/pushes" {
			flagged = append(flagged, c)
		}
	}
	s.g.Expect(flagged).To(HaveLen(1))
	s.g.Expect(flagged[0].Status).To(Equal(doctor.StatusFail))
	s.g.Expect(flagged[0].Message).To(ContainSubstring("neither the hub's Argo CD nor argocd-pull delivers its Applications"))

	o := s.options()
	o.ApplicationSet = "missing"
	r = s.result(doctor.Run(s.ctx, o), "applicationset-template")
	s.g.Expect(r.Status).To(Equal(doctor.StatusFail))
	s.g.Expect(r.Message).To(ContainSubstring("ApplicationSet " + s.ns + "/missing not found"))
}

func TestPlacementGenerator(t *testing.T) {
	s := newScenario(t)
	s.create(s.hub.Client, s.applicationSet())
	r := s.expect("placement-generator", doctor.StatusFail, "ConfigMap "+s.ns+"/ocm-placement-generator does not exist")
	s.g.Expect(r.Fix).To(ContainSubstring("statusListKey: decisions"))

	s.placementGenerator()
	s.expect("placement-generator", doctor.StatusPass, "reads PlacementDecisions by clusterName")
}

func TestPlacementDecisions(t *testing.T) {
	s := newScenario(t)
	s.create(s.hub.Client, s.applicationSet())
	s.expect("placement-decisions", doctor.StatusWarn, "no PlacementDecisions labelled cluster.open-cluster-management.io/placement=aws-app-placement")

	s.placementDecision(s.cluster)
	s.expect("placement-decisions", doctor.StatusPass, "1 cluster: "+s.cluster)
}

// A cluster the placement decides on needs a cluster secret, a namespace and an Available
// ManagedCluster on the hub.
func TestTargetedClusters(t *testing.T) {
	s := newScenario(t)
	s.create(s.hub.Client, s.applicationSet())
	for _, id := range []string{"cluster-secrets", "cluster-namespaces", "managed-clusters"} {
		s.expect(id, doctor.StatusSkip, "no targeted cluster")
	}
	s.placementDecision(s.cluster)

	r := s.run()
	secrets := s.result(r, "cluster-secrets")
	s.g.Expect(secrets.Status).To(Equal(doctor.StatusFail))
	s.g.Expect(secrets.Message).To(Equal("1 of 1 clusters have no cluster secret in " + s.ns + ": " + s.cluster))
	s.g.Expect(secrets.Fix).To(ContainSubstring("GitOpsCluster"))
	namespaces := s.result(r, "cluster-namespaces")
	s.g.Expect(namespaces.Status).To(Equal(doctor.StatusFail))
	s.g.Expect(namespaces.Fix).To(ContainSubstring("clusteradm accept --clusters " + s.cluster))
	clusters := s.result(r, "managed-clusters")
	s.g.Expect(clusters.Status).To(Equal(doctor.StatusFail))
	s.g.Expect(clusters.Message).To(Equal("no ManagedCluster for " + s.cluster))

	s.clusterSecret()
	s.clusterNamespace()
	s.managedCluster(metav1.ConditionUnknown)
	s.expect("cluster-secrets", doctor.StatusPass, "all 1 have one in "+s.ns)
	s.expect("cluster-namespaces", doctor.StatusPass, "all 1 have one")
	s.expect("managed-clusters", doctor.StatusFail, "not Available")

	mc := &clusterv1.ManagedCluster{}
	s.g.Expect(s.hub.Client.Get(s.ctx, client.ObjectKey{Name: s.cluster}, mc)).To(Succeed())
	mc.Status.Conditions[0].Status = metav1.ConditionTrue
	s.g.Expect(s.hub.Client.Status().Update(s.ctx, mc)).To(Succeed())
	s.expect("managed-clusters", doctor.StatusPass, "all 1 exist and are Available")
}

// A cluster named only by an existing pull-model Application is a targeted cluster too.
// pullApplication creates a pull-model Application for the test's cluster in its Argo CD namespace.
func (s *scenario) pullApplication(name string) {
	s.t.Helper()
	app := argocd.NewApplication()
	app.SetName(name)
	app.SetNamespace(s.ns)
	app.SetLabels(map[string]string{api.PullLabel: "true"})
	app.SetAnnotations(map[string]string{api.ClusterAnnotation: s.cluster})
	s.g.Expect(unstructured.SetNestedMap(app.Object, map[string]any{
		"project":     "default",
		"destination": map[string]any{"server": argocd.LocalServer, "namespace": "guestbook"},
		"source":      map[string]any{"repoURL": "https://github.com/argoproj/argocd-example-apps.git", "path": "guestbook"},
	}, "spec")).To(Succeed())
	s.create(s.hub.Client, app)
}

func TestTargetedClustersFromApplications(t *testing.T) {
	s := newScenario(t)
	s.pullApplication("guestbook")
	s.expect("cluster-secrets", doctor.StatusFail, s.cluster)
	s.clusterSecret()
	s.expect("cluster-secrets", doctor.StatusPass, "all 1 have one")
}

// Real RBAC on the managed apiserver: the application controller without rights fails, bound to
// cluster-admin (the documents' ClusterRoleBinding) it passes; with rights only in a
// namespace labelled managed-by it passes too.
func TestManagedArgoCDControllerRBAC(t *testing.T) {
	s := newScenario(t)
	s.create(s.hub.Client, s.applicationSet())
	user := "system:serviceaccount:" + s.argoNS + ":argocd-application-controller"

	r := s.expect("managed-argocd-rbac", doctor.StatusFail, "destination namespace "+s.destNS+" does not exist, and "+user+" may not create deployments.apps, services, configmaps in every namespace")
	s.g.Expect(r.Subject).To(Equal(s.cluster))
	s.g.Expect(r.Fix).To(ContainSubstring("name: cluster-admin"))
	s.g.Expect(r.Fix).To(ContainSubstring("argocd.argoproj.io/managed-by: " + s.argoNS))

	s.spokeNamespace(s.destNS, map[string]string{argocd.NamespaceManagedByLabel: s.argoNS})
	s.expect("managed-argocd-rbac", doctor.StatusFail, "is labelled argocd.argoproj.io/managed-by="+s.argoNS+", but "+user+" may not create deployments.apps, services, configmaps there")

	// What the GitOps operator does for a managed-by namespace: full rights there. (cluster-admin
	// rather than admin: admin is aggregated by kube-controller-manager, which does not run here.)
	s.create(s.spoke.Client, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "argocd-controller", Namespace: s.destNS},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: doctor.DefaultControllerServiceAccount, Namespace: s.argoNS}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}})
	s.expect("managed-argocd-rbac", doctor.StatusPass, "in the destination namespaces "+s.destNS+" (not cluster-wide)")

	s.controllerIsClusterAdmin()
	s.expect("managed-argocd-rbac", doctor.StatusPass, user+" may create deployments.apps, services, configmaps in every namespace")
}

func TestManagedWorkAgentRBAC(t *testing.T) {
	s := newScenario(t)
	s.create(s.hub.Client, s.applicationSet())
	r := s.expect("managed-work-agent-rbac", doctor.StatusFail,
		"system:serviceaccount:"+s.workNS+":klusterlet-work-sa may not get, list, watch, create, update, patch, delete applications.argoproj.io in "+s.argoNS)
	s.g.Expect(r.Fix).To(ContainSubstring(`apiGroups: ["argoproj.io"]`))

	s.workAgentManagesApplications()
	s.expect("managed-work-agent-rbac", doctor.StatusPass, "may get, list, watch, create, update, patch, delete applications.argoproj.io in "+s.argoNS)
}

func TestManagedAppNamespace(t *testing.T) {
	s := newScenario(t)
	s.create(s.hub.Client, s.applicationSet())
	s.expect("managed-app-namespace", doctor.StatusFail, "namespace "+s.argoNS+" does not exist")

	s.spokeNamespace(s.argoNS, nil)
	s.expect("managed-app-namespace", doctor.StatusPass, "Applications go to "+s.argoNS+", where Argo CD runs")
}

// A managed cluster that does not answer fails its first check and skips the rest, at once.
func TestUnreachableManagedCluster(t *testing.T) {
	s := newScenario(t)
	o := s.options()
	sch, err := scheme.New()
	s.g.Expect(err).NotTo(HaveOccurred())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	s.g.Expect(err).NotTo(HaveOccurred())
	closed := l.Addr().String()
	s.g.Expect(l.Close()).To(Succeed())
	gone, err := doctor.NewCluster("gone", &rest.Config{Host: "https://" + closed, Timeout: 5 * time.Second}, sch)
	s.g.Expect(err).NotTo(HaveOccurred())
	o.Managed = []doctor.Cluster{gone}
	r := doctor.Run(s.ctx, o)
	var statuses []doctor.Status
	for _, c := range r.Checks {
		if c.Subject == "gone" {
			statuses = append(statuses, c.Status)
		}
	}
	// A cluster that cannot be read fails every check with the read error, never "skipped".
	s.g.Expect(statuses).To(Equal([]doctor.Status{doctor.StatusFail, doctor.StatusFail, doctor.StatusFail, doctor.StatusFail, doctor.StatusFail}))
	for _, c := range r.Checks {
		if c.Subject == "gone" {
			s.g.Expect(c.Message).To(ContainSubstring("the cluster did not answer API discovery: managed cluster gone: discovering the served APIs"), c.ID)
		}
	}
}

// namingTheCluster is the hardened form of the documents' template: its destination names the
// cluster ('{{name}}'), no server.
func namingTheCluster(u *unstructured.Unstructured) {
	unstructured.RemoveNestedField(u.Object, "spec", "template", "spec", "destination", "server")
	_ = unstructured.SetNestedField(u.Object, "{{name}}", "spec", "template", "spec", "destination", "name")
}

// The command: a hub set up as the documents say, in the hardened form (the destination names the
// cluster), with a managed cluster whose Argo CD and work agent have their rights, passes every
// check; take one prerequisite away and it fails, in text and in JSON.
func TestDoctorCommand(t *testing.T) {
	s := newScenario(t)
	s.create(s.hub.Client, s.applicationSet(namingTheCluster))
	s.registered()
	s.spokeNamespace(s.argoNS, nil)
	s.controllerIsClusterAdmin()
	s.workAgentManagesApplications()
	hubKubeconfig, spokeKubeconfig := s.hub.Kubeconfig(t), s.spoke.Kubeconfig(t)
	args := []string{"doctor", "--kubeconfig", hubKubeconfig, "-n", s.ns,
		"--managed-kubeconfig", s.cluster + "=" + spokeKubeconfig, "--managed-argocd-namespace", s.argoNS,
		"--work-agent-service-account", s.workNS + "/klusterlet-work-sa"}
	execute := func(extra ...string) (string, error) {
		var out bytes.Buffer
		cmd := cli.NewRootCommand()
		cmd.SetOut(&out)
		cmd.SetErr(&bytes.Buffer{})
		cmd.SetArgs(append(append([]string{}, args...), extra...))
		err := cmd.ExecuteContext(s.ctx)
		return out.String(), err
	}

	out, err := execute()
	s.g.Expect(err).NotTo(HaveOccurred(), out)
	s.g.Expect(out).To(ContainSubstring("[ok]   Pull-model ApplicationSet template (" + s.ns + "/guestbook-allclusters-app-set)"))
	// cluster-access skips: no GitOpsCluster here sets managedServiceAccountRef.
	s.g.Expect(out).To(HaveSuffix("\n20 checks: 19 passed, 0 warnings, 0 failed, 1 skipped\n"))

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: gitops.SecretName(s.cluster), Namespace: s.ns}}
	s.g.Expect(s.hub.Client.Delete(s.ctx, secret)).To(Succeed())
	out, err = execute()
	s.g.Expect(err).To(MatchError("1 check failed"))
	s.g.Expect(out).To(ContainSubstring("[FAIL] Argo CD cluster secrets of the targeted clusters: 1 of 1 clusters have no cluster secret in " + s.ns + ": " + s.cluster + "\n       fix: create a GitOpsCluster"))

	out, err = execute("-o", "json")
	s.g.Expect(err).To(MatchError("1 check failed"))
	var report doctor.Report
	s.g.Expect(json.Unmarshal([]byte(out), &report)).To(Succeed(), out)
	s.g.Expect(report.Summary).To(Equal(doctor.Summary{Pass: 18, Fail: 1, Skip: 1}))
	s.g.Expect(report.Checks).To(ContainElement(And(
		HaveField("ID", "cluster-secrets"), HaveField("Status", doctor.StatusFail), HaveField("Fix", ContainSubstring("GitOpsCluster")))))

	_, err = execute("-o", "yaml")
	s.g.Expect(err).To(MatchError(`--output must be text or json, got "yaml"`))
	_, err = execute("--managed-kubeconfig", "Not_A_Name=/x")
	s.g.Expect(err).To(MatchError(ContainSubstring("is not a cluster name")))
}

func TestDoctorHelpListsTheChecks(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	cmd := cli.NewRootCommand()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"doctor", "--help"})
	g.Expect(cmd.Execute()).To(Succeed())
	for _, s := range []string{"hub-ocm-apis", "applicationset-template", "cluster-secrets", "managed-argocd-rbac",
		"managed-work-agent-rbac", "managed-app-namespace", "--managed-kubeconfig", "--applicationset", "-o, --output", "Examples:"} {
		g.Expect(out.String()).To(ContainSubstring(s))
	}
}

// Before an upgrade, the doctor lists the Applications the new controller's rules refuse, with
// the fix (issue 22, rule 11): here a tenant's Application whose AppProject does not list its
// namespace, and one landing outside it.
func TestApplicationsTheRulesRefuse(t *testing.T) {
	s := newScenario(t)
	team := s.hub.Namespace(t)
	project := argocd.NewAppProject()
	project.SetName("platform")
	project.SetNamespace(s.ns)
	project.Object["spec"] = map[string]any{"sourceRepos": []any{"*"}}
	s.create(s.hub.Client, project)
	s.registered()
	s.create(s.hub.Client, &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: s.ns}},
		&clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: s.ns, Namespace: team}, Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: s.ns}})
	mc := &clusterv1.ManagedCluster{}
	s.g.Expect(s.hub.Client.Get(s.ctx, client.ObjectKey{Name: s.cluster}, mc)).To(Succeed())
	mc.Labels = map[string]string{clusterv1beta2.ClusterSetLabel: s.ns}
	s.g.Expect(s.hub.Client.Update(s.ctx, mc)).To(Succeed())
	app := func(name string, annotations map[string]string) *unstructured.Unstructured {
		a := argocd.NewApplication()
		a.SetName(name)
		a.SetNamespace(team)
		a.SetLabels(map[string]string{api.PullLabel: "true"})
		annotations[api.ClusterAnnotation] = s.cluster
		a.SetAnnotations(annotations)
		a.Object["spec"] = map[string]any{"project": "platform", "destination": map[string]any{"server": argocd.LocalServer, "namespace": "web"},
			"source": map[string]any{"repoURL": "https://git.example/web", "path": "web"}}
		return a
	}
	s.create(s.hub.Client, app("borrows", map[string]string{}), app("escapes", map[string]string{api.AppNamespaceAnnotation: s.ns}))

	opts := s.options()
	opts.PullNamespaces = []string{s.ns, team}
	ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
	defer cancel()
	r := s.result(doctor.Run(ctx, opts), "pull-application-rules")
	s.g.Expect(r.Status).To(Equal(doctor.StatusFail))
	s.g.Expect(r.Message).To(ContainSubstring("2 of 2 are refused"))
	s.g.Expect(r.Fix).To(ContainSubstring(team + "/borrows: AppProjectNotPermitted: AppProject platform does not permit Applications of namespace " + team))
	s.g.Expect(r.Fix).To(ContainSubstring(team + "/escapes: ManagedNamespaceNotAllowed: "))
	s.g.Expect(r.Fix).To(ContainSubstring("--grant-managed-namespaces " + team + "=" + s.ns))

	project.Object["spec"].(map[string]any)["sourceNamespaces"] = []any{team}
	s.g.Expect(s.hub.Client.Update(s.ctx, project)).To(Succeed())
	opts.ManagedNamespaceGrants = map[string][]string{team: {s.ns}}
	r = s.result(doctor.Run(ctx, opts), "pull-application-rules")
	s.g.Expect(r.Status).To(Equal(doctor.StatusPass), r.Fix)
	s.g.Expect(r.Message).To(Equal("all 2 are delivered"))
}

// The resource-tree check against a real redis with a password, as the hub's Argo CD runs it: a
// pull-model Application without its tree, with it, the hub's Argo CD writing another cache
// version, a wrong password; and the controller's own event, with no redis given.
func TestTheHubArgoCDsCache(t *testing.T) {
	s := newScenario(t)
	s.pullApplication("guestbook")
	addr := testenv.Redis(t, "s3cret")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "argocd-redis"}, Data: map[string][]byte{"auth": []byte("s3cret")}}
	s.create(s.hub.Client, secret)
	check := func(status doctor.Status, message string) {
		t.Helper()
		o := s.options()
		o.ArgoCDRedis.Address = addr
		ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
		defer cancel()
		r := s.result(doctor.Run(ctx, o), "argocd-redis")
		s.g.Expect(r.Status).To(Equal(status), r.Message)
		s.g.Expect(r.Message).To(ContainSubstring(message))
	}
	check(doctor.StatusWarn, "1 of 1 pull-model Application have no tree in "+addr+" at cache version 1.8.3: guestbook")

	enc := resourcetree.Encoding{Gzip: true}
	cache, err := resourcetree.NewCache(resourcetree.Options{Address: addr, Encoding: enc, TTL: time.Hour,
		Credentials: func(context.Context) (string, string, error) { return "", "s3cret", nil }})
	s.g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = cache.Close() }()
	s.g.Expect(cache.Put(s.ctx, "guestbook", resourcetree.Tree{})).To(Succeed())
	s.g.Expect(cache.Put(s.ctx, "push-model", resourcetree.Tree{})).To(Succeed()) // as the hub's own controller writes
	check(doctor.StatusPass, "1 pull-model tree in "+addr+" at cache version 1.8.3; the hub's Argo CD writes the same version (1 tree of its own)")

	rdb := redis.NewClient(&redis.Options{Addr: addr, Password: "s3cret"})
	defer func() { _ = rdb.Close() }()
	// The hub's Argo CD upgraded to a release of another cache version: its trees are written anew.
	s.g.Expect(cache.Delete(s.ctx, "push-model")).To(Succeed())
	s.g.Expect(rdb.Set(s.ctx, "app|resources-tree|push-model|1.9.0.gz", "x", time.Hour).Err()).To(Succeed())
	check(doctor.StatusFail, "the hub's Argo CD writes its trees at cache version 1.9.0; argocd-pull writes 1.8.3")

	secret.Data["auth"] = []byte("wrong")
	s.g.Expect(s.hub.Client.Update(s.ctx, secret)).To(Succeed())
	check(doctor.StatusFail, "WRONGPASS")

	// No redis given: the controller's last word on each Application.
	event := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "guestbook.tree"}, Reason: "ResourceTreeNotWritten", Type: corev1.EventTypeWarning,
		Message:        "The resource tree is not in the hub Argo CD's cache: the hub's redis: WRONGPASS",
		InvolvedObject: corev1.ObjectReference{Kind: "Application", Namespace: s.ns, Name: "guestbook"}, LastTimestamp: metav1.Now()}
	s.create(s.hub.Client, event)
	s.expect("argocd-redis", doctor.StatusWarn, "argocd-pull could not write the tree of 1 Application: "+s.ns+"/guestbook: The resource tree is not in the hub Argo CD's cache")
}

// A cluster's agent that writes the hub's address into its client config is named, whichever of
// the hub's names it wrote: the envtest hub's own URL, or the in-cluster service.
func TestClientConfigsNamingTheHub(t *testing.T) {
	s := newScenario(t)
	for i, url := range []string{s.hub.Config.Host, "https://kubernetes.default.svc"} {
		name := fmt.Sprintf("%s-%d", s.cluster, i)
		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true, ManagedClusterClientConfigs: []clusterv1.ClientConfig{{URL: url}}}}
		s.create(s.hub.Client, mc)
		r := s.expect("cluster-client-configs", doctor.StatusWarn, name+" ("+url+": ")
		s.g.Expect(r.Fix).To(ContainSubstring("never carry them"))
		s.g.Expect(s.hub.Client.Delete(s.ctx, mc)).To(Succeed())
	}
}

// A label-selector set bound in the namespace Applications are taken from is named: a cluster that
// gives itself the label joins it. Bound to the set of the clusterset label alone, nothing is.
func TestClusterSetsJoinedByAClustersOwnLabels(t *testing.T) {
	s := newScenario(t)
	joined := &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: s.ns + "-prod"},
		Spec: clusterv1beta2.ManagedClusterSetSpec{ClusterSelector: clusterv1beta2.ManagedClusterSelector{SelectorType: clusterv1beta2.LabelSelector,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}}}
	exclusive := &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: s.ns + "-team"}}
	s.create(s.hub.Client, joined, exclusive,
		&clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: exclusive.Name}, Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: exclusive.Name}})
	s.expect("cluster-set-labels", doctor.StatusPass, "none of 1 binding")

	s.create(s.hub.Client, &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: joined.Name}, Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: joined.Name}})
	r := s.expect("cluster-set-labels", doctor.StatusWarn, joined.Name+" in "+s.ns+" (env=prod)")
	s.g.Expect(r.Fix).To(ContainSubstring("may update its own ManagedCluster's labels"))
}

// The repository-credentials check against the real apiserver: the hub's credential of a platform
// Application's repository, not opted in, is named with its fix; opted in, the check passes; a
// Secret opted in that cannot be one is named. No value reaches the report.
func TestRepositoryCredentialsTheClustersLack(t *testing.T) {
	s := newScenario(t)
	s.registered()
	app := argocd.NewApplication()
	app.SetName("private")
	app.SetNamespace(s.ns)
	app.SetLabels(map[string]string{api.PullLabel: "true"})
	app.SetAnnotations(map[string]string{api.ClusterAnnotation: s.cluster})
	app.Object["spec"] = map[string]any{"project": "default", "destination": map[string]any{"server": argocd.LocalServer, "namespace": "web"},
		"source": map[string]any{"repoURL": "https://git.example/private.git", "path": "web"}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "repo-private", Namespace: s.ns, Labels: map[string]string{repocreds.SecretTypeLabel: "repository"}},
		StringData: map[string]string{"url": "https://git.example/private", "password": "s3cret-value"}}
	s.create(s.hub.Client, app, secret)
	ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
	defer cancel()

	r := s.result(doctor.Run(ctx, s.options()), "repository-credentials")
	s.g.Expect(r.Status).To(Equal(doctor.StatusWarn))
	s.g.Expect(r.Message).To(Equal("1 problem: " + s.ns + "/private: repository https://git.example/private.git uses the hub credential repo-private, which is not opted in"))
	s.g.Expect(r.Fix).To(ContainSubstring("pull-credentials=true"))

	secret.Labels[repocreds.OptInLabel] = "true"
	s.g.Expect(s.hub.Client.Update(s.ctx, secret)).To(Succeed())
	bad := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "everything", Namespace: s.ns,
		Labels: map[string]string{repocreds.SecretTypeLabel: "repo-creds", repocreds.OptInLabel: "true"}},
		StringData: map[string]string{"url": "https://", "password": "s3cret-value"}}
	s.create(s.hub.Client, bad)
	report := doctor.Run(ctx, s.options())
	r = s.result(report, "repository-credentials")
	s.g.Expect(r.Status).To(Equal(doctor.StatusWarn))
	s.g.Expect(r.Message).To(Equal(`1 problem: the opted-in Secret everything (EveryRepository: url prefix "https://" names no host: it would be every repository's credential) is delivered nowhere`))

	s.g.Expect(s.hub.Client.Delete(s.ctx, bad)).To(Succeed())
	report = doctor.Run(ctx, s.options())
	r = s.result(report, "repository-credentials")
	s.g.Expect(r.Status).To(Equal(doctor.StatusPass), r.Message)
	s.g.Expect(r.Message).To(Equal("pull-model Applications on a hub credential: 1 of 1, each opted in and delivered to its cluster; 1 credential opted in"))
	var out strings.Builder
	s.g.Expect(doctor.WriteJSON(&out, report)).To(Succeed())
	s.g.Expect(out.String()).NotTo(ContainSubstring("s3cret"))
}
