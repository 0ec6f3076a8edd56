package controller

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/assets"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/test/simagent"
)

// documentsApp creates the hub Application the documents' pull-model ApplicationSet
// (test/testdata/docs/pull-applicationset.yaml, multi-source) generates for cluster, in the
// test's namespace, with its template's labels, annotations and spec unchanged but for the
// cluster's name; extraSources are appended to its sources.
func (h *harness) documentsApp(name, cluster string, extraSources ...map[string]any) {
	h.t.Helper()
	root, err := assets.RepoRoot()
	h.g.Expect(err).NotTo(HaveOccurred())
	data, err := os.ReadFile(filepath.Join(root, "test", "testdata", "docs", "pull-applicationset.yaml"))
	h.g.Expect(err).NotTo(HaveOccurred())
	set := map[string]any{}
	h.g.Expect(yaml.Unmarshal([]byte(strings.ReplaceAll(string(data), "{{name}}", cluster)), &set)).To(Succeed())
	template, _, _ := unstructured.NestedMap(set, "spec", "template")
	app := argocd.NewApplication()
	app.SetName(name)
	app.SetNamespace(h.ns)
	labels, _, _ := unstructured.NestedStringMap(template, "metadata", "labels")
	annotations, _, _ := unstructured.NestedStringMap(template, "metadata", "annotations")
	app.SetLabels(labels)
	app.SetAnnotations(annotations)
	spec := template["spec"].(map[string]any)
	for _, s := range extraSources {
		spec["sources"] = append(spec["sources"].([]any), s)
	}
	app.Object["spec"] = spec
	h.create(app)
}

// managedMultiSourceFeedback is what the work agent reports of the documents' Application on a
// managed cluster (testdata/managed-multisource-status.yaml), with mutate applied to its status.
func managedMultiSourceFeedback(t *testing.T, mutate func(status map[string]any)) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "managed-multisource-status.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	app := argocd.NewApplication()
	if err := yaml.Unmarshal(data, &app.Object); err != nil {
		t.Fatal(err)
	}
	if mutate != nil {
		mutate(app.Object["status"].(map[string]any))
	}
	return simagent.FeedbackOf(app.Object)
}

