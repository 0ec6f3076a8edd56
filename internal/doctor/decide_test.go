package doctor

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/yaml"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/gitops"
	"github.com/argocd-pull/argocd-pull/internal/hubapis"
	"github.com/argocd-pull/argocd-pull/internal/propagation"
)

// docsApplicationSet is the documents' pull-model ApplicationSet.
func docsApplicationSet(t testing.TB) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "test", "testdata", "docs", "pull-applicationset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func withTemplateLabel(key, value string) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		l, _ := templateMarkers(u)
		if l == nil {
			l = map[string]string{}
		}
		if value == "" {
			delete(l, key)
		} else {
			l[key] = value
		}
		_ = unstructured.SetNestedStringMap(u.Object, l, "spec", "template", "metadata", "labels")
	}
}

func withTemplateAnnotation(key, value string) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		_, a := templateMarkers(u)
		if a == nil {
			a = map[string]string{}
		}
		if value == "" {
			delete(a, key)
		} else {
			a[key] = value
		}
		_ = unstructured.SetNestedStringMap(u.Object, a, "spec", "template", "metadata", "annotations")
	}
}

func withDestinationServer(server string) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, server, "spec", "template", "spec", "destination", "server")
	}
}

// withDestinationName makes the template's destination name the cluster (no server).
func withDestinationName(name string) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		unstructured.RemoveNestedField(u.Object, "spec", "template", "spec", "destination", "server")
		_ = unstructured.SetNestedField(u.Object, name, "spec", "template", "spec", "destination", "name")
	}
}

