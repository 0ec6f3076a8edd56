package intern

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
)

const resources = `[{"version":"v1","kind":"ConfigMap","namespace":"guestbook","name":"guestbook-ui","status":"Synced"}]`

// work is a ManifestWork as the cache decodes it: each call has its own copy of every string.
func work(t *testing.T, cluster string) *workv1.ManifestWork {
	t.Helper()
	w := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Name: "argocd-guestbook", Namespace: cluster, UID: types.UID("uid-" + cluster), ResourceVersion: "17",
			Labels: map[string]string{"apps.open-cluster-management.io/managed-by": "argocd-pull"}},
		Spec: workv1.ManifestWorkSpec{
			Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: []byte(`{"kind":"Application"}`)}}}},
			ManifestConfigs: []workv1.ManifestConfigOption{{FeedbackRules: []workv1.FeedbackRule{{Type: workv1.JSONPathsType,
				JsonPaths: []workv1.JsonPath{{Name: "healthStatus", Path: ".status.health.status"}}}}}},
		},
		Status: workv1.ManifestWorkStatus{
			Conditions: []metav1.Condition{{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, Reason: "AppliedManifestWorkComplete", Message: "Apply manifest work complete"}},
			ResourceStatus: workv1.ManifestResourceStatus{Manifests: []workv1.ManifestCondition{{StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{
				{Name: "healthStatus", Value: workv1.FieldValue{Type: workv1.String, String: ptr.To("Healthy")}},
				{Name: "resources", Value: workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: ptr.To(resources)}},
			}}}}},
		},
	}
	data, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	out := &workv1.ManifestWork{}
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func application(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	doc := fmt.Sprintf(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":%q,"namespace":"argocd","uid":"uid-%s",
		"labels":{"apps.open-cluster-management.io/pull-to-ocm-managed-cluster":"true"}},
		"spec":{"project":"default","source":{"repoURL":"https://github.com/argoproj/argocd-example-apps.git","path":"guestbook"},
		"syncPolicy":{"syncOptions":["CreateNamespace=true"],"automated":{"prune":true}}},
		"status":{"sync":{"status":"Synced","revision":"abc"},"history":[{"id":1}]}}`, name, name)
	if err := u.UnmarshalJSON([]byte(doc)); err != nil {
		t.Fatal(err)
	}
	return u
}

func same(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

func TestObjectKeepsContentAndSharesRepeatedStrings(t *testing.T) {
	tab := NewTable()
	w1, w2 := work(t, "cluster1"), work(t, "cluster2")
	want1 := w1.DeepCopy()
	tab.Object(w1)
	tab.Object(w2)
	if !equality.Semantic.DeepEqual(w1, want1) {
		t.Fatalf("the work changed:\n%+v\nwant\n%+v", w1, want1)
	}
	v1, v2 := w1.Status.ResourceStatus.Manifests[0].StatusFeedbacks.Values, w2.Status.ResourceStatus.Manifests[0].StatusFeedbacks.Values
	for what, pair := range map[string][2]string{
		"feedback name":    {v1[0].Name, v2[0].Name},
		"feedback value":   {*v1[1].Value.JsonRaw, *v2[1].Value.JsonRaw},
		"condition reason": {w1.Status.Conditions[0].Reason, w2.Status.Conditions[0].Reason},
		"JSONPath":         {w1.Spec.ManifestConfigs[0].FeedbackRules[0].JsonPaths[0].Path, w2.Spec.ManifestConfigs[0].FeedbackRules[0].JsonPaths[0].Path},
		"label value":      {w1.Labels["apps.open-cluster-management.io/managed-by"], w2.Labels["apps.open-cluster-management.io/managed-by"]},
	} {
		if !same(pair[0], pair[1]) {
			t.Errorf("the %s %q is not shared between the two works", what, pair[0])
		}
	}
	for k := range w1.Labels {
		for k2 := range w2.Labels {
			if !same(k, k2) {
				t.Errorf("the label key %q is not shared", k)
			}
		}
	}
	for _, unique := range []string{"uid-cluster1", "argocd-guestbook", "17"} {
		if _, ok := tab.strings.cur[unique]; ok {
			t.Errorf("the table keeps %q, a value unique to one work's metadata", unique)
		}
	}
	if string(w1.Spec.Workload.Manifests[0].Raw) != `{"kind":"Application"}` {
		t.Errorf("the raw manifest changed: %s", w1.Spec.Workload.Manifests[0].Raw)
	}
}

func TestObjectSharesUnstructuredKeysAndValuesButNotNames(t *testing.T) {
	tab := NewTable()
	a1, a2 := application(t, "app1"), application(t, "app2")
	want := a1.DeepCopy()
	tab.Object(a1)
	tab.Object(a2)
	if !equality.Semantic.DeepEqual(a1, want) {
		t.Fatalf("the Application changed:\n%v\nwant\n%v", a1.Object, want.Object)
	}
	repo := func(u *unstructured.Unstructured) string {
		s, _, _ := unstructured.NestedString(u.Object, "spec", "source", "repoURL")
		return s
	}
	option := func(u *unstructured.Unstructured) string {
		s, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "syncPolicy", "syncOptions")
		return s[0]
	}
	if !same(repo(a1), repo(a2)) || !same(option(a1), option(a2)) {
		t.Error("the source or a sync option is not shared between the two Applications")
	}
	for k := range a1.Object["spec"].(map[string]any) {
		for k2 := range a2.Object["spec"].(map[string]any) {
			if k == k2 && !same(k, k2) {
				t.Errorf("the key %q is not shared", k)
			}
		}
	}
	// Names and UIDs are one object's own: not in the table.
	before := tab.Len()
	tab.Object(application(t, "app3"))
	if tab.Len() != before {
		t.Errorf("a third Application that differs only by name and UID added %d strings to the table", tab.Len()-before)
	}
}

// boxOf is the address an interface value's data word points to.
func boxOf(v any) unsafe.Pointer { return (*[2]unsafe.Pointer)(unsafe.Pointer(&v))[1] }

// The cache holds every object it decodes until the next change of it: the spare capacity the
// decoder leaves in slices, and a boxed copy of each string value of an unstructured object, are
// paid 10,000 times over.
func TestObjectLeavesNoSpareCapacityAndSharesBoxes(t *testing.T) {
	tab := NewTable()
	w := work(t, "cluster1")
	w.Status.Conditions = append(make([]metav1.Condition, 0, 8), w.Status.Conditions...)
	tab.Object(w)
	if c := w.Status.Conditions; cap(c) != len(c) {
		t.Errorf("the work's conditions keep capacity %d for %d", cap(c), len(c))
	}
	a1, a2 := application(t, "app1"), application(t, "app2")
	history := a1.Object["status"].(map[string]any)["history"].([]any)
	a1.Object["status"].(map[string]any)["history"] = append(make([]any, 0, 8), history...)
	tab.Object(a1)
	tab.Object(a2)
	if h := a1.Object["status"].(map[string]any)["history"].([]any); cap(h) != len(h) || len(h) != 1 {
		t.Errorf("the Application's history has length %d and capacity %d, want 1 and 1", len(h), cap(h))
	}
	project := func(u *unstructured.Unstructured) any { return u.Object["spec"].(map[string]any)["project"] }
	if boxOf(project(a1)) != boxOf(project(a2)) {
		t.Error("the two Applications' project is boxed twice")
	}
}

// The Applications an ApplicationSet generates differ in their names and targets; their source,
// sync policy and most of their status are the same, and the cache keeps one copy of them.
func TestObjectSharesEqualSubtreesOfUnstructuredObjects(t *testing.T) {
	tab := NewTable()
	a1, a2 := application(t, "app1"), application(t, "app2")
	want1, want2 := a1.DeepCopy(), a2.DeepCopy()
	tab.Object(a1)
	tab.Object(a2)
	if !equality.Semantic.DeepEqual(a1, want1) || !equality.Semantic.DeepEqual(a2, want2) {
		t.Fatalf("an Application changed:\n%v\nwant\n%v", a1.Object, want1.Object)
	}
	at := func(u *unstructured.Unstructured, path ...string) any {
		v, _, _ := unstructured.NestedFieldNoCopy(u.Object, path...)
		return v
	}
	for _, path := range [][]string{{"spec"}, {"spec", "source"}, {"spec", "syncPolicy"}, {"status"}, {"metadata", "labels"}} {
		if boxOf(at(a1, path...)) != boxOf(at(a2, path...)) {
			t.Errorf("%v is kept twice", path)
		}
	}
	if boxOf(a1.Object) == boxOf(a2.Object) || boxOf(a1.Object["metadata"]) == boxOf(a2.Object["metadata"]) {
		t.Fatal("two Applications share their top level or metadata")
	}
	// What differs is not shared, and a copy from the cache is the reader's own.
	a3 := application(t, "app3")
	if err := unstructured.SetNestedField(a3.Object, "other", "spec", "source", "path"); err != nil {
		t.Fatal(err)
	}
	tab.Object(a3)
	if boxOf(at(a3, "spec", "source")) == boxOf(at(a1, "spec", "source")) || boxOf(at(a3, "spec", "syncPolicy")) != boxOf(at(a1, "spec", "syncPolicy")) {
		t.Error("a different source is shared, or the same sync policy beside it is not")
	}
	c := a1.DeepCopy()
	if err := unstructured.SetNestedField(c.Object, "changed", "spec", "project"); err != nil {
		t.Fatal(err)
	}
	if p, _, _ := unstructured.NestedString(a2.Object, "spec", "project"); p != "default" {
		t.Errorf("a change to a copy of one Application reached another: project %q", p)
	}
}

func TestTableIsBounded(t *testing.T) {
	tab := &Table{MaxLen: 16, MaxBytes: 1000, MaxEntries: 50}
	if s := strings.Repeat("x", 17); !same(tab.String(s), s) || tab.Len() != 0 {
		t.Fatal("a string longer than MaxLen was kept")
	}
	hot := strings.Clone("Healthy")
	tab.String(hot)
	for i := range 10_000 {
		// What a managed cluster could write: a new value each time, and a value the fleet repeats.
		tab.String(fmt.Sprintf("attacker-%06d", i))
		if got := tab.String(strings.Clone("Healthy")); !same(got, hot) {
			t.Fatalf("after %d new strings the repeated one is no longer shared", i)
		}
		if tab.Len() > 2*50 {
			t.Fatalf("the table holds %d strings, more than two generations of 50", tab.Len())
		}
	}
	bytes := 0
	for _, gen := range []map[string]any{tab.strings.cur, tab.strings.prev} {
		for s := range gen {
			bytes += len(s)
		}
	}
	if bytes > 2*1000 {
		t.Fatalf("the table holds %d bytes, more than two generations of 1000", bytes)
	}
	// The same for the subtrees of unstructured objects, and a subtree with a value too long to
	// share is not kept at all.
	for i := range 10_000 {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"n": int64(i), "m": map[string]any{"i": int64(i)}}}}
		tab.Object(u)
		if n := len(tab.trees.cur) + len(tab.trees.prev); n > 2*50 {
			t.Fatalf("the table holds %d subtrees, more than two generations of 50", n)
		}
	}
	tab = &Table{MaxLen: 10, MaxBytes: 1000, MaxEntries: 50}
	tab.Object(&unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"message": strings.Repeat("x", 11)}}})
	if n := len(tab.trees.cur); n != 0 {
		t.Errorf("a subtree holding a value longer than MaxLen was kept (%d subtrees)", n)
	}
}

// BenchmarkObject is the cost the cache's transform adds to each watch event of a work and of an
// Application, beside decoding the event from JSON.
func BenchmarkObject(b *testing.B) {
	t := &testing.T{}
	tab := NewTable()
	w, a := work(t, "cluster1"), application(t, "app1")
	b.Run("ManifestWork", func(b *testing.B) {
		for b.Loop() {
			tab.Object(w)
		}
	})
	b.Run("Application", func(b *testing.B) {
		for b.Loop() {
			tab.Object(a)
		}
	})
}
