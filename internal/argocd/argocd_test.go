package argocd

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestLabelAndAnnotationReadOneValueWithoutCopying(t *testing.T) {
	app := NewApplication()
	if v, ok := Label(app, "a"); ok || v != "" {
		t.Errorf("an Application without labels has label a = %q", v)
	}
	app.SetLabels(map[string]string{"a": "1", "empty": ""})
	app.SetAnnotations(map[string]string{"b": "2"})
	for _, c := range []struct {
		get       func() (string, bool)
		want      string
		wantFound bool
	}{
		{func() (string, bool) { return Label(app, "a") }, "1", true},
		{func() (string, bool) { return Label(app, "empty") }, "", true},
		{func() (string, bool) { return Label(app, "b") }, "", false},
		{func() (string, bool) { return Annotation(app, "b") }, "2", true},
		{func() (string, bool) { return Annotation(app, "a") }, "", false},
	} {
		if v, ok := c.get(); v != c.want || ok != c.wantFound {
			t.Errorf("got %q, %v; want %q, %v", v, ok, c.want, c.wantFound)
		}
	}
	app.Object["metadata"].(map[string]any)["labels"] = "not a map"
	if _, ok := Label(app, "a"); ok {
		t.Error("labels that are not a map yield a value")
	}
}

func TestKeepsAnnotation(t *testing.T) {
	const paused = "apps.open-cluster-management.io/pull-paused"
	set := func(preserved ...any) *unstructured.Unstructured {
		s := NewApplicationSet()
		if preserved != nil {
			s.Object["spec"] = map[string]any{"preservedFields": map[string]any{"annotations": preserved}}
		}
		return s
	}
	for _, c := range []struct {
		name, global string
		set          *unstructured.Unstructured
		key          string
		want         bool
	}{
		{"nothing preserved", "", set(), paused, false},
		{"the ApplicationSet's preservedFields", "", set("a", paused), paused, true},
		{"another annotation preserved", "", set("a"), paused, false},
		{"the controller's global list, spaced", "a, " + paused + " ,b", set(), paused, true},
		{"a prefix in the global list is not the key", "apps.open-cluster-management.io", set(), paused, false},
		{"Argo CD's refresh annotation, always", "", set(), RefreshAnnotation, true},
	} {
		if got := KeepsAnnotation(c.set, c.global, c.key); got != c.want {
			t.Errorf("%s: KeepsAnnotation = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestSupportedReleases(t *testing.T) {
	for version, want := range map[string]bool{
		"v3.4.0": true, "v3.4.7": true, "v3.5.1": true, "v3.5.7": true,
		"v3.3.9": false, "v3.6.1": false, "v2.14.3": false, "v4.0.0": false, "3.5.1": false, "v3.5": false, "": false,
	} {
		if got := Supported(version); got != want {
			t.Errorf("Supported(%q) = %v, want %v", version, got, want)
		}
	}
	for _, tt := range []struct {
		version      string
		major, minor int
		want         bool
	}{
		{"v3.5.1", 3, 5, true}, {"v3.4.7", 3, 5, false}, {"v3.10.0", 3, 5, true}, {"v4.0.0", 3, 5, true}, {"latest", 3, 5, false},
	} {
		if got := AtLeast(tt.version, tt.major, tt.minor); got != tt.want {
			t.Errorf("AtLeast(%q, %d, %d) = %v, want %v", tt.version, tt.major, tt.minor, got, tt.want)
		}
	}
}

func TestAutomatedSyncReadsTheEnabledField(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy map[string]any
		want   bool
	}{
		{"no sync policy", nil, false},
		{"no automated policy", map[string]any{"syncOptions": []any{"CreateNamespace=true"}}, false},
		{"automated", map[string]any{"automated": map[string]any{"prune": true}}, true},
		{"automated, enabled", map[string]any{"automated": map[string]any{"enabled": true}}, true},
		{"automated, turned off (Argo CD 3.4+ RollingSync)", map[string]any{"automated": map[string]any{"prune": true, "enabled": false}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := NewApplication()
			if tc.policy != nil {
				app.Object["spec"] = map[string]any{"syncPolicy": tc.policy}
			}
			if got := AutomatedSync(app); got != tc.want {
				t.Errorf("AutomatedSync = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStepOfAndMovedOn(t *testing.T) {
	g := NewWithT(t)
	set := func(entries ...map[string]any) *unstructured.Unstructured {
		u := NewApplicationSet()
		list := make([]any, 0, len(entries))
		for _, e := range entries {
			list = append(list, e)
		}
		g.Expect(unstructured.SetNestedSlice(u.Object, list, "status", "applicationStatus")).To(Succeed())
		return u
	}
	entry := func(app, status string) map[string]any {
		return map[string]any{"application": app, "status": status, "lastTransitionTime": "2026-11-23T10:00:00Z", "step": "1"}
	}
	before := set(entry("a", "Pending"), entry("b", "Pending"), entry("c", "Waiting"), entry("d", "Pending"), entry("e", "Progressing"))
	after := set(entry("a", "Progressing"), entry("b", "Pending"), entry("c", "Pending"), entry("e", "Healthy"))
	status, since := StepOf(before, "a")
	g.Expect(status).To(Equal(StepPending))
	g.Expect(since).To(Equal(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)))
	status, _ = StepOf(before, "x")
	g.Expect(status).To(BeEmpty(), "no entry")
	status, _ = StepOf(NewApplicationSet(), "a")
	g.Expect(status).To(BeEmpty(), "no status")
	g.Expect(MovedOn(before, after)).To(Equal([]string{"d", "e"}), "Pending or Progressing no longer, or gone from the status")
	g.Expect(MovedOn(after, after)).To(BeEmpty())
}