func TestDecideApplicationSet(t *testing.T) {
	tests := map[string]struct {
		mutate   []func(*unstructured.Unstructured)
		status   Status
		message  string
		fix      string
		noFixFor string
	}{
		"the documents' ApplicationSet": {status: StatusWarn,
			message: "the destination is the in-cluster server https://kubernetes.default.svc, which on the hub is the hub itself to Argo CD's API server",
			fix:     "set spec.template.spec.destination to name: '{{name}}'"},
		"the hardened form names the cluster": {
			mutate:  []func(*unstructured.Unstructured){withDestinationName("{{name}}")},
			status:  StatusPass,
			message: "pull label, cluster annotation {{name}}, skip-reconcile and the destination naming the cluster are set",
		},
		"pull label True parses as a bool": {
			mutate: []func(*unstructured.Unstructured){withTemplateLabel(api.PullLabel, "True"), withDestinationName("{{name}}")},
			status: StatusPass,
		},
		"no skip-reconcile": {
			mutate:  []func(*unstructured.Unstructured){withTemplateAnnotation(argocd.SkipReconcileAnnotation, "")},
			status:  StatusFail,
			message: "argocd.argoproj.io/skip-reconcile: \"true\" is missing",
			fix:     `argocd.argoproj.io/skip-reconcile: "true"`,
		},
		"skip-reconcile false": {
			mutate: []func(*unstructured.Unstructured){withTemplateAnnotation(argocd.SkipReconcileAnnotation, "false")},
			status: StatusFail,
		},
		"no cluster annotation": {
			mutate:  []func(*unstructured.Unstructured){withTemplateAnnotation(api.ClusterAnnotation, "")},
			status:  StatusFail,
			message: "annotation apps.open-cluster-management.io/ocm-managed-cluster is missing",
			fix:     "'{{name}}'",
		},
		"fixed cluster name": {
			mutate:  []func(*unstructured.Unstructured){withTemplateAnnotation(api.ClusterAnnotation, "cluster1")},
			status:  StatusWarn,
			message: `the fixed name "cluster1"`,
		},
		"pull label not a bool": {
			mutate:  []func(*unstructured.Unstructured){withTemplateLabel(api.PullLabel, "yes")},
			status:  StatusFail,
			message: `is "yes", not true or false`,
		},
		"cluster annotation without pull label pushes": {
			mutate: []func(*unstructured.Unstructured){withTemplateLabel(api.PullLabel, ""),
				withTemplateAnnotation(argocd.SkipReconcileAnnotation, "")},
			status:  StatusWarn,
			message: "pushes its Applications instead",
			fix:     "to stay with the push model",
		},
		"cluster annotation and skip-reconcile without pull label deliver nothing": {
			mutate:  []func(*unstructured.Unstructured){withTemplateLabel(api.PullLabel, "")},
			status:  StatusFail,
			message: "neither the hub's Argo CD nor argocd-pull delivers",
		},
		"pull label false is not pulling": {
			mutate:  []func(*unstructured.Unstructured){withTemplateLabel(api.PullLabel, "false")},
			status:  StatusFail,
			message: "neither",
		},
		"no markers at all (named ApplicationSet)": {
			mutate: []func(*unstructured.Unstructured){withTemplateLabel(api.PullLabel, ""),
				withTemplateAnnotation(api.ClusterAnnotation, ""), withTemplateAnnotation(argocd.SkipReconcileAnnotation, "")},
			status:  StatusFail,
			message: "has no label",
		},
		"remote destination": {
			mutate:  []func(*unstructured.Unstructured){withDestinationServer("https://cluster1.example.com:6443")},
			status:  StatusWarn,
			message: "the destination is https://cluster1.example.com:6443, not the cluster the Application goes to ({{name}})",
			fix:     "set spec.template.spec.destination to name: '{{name}}'",
		},
		"remote destination with an override annotation": {
			mutate: []func(*unstructured.Unstructured){withDestinationServer("{{server}}"),
				withTemplateAnnotation(api.DestinationServerAnnotation, "https://kubernetes.default.svc")},
			status:  StatusWarn,
			message: "on the hub Argo CD's API server acts on {{server}}",
		},
		"every problem at once reports the worst and every fix": {
			mutate: []func(*unstructured.Unstructured){withDestinationServer("{{server}}"),
				withTemplateAnnotation(argocd.SkipReconcileAnnotation, ""), withTemplateAnnotation(api.ClusterAnnotation, "")},
			status:  StatusFail,
			message: "Application goes to; annotation argocd.argoproj.io/skip-reconcile",
			fix:     "spec.template.spec.destination to name",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			appset := docsApplicationSet(t)
			for _, m := range tt.mutate {
				m(appset)
			}
			r := decideApplicationSet(appset)
			g.Expect(r.ID).To(Equal("applicationset-template"))
			g.Expect(r.Subject).To(Equal("openshift-gitops/guestbook-allclusters-app-set"))
			g.Expect(r.Status).To(Equal(tt.status), r.Message)
			g.Expect(r.Message).To(ContainSubstring(tt.message))
			g.Expect(r.Fix).To(ContainSubstring(tt.fix))
			if tt.status != StatusPass {
				g.Expect(r.Fix).NotTo(BeEmpty())
			}
		})
	}
}

func TestSelectApplicationSets(t *testing.T) {
	g := NewWithT(t)
	pull := docsApplicationSet(t)
	push := docsApplicationSet(t)
	push.SetName("push")
	withTemplateLabel(api.PullLabel, "")(push)
	withTemplateAnnotation(api.ClusterAnnotation, "")(push)
	pushWithAnnotation := docsApplicationSet(t)
	pushWithAnnotation.SetName("push-with-annotation")
	withTemplateLabel(api.PullLabel, "")(pushWithAnnotation)
	all := []unstructured.Unstructured{*pull, *push, *pushWithAnnotation}

	names := func(us []unstructured.Unstructured) []string {
		var out []string
		for _, u := range us {
			out = append(out, u.GetName())
		}
		return out
	}
	g.Expect(names(selectApplicationSets(all, ""))).To(Equal([]string{"guestbook-allclusters-app-set", "push-with-annotation"}))
	g.Expect(names(selectApplicationSets(all, "push"))).To(Equal([]string{"push"}))
	g.Expect(selectApplicationSets(all, "missing")).To(BeEmpty())
}

