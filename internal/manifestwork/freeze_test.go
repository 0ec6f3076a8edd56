package manifestwork

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/argocd-pull/argocd-pull/api"
)

func TestFreezeStopsSyncingAndKeepsTheRest(t *testing.T) {
	g := NewWithT(t)
	app := pullApp(func(u *unstructured.Unstructured) { u.Object["operation"] = map[string]any{"sync": map[string]any{}} })
	work, err := DesiredWork(app, nil, Target{Cluster: "cluster1", AppNamespace: "argocd"}, Deliveries{Sync: &Delivery{ID: "d1"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(work.Annotations).To(HaveKey(api.DeliveriesAnnotation))

	frozen, err := Freeze(work, "ClusterNotBoundToNamespace")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(frozen.Name).To(Equal(work.Name))
	g.Expect(frozen.Annotations).To(HaveKeyWithValue(api.FrozenAnnotation, "ClusterNotBoundToNamespace"))
	g.Expect(frozen.Annotations).NotTo(HaveKey(api.DeliveriesAnnotation))
	g.Expect(UpToDate(work, frozen)).To(BeFalse(), "a frozen work is written")

	payload := &unstructured.Unstructured{}
	g.Expect(payload.UnmarshalJSON(frozen.Spec.Workload.Manifests[0].Raw)).To(Succeed())
	g.Expect(payload.Object).NotTo(HaveKey("operation"), "no request runs")
	_, automated, _ := unstructured.NestedMap(payload.Object, "spec", "syncPolicy", "automated")
	g.Expect(automated).To(BeFalse(), "no new commit is synced")
	_, policy, _ := unstructured.NestedFieldNoCopy(payload.Object, "spec", "syncPolicy")
	g.Expect(policy).To(BeFalse(), "an empty syncPolicy arrives as null, which Argo CD's CRD refuses")
	g.Expect(payload.GetAnnotations()).To(HaveKeyWithValue(api.FrozenAnnotation, "ClusterNotBoundToNamespace"))
	g.Expect(payload.GetAnnotations()).NotTo(HaveKey(api.SyncDeliveryAnnotation))
	source, _, _ := unstructured.NestedMap(payload.Object, "spec", "source")
	g.Expect(source).To(HaveKeyWithValue("repoURL", "https://git.example/repo"), "what runs stays as it is")
	g.Expect(payload.GetFinalizers()).To(Equal(app.GetFinalizers()))

	again, err := Freeze(frozen, "ClusterNotBoundToNamespace")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(BeNil(), "frozen once")
	other, err := Freeze(frozen, "NamespaceNotAllowed")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(other.Annotations).To(HaveKeyWithValue(api.FrozenAnnotation, "NamespaceNotAllowed"), "the reason shown is the current one")
}
