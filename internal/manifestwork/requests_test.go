package manifestwork

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
)

// requestWork is the held work of pullApp (changed by mutate) carrying deliveries, at generation
// gen, applied at applied (0: never).
func requestWork(t *testing.T, gen, applied int64, deliveries Deliveries, mutate ...func(*unstructured.Unstructured)) *workv1.ManifestWork {
	t.Helper()
	w, err := DesiredWork(pullApp(mutate...), nil, Target{Cluster: "cluster1", AppNamespace: "openshift-gitops"}, deliveries)
	if err != nil {
		t.Fatal(err)
	}
	if w, err = Hold(w); err != nil {
		t.Fatal(err)
	}
	w.Generation = gen
	if applied > 0 {
		w.Status.Conditions = []metav1.Condition{{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, ObservedGeneration: applied}}
	}
	return w
}

func withOperation(u *unstructured.Unstructured) {
	u.Object["operation"] = map[string]any{"sync": map[string]any{"revision": "abc"}}
}

func onlyPullLabel(u *unstructured.Unstructured) {
	u.SetLabels(map[string]string{api.PullLabel: "true"})
}

// asStored is the work as the apiserver returns it: the empty maps of an embedded object's
// metadata dropped.
func asStored(t *testing.T, w *workv1.ManifestWork) *workv1.ManifestWork {
	t.Helper()
	for i, m := range w.Spec.Workload.Manifests {
		var obj map[string]any
		if err := json.Unmarshal(m.Raw, &obj); err != nil {
			t.Fatal(err)
		}
		meta := obj["metadata"].(map[string]any)
		if l, ok := meta["labels"].(map[string]any); ok && len(l) == 0 {
			delete(meta, "labels")
		}
		w.Spec.Workload.Manifests[i].Raw, _ = json.Marshal(obj)
	}
	return w
}

func TestRequestsOnlySince(t *testing.T) {
	refresh := Deliveries{Refresh: &Delivery{ID: "r1", Hash: "h"}}
	sync := Deliveries{Sync: &Delivery{ID: "s1", Hash: "h"}}
	both := Deliveries{Sync: sync.Sync, Refresh: refresh.Refresh}
	terminate := Deliveries{Sync: &Delivery{ID: "s1", Hash: "h", Terminate: 1}}
	newSource := func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "v2", "spec", "source", "targetRevision")
	}
	tests := map[string]struct {
		existing, desired *workv1.ManifestWork
		want              string
	}{
		"a refresh request":                {requestWork(t, 3, 3, Deliveries{}), requestWork(t, 0, 0, refresh, setAnnotation(argocd.RefreshAnnotation, "normal")), "3/4"},
		"a hard refresh request":           {requestWork(t, 3, 3, Deliveries{}), requestWork(t, 0, 0, refresh, setAnnotation(argocd.RefreshAnnotation, "hard")), "3/4"},
		"a sync request":                   {requestWork(t, 3, 3, Deliveries{}), requestWork(t, 0, 0, sync, withOperation), "3/4"},
		"a request leaves":                 {requestWork(t, 5, 5, sync, withOperation), requestWork(t, 0, 0, Deliveries{}), "5/6"},
		"a request to terminate":           {requestWork(t, 5, 5, sync, withOperation), requestWork(t, 0, 0, terminate, withOperation), "5/6"},
		"a new source":                     {requestWork(t, 3, 3, Deliveries{}), requestWork(t, 0, 0, Deliveries{}, newSource), ""},
		"a new source with a sync request": {requestWork(t, 3, 3, Deliveries{}), requestWork(t, 0, 0, sync, withOperation, newSource), ""},
		"a new label on the Application":   {requestWork(t, 3, 3, Deliveries{}), requestWork(t, 0, 0, Deliveries{}, setLabel("tier", "web")), ""},
		"a refresh over the apiserver's copy (empty labels dropped)": {asStored(t, requestWork(t, 3, 3, Deliveries{}, onlyPullLabel)), requestWork(t, 0, 0, refresh, onlyPullLabel, setAnnotation(argocd.RefreshAnnotation, "normal")), "3/4"},
		"a work never written": {requestWork(t, 0, 0, Deliveries{}), requestWork(t, 0, 0, refresh, setAnnotation(argocd.RefreshAnnotation, "normal")), ""},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(RequestsOnlySince(tt.existing, tt.desired)).To(Equal(tt.want))
		})
	}

	t.Run("a second request while the first travels keeps the generation of the content", func(t *testing.T) {
		g := NewWithT(t)
		first := requestWork(t, 4, 3, refresh, setAnnotation(argocd.RefreshAnnotation, "normal"))
		first.Annotations[api.RequestsOnlyAnnotation] = "3/4"
		g.Expect(RequestsOnlySince(first, requestWork(t, 0, 0, both, withOperation, setAnnotation(argocd.RefreshAnnotation, "normal")))).To(Equal("3/5"))
	})
	t.Run("a record another write made stale is not followed", func(t *testing.T) {
		g := NewWithT(t)
		paused := requestWork(t, 6, 6, Deliveries{})
		paused.Annotations[api.RequestsOnlyAnnotation] = "3/4" // written at 4; a pause made 5, a resume 6
		g.Expect(RequestsOnlySince(paused, requestWork(t, 0, 0, refresh, setAnnotation(argocd.RefreshAnnotation, "normal")))).To(Equal("6/7"))
	})
}

func TestContentApplied(t *testing.T) {
	at := func(gen, applied int64, record string) *workv1.ManifestWork {
		w := requestWork(t, gen, applied, Deliveries{})
		if record != "" {
			w.Annotations[api.RequestsOnlyAnnotation] = record
		}
		return w
	}
	tests := map[string]struct {
		work *workv1.ManifestWork
		want bool
	}{
		"applied at its generation":                       {at(4, 4, ""), true},
		"applied before a request":                        {at(4, 3, "3/4"), true},
		"applied before two requests":                     {at(5, 3, "3/5"), true},
		"applied before the content changed":              {at(4, 2, "3/4"), false},
		"not applied, no record":                          {at(4, 3, ""), false},
		"never applied":                                   {at(4, 0, "3/4"), false},
		"a record of an earlier write (a pause since)":    {at(5, 3, "3/4"), false},
		"a record that does not parse":                    {at(4, 3, "three/four"), false},
		"a record that claims the future (a forged one)":  {at(4, 3, "5/4"), false},
		"applied at its generation, with an older record": {at(4, 4, "3/4"), true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(ContentApplied(tt.work)).To(Equal(tt.want))
		})
	}
	t.Run("not applied when the agent failed the request's generation", func(t *testing.T) {
		w := at(4, 3, "3/4")
		w.Status.Conditions[0] = metav1.Condition{Type: workv1.WorkApplied, Status: metav1.ConditionFalse, ObservedGeneration: 4}
		NewWithT(t).Expect(ContentApplied(w)).To(BeFalse())
	})
}