func TestDecisionGeneratorsFindsNestedGenerators(t *testing.T) {
	g := NewWithT(t)
	appset := docsApplicationSet(t)
	gens := decisionGenerators(appset)
	g.Expect(gens).To(HaveLen(1))
	g.Expect(gens[0].configMapRef).To(Equal("ocm-placement-generator"))
	g.Expect(gens[0].selector.MatchLabels).To(Equal(map[string]string{clusterv1beta1.PlacementLabel: "aws-app-placement"}))

	matrix := []any{map[string]any{"matrix": map[string]any{"generators": []any{
		map[string]any{"clusterDecisionResource": map[string]any{"configMapRef": "cm", "name": "decision-1"}},
		map[string]any{"list": map[string]any{}},
	}}}}
	_ = unstructured.SetNestedSlice(appset.Object, matrix, "spec", "generators")
	gens = decisionGenerators(appset)
	g.Expect(gens).To(HaveLen(1))
	g.Expect(gens[0].name).To(Equal("decision-1"))
}

func TestDecideAPIs(t *testing.T) {
	tests := map[string]struct {
		served  map[string]bool
		status  Status
		message string
	}{
		"all served": {served: map[string]bool{"applications.argoproj.io": true, "applicationsets.argoproj.io": true, "appprojects.argoproj.io": true},
			status: StatusPass, message: "all 3 served"},
		"one missing": {served: map[string]bool{"applications.argoproj.io": true, "appprojects.argoproj.io": true},
			status: StatusFail, message: "not served: applicationsets.argoproj.io"},
		"none": {served: map[string]bool{}, status: StatusFail, message: "applications.argoproj.io, applicationsets.argoproj.io, appprojects.argoproj.io"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			r := decideAPIs(hubapis.ArgoCD, "", tt.served)
			g.Expect(r.Status).To(Equal(tt.status))
			g.Expect(r.Message).To(ContainSubstring(tt.message))
			if tt.status == StatusFail {
				g.Expect(r.Fix).To(ContainSubstring("install Argo CD"))
			}
		})
	}
}

func TestDecidePlacementGenerator(t *testing.T) {
	good := gitops.PlacementGenerator("argocd")
	wrong := good.DeepCopy()
	wrong.Data["matchKey"] = "name"
	tests := map[string]struct {
		ref     string
		cm      *corev1.ConfigMap
		status  Status
		message string
		fix     string
	}{
		"as the documents give it": {ref: gitops.PlacementGeneratorName, cm: good, status: StatusPass},
		"missing":                  {ref: gitops.PlacementGeneratorName, status: StatusFail, message: "does not exist", fix: "statusListKey: decisions"},
		"wrong matchKey":           {ref: gitops.PlacementGeneratorName, cm: wrong, status: StatusFail, message: `matchKey is "name", want "clusterName"`},
		"no configMapRef":          {status: StatusFail, message: "no configMapRef"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			r := decidePlacementGenerator("argocd", tt.ref, tt.cm)
			g.Expect(r.Status).To(Equal(tt.status))
			g.Expect(r.Message).To(ContainSubstring(tt.message))
			g.Expect(r.Fix).To(ContainSubstring(tt.fix))
		})
	}
}

func decision(clusters ...string) clusterv1beta1.PlacementDecision {
	d := clusterv1beta1.PlacementDecision{}
	for _, c := range clusters {
		d.Status.Decisions = append(d.Status.Decisions, clusterv1beta1.ClusterDecision{ClusterName: c})
	}
	return d
}

