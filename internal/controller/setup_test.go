package controller

import (
	"encoding/json"
	"testing"
	"unsafe"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/intern"
)

// The cache's transform drops managedFields and shares what Applications repeat, leaving every
// value as it was.
func TestSlimForCache(t *testing.T) {
	g := NewWithT(t)
	transform := intern.NewTable().CacheTransform()
	decoded := func(name string) *unstructured.Unstructured {
		app := argocd.NewApplication()
		app.SetName(name)
		app.SetNamespace("argocd")
		app.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "applicationset-controller", Operation: metav1.ManagedFieldsOperationApply}})
		app.Object["spec"] = map[string]any{"project": "default", "source": map[string]any{"repoURL": "https://git.example/apps", "path": "guestbook"}}
		data, err := json.Marshal(app.Object)
		g.Expect(err).NotTo(HaveOccurred())
		out := &unstructured.Unstructured{}
		g.Expect(out.UnmarshalJSON(data)).To(Succeed())
		return out
	}
	var cached []*unstructured.Unstructured
	for _, name := range []string{"web-cluster1", "web-cluster2"} {
		app := decoded(name)
		want := app.DeepCopy()
		want.SetManagedFields(nil)
		out, err := transform(app)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out.(*unstructured.Unstructured).Object).To(Equal(want.Object))
		cached = append(cached, out.(*unstructured.Unstructured))
	}
	repo := func(u *unstructured.Unstructured) *byte {
		s, _, _ := unstructured.NestedString(u.Object, "spec", "source", "repoURL")
		return unsafe.StringData(s)
	}
	g.Expect(repo(cached[0])).To(BeIdenticalTo(repo(cached[1])), "the two Applications share their source's URL")
}