// The documents' ApplicationSet is multi-source: its Applications' status carries lists where a
// single-source one carries scalars. Each reaches the hub Application as the cluster reports it
// (argocd app history, argocd app get and the UI's panels read them), and the hub's write passes
// the Application CRD of the Argo CD version the tests pin.
func TestTheDocumentsMultiSourceApplicationShowsEveryFieldItsClusterReports(t *testing.T) {
	const sha0, sha1 = "1f2e3d4c5b6a79881726354453627180a9b8c7d6", "9c8f3a1e2b7d4c6f0a1b2c3d4e5f60718293a4b5"
	source := map[string]any{"repoURL": "https://github.com/argoproj/argocd-example-apps.git", "path": "guestbook", "targetRevision": "main"}
	values := &struct{ refs map[string]any }{map[string]any{"repoURL": "https://git.example/values.git", "targetRevision": "v2", "ref": "values"}}
	cases := map[string]struct {
		extra   []map[string]any
		mutate  func(status map[string]any)
		sources []any
		revs    func(rev string) []any
	}{
		"the documents' one source": {
			sources: []any{source},
			revs:    func(rev string) []any { return []any{rev} },
		},
		"two sources, one a ref": {
			extra: []map[string]any{values.refs},
			mutate: func(status map[string]any) {
				addSource(status, values.refs, "4a5b6c7d8e9f00112233445566778899aabbccdd")
			},
			sources: []any{source, values.refs},
			revs:    func(rev string) []any { return []any{rev, "4a5b6c7d8e9f00112233445566778899aabbccdd"} },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := start(t)
			cluster := h.cluster()
			h.documentsApp("guestbook", cluster, tc.extra...)
			w := h.work("guestbook", cluster)
			feedback := managedMultiSourceFeedback(t, tc.mutate)
			feedback[manifestwork.FeedbackManagedUID] = "uid-on-the-cluster"
			h.report("guestbook", cluster, w.Generation, feedback)
			h.g.Eventually(func() string { return statusField(h.getApp("guestbook"), "health", "status") }, timeout, interval).Should(Equal("Healthy"))
			app := h.getApp("guestbook")
			list := func(path ...string) []any {
				l, _, _ := unstructured.NestedSlice(app.Object, append([]string{"status"}, path...)...)
				return l
			}
			t.Run("sync.revisions", func(t *testing.T) {
				NewWithT(t).Expect(list("sync", "revisions")).To(Equal(tc.revs(sha1)))
			})
			t.Run("sync.comparedTo.sources", func(t *testing.T) {
				NewWithT(t).Expect(list("sync", "comparedTo", "sources")).To(Equal(tc.sources))
			})
			t.Run("sourceTypes", func(t *testing.T) {
				want := []any{"Directory"}
				if len(tc.sources) == 2 {
					want = append(want, "Directory")
				}
				NewWithT(t).Expect(list("sourceTypes")).To(Equal(want))
			})
			t.Run("operationState.syncResult.revisions", func(t *testing.T) {
				NewWithT(t).Expect(list("operationState", "syncResult", "revisions")).To(Equal(tc.revs(sha1)))
			})
			t.Run("operationState.syncResult.sources", func(t *testing.T) {
				NewWithT(t).Expect(list("operationState", "syncResult", "sources")).To(Equal(tc.sources))
			})
			t.Run("operationState.syncResult.resources", func(t *testing.T) {
				g := NewWithT(t)
				resources := list("operationState", "syncResult", "resources")
				g.Expect(resources).To(HaveLen(2))
				g.Expect(resources[1]).To(Equal(map[string]any{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "guestbook",
					"name": "guestbook-ui", "status": "Synced", "message": "deployment.apps/guestbook-ui configured", "syncPhase": "Sync", "hookPhase": "Running"}))
			})
			history := list("history")
			entry := func(i int) map[string]any { return history[i].(map[string]any) }
			t.Run("history.revisions", func(t *testing.T) {
				g := NewWithT(t)
				g.Expect(history).To(HaveLen(2))
				g.Expect(entry(0)["revisions"]).To(Equal(tc.revs(sha0)))
				g.Expect(entry(1)["revisions"]).To(Equal(tc.revs(sha1)))
			})
			t.Run("history.sources", func(t *testing.T) {
				g := NewWithT(t)
				g.Expect(history).To(HaveLen(2))
				g.Expect(entry(0)["sources"]).To(Equal(tc.sources))
				g.Expect(entry(1)["sources"]).To(Equal(tc.sources))
				g.Expect(entry(1)).NotTo(HaveKey("source"), "the empty single source Argo CD writes beside them is not copied")
			})
			t.Run("history.initiatedBy", func(t *testing.T) {
				g := NewWithT(t)
				g.Expect(history).To(HaveLen(2))
				g.Expect(entry(0)["initiatedBy"]).To(Equal(map[string]any{"automated": true}))
				g.Expect(entry(1)["initiatedBy"]).To(Equal(map[string]any{"username": "admin"}))
			})
			t.Run("nothing cut", func(t *testing.T) {
				NewWithT(t).Expect(h.warnings("guestbook")).To(BeEmpty())
				NewWithT(t).Expect(list("conditions")).To(BeEmpty())
			})
		})
	}
}

// addSource adds src, at revision rev, to every list of sources and revisions in status.
func addSource(status map[string]any, src map[string]any, rev string) {
	add := func(m map[string]any) {
		if s, ok := m["sources"].([]any); ok {
			m["sources"] = append(s, src)
		}
		if r, ok := m["revisions"].([]any); ok {
			m["revisions"] = append(r, rev)
		}
	}
	sync := status["sync"].(map[string]any)
	add(sync)
	add(sync["comparedTo"].(map[string]any))
	status["sourceTypes"] = append(status["sourceTypes"].([]any), "Directory")
	add(status["operationState"].(map[string]any)["syncResult"].(map[string]any))
	for _, e := range status["history"].([]any) {
		add(e.(map[string]any))
	}
}