func TestDecidePlacementDecisions(t *testing.T) {
	gen := decisionGenerator{configMapRef: "ocm-placement-generator",
		selector: &metav1.LabelSelector{MatchLabels: map[string]string{clusterv1beta1.PlacementLabel: "aws-app-placement"}}}
	tests := map[string]struct {
		decisions []clusterv1beta1.PlacementDecision
		status    Status
		message   string
		fix       string
	}{
		"clusters over two pages": {decisions: []clusterv1beta1.PlacementDecision{decision("b", "a"), decision("c", "a")},
			status: StatusPass, message: "3 clusters: a, b, c"},
		"no decision": {status: StatusWarn, message: "no PlacementDecisions labelled cluster.open-cluster-management.io/placement=aws-app-placement",
			fix: "create the Placement aws-app-placement"},
		"empty decision": {decisions: []clusterv1beta1.PlacementDecision{decision()}, status: StatusWarn, message: "select no cluster"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			r := decidePlacementDecisions("argocd/app", gen, tt.decisions)
			g.Expect(r.Status).To(Equal(tt.status))
			g.Expect(r.Message).To(ContainSubstring(tt.message))
			g.Expect(r.Fix).To(ContainSubstring(tt.fix))
		})
	}
}

func TestDecideClusterSecrets(t *testing.T) {
	tests := map[string]struct {
		clusters []string
		secrets  map[string]bool
		status   Status
		message  string
	}{
		"every cluster has one": {clusters: []string{"c1", "c2"}, secrets: map[string]bool{"c1": true, "c2": true, "other": true}, status: StatusPass},
		"one missing":           {clusters: []string{"c1", "c2"}, secrets: map[string]bool{"c1": true}, status: StatusFail, message: "1 of 2 clusters have no cluster secret in argocd: c2"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			r := decideClusterSecrets("argocd", tt.clusters, tt.secrets)
			g.Expect(r.Status).To(Equal(tt.status))
			g.Expect(r.Message).To(ContainSubstring(tt.message))
			if tt.status == StatusFail {
				g.Expect(r.Fix).To(ContainSubstring("GitOpsCluster"))
				g.Expect(r.Fix).To(ContainSubstring("argocd.argoproj.io/secret-type: cluster"))
			}
		})
	}
}

func TestListNamesStaysShortAtThousandsOfClusters(t *testing.T) {
	g := NewWithT(t)
	var clusters []string
	for i := range 2000 {
		clusters = append(clusters, "cluster"+strings.Repeat("x", i%3))
	}
	r := decideClusterSecrets("argocd", clusters, nil)
	g.Expect(r.Message).To(ContainSubstring("and 1990 more"))
	g.Expect(len(r.Message)).To(BeNumerically("<", 300))
}

func TestDecideClusterNamespaces(t *testing.T) {
	g := NewWithT(t)
	r := decideClusterNamespaces([]string{"c1", "c2"}, map[string]bool{"c1": true, "c2": true})
	g.Expect(r.Status).To(Equal(StatusPass))
	r = decideClusterNamespaces([]string{"c1", "c2"}, map[string]bool{"c1": true})
	g.Expect(r.Status).To(Equal(StatusFail))
	g.Expect(r.Message).To(ContainSubstring("1 of 2 clusters have no namespace on the hub"))
	g.Expect(r.Fix).To(ContainSubstring("clusteradm accept --clusters c2"))
}

func managedCluster(name string, available metav1.ConditionStatus) *clusterv1.ManagedCluster {
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if available != "" {
		mc.Status.Conditions = []metav1.Condition{{Type: clusterv1.ManagedClusterConditionAvailable, Status: available}}
	}
	return mc
}

