package doctor

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/argocd-pull/argocd-pull/internal/assets"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

// applicationCRD reads the Application CRD of an Argo CD release from its module.
func applicationCRD(t *testing.T, version string) *unstructured.Unstructured {
	t.Helper()
	root, err := assets.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := assets.ArgoCDModuleDir(root, version)
	if err != nil {
		t.Skipf("Argo CD %s's module: %v", version, err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "manifests", "crds", "application-crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &crd.Object); err != nil {
		t.Fatal(err)
	}
	return crd
}

// The Application CRD of every release argocd-pull supports (and of the one it ran on before)
// declares every field the feedback reads.
func TestEverySupportedApplicationCRDDeclaresTheFeedback(t *testing.T) {
	for _, version := range []string{"v3.2.0", "v3.4.7", "v3.5.1"} {
		t.Run(version, func(t *testing.T) {
			g := NewWithT(t)
			schema := servedSchema(applicationCRD(t, version))
			g.Expect(schema).NotTo(BeNil())
			g.Expect(missingFields(schema, manifestwork.FeedbackJSONPaths())).To(BeEmpty())
		})
	}
}

// A managed cluster whose Application CRD lacks fields argocd-pull reads (an older Argo CD, or a
// CRD cut by hand) is named with the fields it lacks; the check warns, and never fails the cluster:
// the hub shows what it reports.
func TestAnApplicationCRDWithoutAFieldArgocdPullReads(t *testing.T) {
	g := NewWithT(t)
	crd := applicationCRD(t, "v3.5.1")
	schema := servedSchema(crd)
	sync, _, _ := unstructured.NestedMap(schema, "properties", "status", "properties", "sync", "properties")
	delete(sync, "revisions")
	g.Expect(unstructured.SetNestedMap(schema, sync, "properties", "status", "properties", "sync", "properties")).To(Succeed())
	g.Expect(unstructured.SetNestedField(schema, map[string]any{"type": "object"}, "properties", "status", "properties", "history", "items", "properties", "source")).To(Succeed())

	missing := missingFields(schema, manifestwork.FeedbackJSONPaths())
	g.Expect(missing).To(ConsistOf("status.sync.revisions", "status.history.source.repoURL", "status.history.source.path",
		"status.history.source.targetRevision", "status.history.source.chart"))
	r := decideArgoCDVersion("cluster1", "v3.5.1", missing)
	g.Expect(r.Status).To(Equal(StatusWarn))
	g.Expect(r.Message).To(ContainSubstring("does not declare status.sync.revisions, "))
	g.Expect(r.Message).To(ContainSubstring("the hub shows what the cluster reports, without these fields"))
	g.Expect(r.Fix).To(ContainSubstring("--server-side"))

	// A schema that keeps unknown fields declares everything below it; a CRD with no schema
	// at all declares nothing, and nothing panics.
	g.Expect(missingFields(map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}, manifestwork.FeedbackJSONPaths())).To(BeEmpty())
	g.Expect(missingFields(nil, []string{".status.sync.status"})).To(Equal([]string{"status.sync.status"}))
}

func TestTheManagedClustersArgoCDVersion(t *testing.T) {
	g := NewWithT(t)
	for image, want := range map[string]string{
		"quay.io/argoproj/argocd:v3.5.1":                      "v3.5.1",
		"registry.example:5000/argoproj/argocd:v3.4.7":        "v3.4.7",
		"quay.io/argoproj/argocd:v2.14.3@sha256:0123abcd":     "v2.14.3",
		"registry.redhat.io/openshift-gitops-1/argocd-rhel8":  "",
		"quay.io/argoproj/argocd:latest":                      "",
		"quay.io/argoproj/argocd@sha256:0123456789abcdef0123": "",
	} {
		g.Expect(imageVersion(image)).To(Equal(want), image)
	}

	old := decideArgoCDVersion("cluster1", "v2.14.3", nil)
	g.Expect(old.Status).To(Equal(StatusWarn))
	g.Expect(old.Message).To(Equal("Argo CD v2.14.3 is outside the supported range (v3.4 to v3.5)"))
	g.Expect(decideArgoCDVersion("cluster1", "v3.5.1", nil)).To(HaveField("Status", StatusPass))
	unknown := decideArgoCDVersion("cluster1", "", nil)
	g.Expect(unknown.Status).To(Equal(StatusPass))
	g.Expect(unknown.Message).To(HavePrefix("Argo CD of unknown version"))
}
