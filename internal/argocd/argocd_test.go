package argocd

import "testing"

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