func TestDecideManagedClusters(t *testing.T) {
	tests := map[string]struct {
		byName  map[string]*clusterv1.ManagedCluster
		status  Status
		message string
		fix     string
	}{
		"all available": {byName: map[string]*clusterv1.ManagedCluster{"c1": managedCluster("c1", metav1.ConditionTrue), "c2": managedCluster("c2", metav1.ConditionTrue)},
			status: StatusPass, message: "all 2 exist and are Available"},
		"one missing": {byName: map[string]*clusterv1.ManagedCluster{"c1": managedCluster("c1", metav1.ConditionTrue)},
			status: StatusFail, message: "no ManagedCluster for c2", fix: "clusteradm join"},
		"one unknown, one without conditions": {byName: map[string]*clusterv1.ManagedCluster{"c1": managedCluster("c1", metav1.ConditionUnknown), "c2": managedCluster("c2", "")},
			status: StatusFail, message: "not Available (ManagedClusterConditionAvailable is not True): c1, c2", fix: "klusterlet"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			r := decideManagedClusters([]string{"c1", "c2"}, tt.byName)
			g.Expect(r.Status).To(Equal(tt.status))
			g.Expect(r.Message).To(ContainSubstring(tt.message))
			g.Expect(r.Fix).To(ContainSubstring(tt.fix))
		})
	}
}

func TestDecideApplicationCRD(t *testing.T) {
	g := NewWithT(t)
	g.Expect(decideApplicationCRD("c1", map[string]bool{"applications.argoproj.io": true}).Status).To(Equal(StatusPass))
	r := decideApplicationCRD("c1", map[string]bool{"configmaps": true})
	g.Expect(r.Status).To(Equal(StatusFail))
	g.Expect(r.Subject).To(Equal("c1"))
	g.Expect(r.Fix).To(ContainSubstring("install Argo CD on the managed cluster"))
}

func TestDecideControllerAccess(t *testing.T) {
	sa := serviceAccount{"openshift-gitops", "openshift-gitops-argocd-application-controller"}
	denied := []string{"deployments.apps", "services", "configmaps"}
	tests := map[string]struct {
		acc     controllerAccess
		status  Status
		message string
	}{
		"cluster-admin": {acc: controllerAccess{}, status: StatusPass, message: "in every namespace"},
		"no rights, no known namespace": {acc: controllerAccess{clusterWideDenied: denied}, status: StatusWarn,
			message: "no destination namespace of a pull-model Application is known"},
		"no rights in the destination": {acc: controllerAccess{clusterWideDenied: denied,
			namespaces: []namespaceAccess{{name: "guestbook", exists: true, denied: denied}}}, status: StatusFail,
			message: `system:serviceaccount:openshift-gitops:openshift-gitops-argocd-application-controller may not create deployments.apps, services, configmaps in namespace guestbook`},
		"labelled managed-by but no rights": {acc: controllerAccess{clusterWideDenied: denied,
			namespaces: []namespaceAccess{{name: "guestbook", exists: true, managedBy: "openshift-gitops", denied: denied[:1]}}}, status: StatusFail,
			message: "is labelled argocd.argoproj.io/managed-by=openshift-gitops, but"},
		"destination missing": {acc: controllerAccess{clusterWideDenied: denied,
			namespaces: []namespaceAccess{{name: "guestbook"}}}, status: StatusFail, message: "destination namespace guestbook does not exist"},
		"rights in every destination": {acc: controllerAccess{clusterWideDenied: denied,
			namespaces: []namespaceAccess{{name: "guestbook", exists: true, managedBy: "openshift-gitops"}, {name: "other", exists: true}}}, status: StatusPass,
			message: "in the destination namespaces guestbook, other (not cluster-wide)"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			r := decideControllerAccess("c1", sa, tt.acc)
			g.Expect(r.ID).To(Equal("managed-argocd-rbac"))
			g.Expect(r.Status).To(Equal(tt.status), r.Message)
			g.Expect(r.Message).To(ContainSubstring(tt.message))
			if tt.status != StatusPass {
				g.Expect(r.Fix).To(ContainSubstring("kind: ClusterRoleBinding"))
				g.Expect(r.Fix).To(ContainSubstring("name: cluster-admin"))
				g.Expect(r.Fix).To(ContainSubstring("name: openshift-gitops-argocd-application-controller\n    namespace: openshift-gitops"))
				g.Expect(r.Fix).To(ContainSubstring("argocd.argoproj.io/managed-by: openshift-gitops"))
			}
		})
	}
}

func TestDecideWorkAgentAccess(t *testing.T) {
	g := NewWithT(t)
	sa := serviceAccount{DefaultWorkAgentNamespace, DefaultWorkAgentServiceAccount}
	r := decideWorkAgentAccess("c1", sa, []string{"argocd"}, nil)
	g.Expect(r.Status).To(Equal(StatusPass))
	r = decideWorkAgentAccess("c1", sa, []string{"argocd"}, []deniedVerbs{{namespace: "argocd", verbs: []string{"create", "patch"}}})
	g.Expect(r.Status).To(Equal(StatusFail))
	g.Expect(r.Message).To(Equal("system:serviceaccount:open-cluster-management-agent:klusterlet-work-sa may not create, patch applications.argoproj.io in argocd"))
	g.Expect(r.Fix).To(ContainSubstring(`apiGroups: ["argoproj.io"]`))
	g.Expect(r.Fix).To(ContainSubstring("name: klusterlet-work-sa\n    namespace: open-cluster-management-agent"))
}

func TestDecideAppNamespaces(t *testing.T) {
	tests := map[string]struct {
		wanted   []string
		existing map[string]bool
		status   Status
		message  string
	}{
		"exists, Argo CD's":      {wanted: []string{"argocd"}, existing: map[string]bool{"argocd": true}, status: StatusPass},
		"missing":                {wanted: []string{"argocd"}, existing: map[string]bool{}, status: StatusFail, message: "namespace argocd does not exist"},
		"exists, not Argo CD's":  {wanted: []string{"apps"}, existing: map[string]bool{"apps": true}, status: StatusWarn, message: "application.namespaces"},
		"one missing of several": {wanted: []string{"apps", "argocd"}, existing: map[string]bool{"argocd": true}, status: StatusFail},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			r := decideAppNamespaces("c1", "argocd", tt.wanted, tt.existing)
			g.Expect(r.Status).To(Equal(tt.status))
			g.Expect(r.Message).To(ContainSubstring(tt.message))
		})
	}
}

func TestReportRendering(t *testing.T) {
	g := NewWithT(t)
	report := NewReport([]Result{
		{ID: "a", Title: "A", Status: StatusPass, Message: "fine"},
		{ID: "b", Title: "B", Subject: "c1", Status: StatusFail, Message: "broken", Fix: "line one\nline two"},
		{ID: "c", Title: "C", Status: StatusWarn, Message: "meh", Fix: "do this"},
		{ID: "d", Title: "D", Status: StatusSkip, Message: "nothing to do"},
	})
	g.Expect(report.Summary).To(Equal(Summary{Pass: 1, Warn: 1, Fail: 1, Skip: 1}))
	g.Expect(report.Err()).To(MatchError("1 check failed"))

	var text bytes.Buffer
	g.Expect(WriteText(&text, report, false)).To(Succeed())
	g.Expect(text.String()).To(Equal(`[ok]   A: fine
[FAIL] B (c1): broken
       fix: line one
            line two
[warn] C: meh
       fix: do this
[skip] D: nothing to do

4 checks: 1 passed, 1 warning, 1 failed, 1 skipped
`))
	text.Reset()
	g.Expect(WriteText(&text, report, true)).To(Succeed())
	g.Expect(text.String()).To(HavePrefix("✓ A: fine\n✗ B (c1): broken\n  fix: line one\n       line two\n! C: meh\n"))

	var js bytes.Buffer
	g.Expect(WriteJSON(&js, report)).To(Succeed())
	var back Report
	g.Expect(json.Unmarshal(js.Bytes(), &back)).To(Succeed())
	g.Expect(back).To(Equal(report))

	g.Expect(NewReport(nil).Err()).To(Succeed())
	g.Expect(NewReport([]Result{{Status: StatusFail}, {Status: StatusFail}}).Err()).To(MatchError("2 checks failed"))
}

func TestDecideClientConfigs(t *testing.T) {
	g := NewWithT(t)
	mc := func(name, url string) clusterv1.ManagedCluster {
		return clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: clusterv1.ManagedClusterSpec{ManagedClusterClientConfigs: []clusterv1.ClientConfig{{URL: url}}}}
	}
	hub := gitops.NewHubNames("https://api.hub.example:6443", "10.96.0.1")
	r := decideClientConfigs([]clusterv1.ManagedCluster{mc("cluster1", "https://api.cluster1.example:6443"), mc("cluster2", "https://10.0.0.9:6443")}, hub)
	g.Expect(r.Status).To(Equal(StatusPass))
	g.Expect(r.Message).To(Equal("none of 2 points at the hub"))

	r = decideClientConfigs([]clusterv1.ManagedCluster{mc("cluster1", "https://kubernetes.default.svc"), mc("cluster2", "https://10.96.0.1"),
		mc("cluster3", "https://api.cluster3.example"), mc("cluster4", "https://"+strings.Repeat("a", 300)+".example")}, hub)
	g.Expect(r.Status).To(Equal(StatusWarn))
	g.Expect(r.Message).To(Equal("client config URLs naming the hub: cluster1 (https://kubernetes.default.svc: the hub's own kubernetes Service (kubernetes.default.svc), which Argo CD answers with its in-cluster credentials); cluster2 (https://10.96.0.1: the hub apiserver's address (10.96.0.1))"))
	g.Expect(r.Fix).To(ContainSubstring("never carry them"))
}

// A set bound where Applications are taken from, whose clusters join it by their own labels, is
// named with its namespace and selector; the documents' global set, an exclusive set, and a set
// bound in a namespace Applications are not taken from are not.
func TestDecideClusterSetLabels(t *testing.T) {
	g := NewWithT(t)
	set := func(name string, sel *metav1.LabelSelector) clusterv1beta2.ManagedClusterSet {
		s := clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if sel != nil {
			s.Spec.ClusterSelector = clusterv1beta2.ManagedClusterSelector{SelectorType: clusterv1beta2.LabelSelector, LabelSelector: sel}
		}
		return s
	}
	bind := func(ns, set string) clusterv1beta2.ManagedClusterSetBinding {
		return clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: set}, Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: set}}
	}
	sets := []clusterv1beta2.ManagedClusterSet{set("global", &metav1.LabelSelector{}), set("team-a", nil),
		set("prod", &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}})}
	p := propagation.Policy{ArgoCDNamespace: "argocd", PullNamespaces: []string{"argocd", "team-a"}}

	r := decideClusterSetLabels(p, []clusterv1beta2.ManagedClusterSetBinding{bind("team-b", "prod")}, sets)
	g.Expect(r.Status).To(Equal(StatusPass))
	g.Expect(r.Message).To(Equal("no ManagedClusterSet is bound in the namespaces Applications are taken from"))

	r = decideClusterSetLabels(p, []clusterv1beta2.ManagedClusterSetBinding{bind("argocd", "global"), bind("team-a", "team-a"), bind("team-b", "prod"), bind("team-a", "gone")}, sets)
	g.Expect(r.Status).To(Equal(StatusPass))
	g.Expect(r.Message).To(Equal("none of 2 bindings in the namespaces Applications are taken from selects clusters by a label they may set"))

	r = decideClusterSetLabels(p, []clusterv1beta2.ManagedClusterSetBinding{bind("argocd", "global"), bind("team-a", "prod")}, sets)
	g.Expect(r.Status).To(Equal(StatusWarn))
	g.Expect(r.Message).To(Equal("1 ManagedClusterSet bound where Applications are taken from selects clusters by labels each cluster may set on its own ManagedCluster: prod in team-a (env=prod)"))
	g.Expect(r.Fix).To(ContainSubstring("ExclusiveClusterSetLabel"))
}
