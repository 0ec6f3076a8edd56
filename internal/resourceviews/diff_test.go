package resourceviews

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// object is the YAML doc as an object; nil for "".
func object(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	if doc == "" {
		return nil
	}
	o := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &o.Object); err != nil {
		t.Fatalf("test object: %v", err)
	}
	return o
}

// gitDeployment is a Deployment as Git holds it, with the tracking the managed Argo CD adds.
const gitDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {tier: web}
  annotations: {argocd.argoproj.io/tracking-id: "web:apps/Deployment:guestbook/web"}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports: [{containerPort: 80}]
`

// applied is doc as the cluster holds it once kubectl's client-side apply wrote it, with what
// the apiserver and the controllers add; edit changes the live object afterwards.
func applied(t *testing.T, doc string, edit func(live map[string]any)) *unstructured.Unstructured {
	t.Helper()
	cfg := object(t, doc)
	last, err := json.Marshal(cfg.Object)
	if err != nil {
		t.Fatal(err)
	}
	live := cfg.DeepCopy()
	live.SetNamespace("guestbook")
	live.SetUID("00000000-0000-4000-8000-000000000001")
	live.SetResourceVersion("4711")
	live.SetGeneration(1)
	ann := live.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann["kubectl.kubernetes.io/last-applied-configuration"] = string(last)
	ann["deployment.kubernetes.io/revision"] = "1"
	live.SetAnnotations(ann)
	live.Object["metadata"].(map[string]any)["managedFields"] = []any{map[string]any{"manager": "argocd-controller"}}
	if live.GetKind() == "Deployment" {
		spec := live.Object["spec"].(map[string]any)
		spec["revisionHistoryLimit"] = int64(10)
		spec["progressDeadlineSeconds"] = int64(600)
		spec["strategy"] = map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxSurge": "25%", "maxUnavailable": "25%"}}
		c := spec["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
		c["imagePullPolicy"] = "IfNotPresent"
		c["terminationMessagePath"] = "/dev/termination-log"
		c["ports"].([]any)[0].(map[string]any)["protocol"] = "TCP"
		live.Object["status"] = map[string]any{"replicas": int64(2), "readyReplicas": int64(2)}
	}
	if edit != nil {
		edit(live.Object)
	}
	return live
}

func decode(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	return m
}

// pruned is v without empty maps, at every depth: a patch may leave an emptied map or remove it.
func pruned(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			if m, ok := e.(map[string]any); ok && len(m) == 0 {
				continue
			}
			out[k] = pruned(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = pruned(e)
		}
		return out
	}
	return v
}

func spec(m map[string]any) map[string]any { return m["spec"].(map[string]any) }

func TestPredictFindsNoDifferenceOnAResourceAsApplied(t *testing.T) {
	live := applied(t, gitDeployment, nil)
	d, err := Predict(object(t, gitDeployment), live)
	if err != nil {
		t.Fatal(err)
	}
	if d.Modified || string(d.NormalizedLive) != string(d.PredictedLive) {
		t.Errorf("the Deployment as applied, with the apiserver's defaults, compares as modified:\nlive      %s\npredicted %s", d.NormalizedLive, d.PredictedLive)
	}
	got := decode(t, d.NormalizedLive)
	if _, ok := got["status"]; ok {
		t.Errorf("the normalized live state keeps the status, which Argo CD 3 compares never: %s", d.NormalizedLive)
	}
	if spec(got)["revisionHistoryLimit"] == nil {
		t.Errorf("the normalized live state lost a field only the apiserver wrote: %s", d.NormalizedLive)
	}
}

func TestPredictShowsWhatTheNextSyncChanges(t *testing.T) {
	for _, c := range []struct {
		name   string
		target string
		live   func(map[string]any)
		// want edits the normalized live state into the predicted one: the whole difference.
		want func(map[string]any)
	}{
		{
			name:   "Git changes the replicas",
			target: strings.Replace(gitDeployment, "replicas: 2", "replicas: 3", 1),
			want:   func(m map[string]any) { spec(m)["replicas"] = float64(3) },
		},
		{
			name:   "someone scaled the Deployment on the cluster",
			target: gitDeployment,
			live:   func(m map[string]any) { spec(m)["replicas"] = int64(5) },
			want:   func(m map[string]any) { spec(m)["replicas"] = float64(2) },
		},
		{
			name:   "Git drops a label",
			target: strings.Replace(gitDeployment, "labels: {tier: web}", "labels: {}", 1),
			want:   func(m map[string]any) { delete(m["metadata"].(map[string]any)["labels"].(map[string]any), "tier") },
		},
		{
			name:   "Git changes the image of a container",
			target: strings.Replace(gitDeployment, "nginx:1.27", "nginx:1.28", 1),
			want: func(m map[string]any) {
				spec(spec(m)["template"].(map[string]any))["containers"].([]any)[0].(map[string]any)["image"] = "nginx:1.28"
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := Predict(object(t, c.target), applied(t, gitDeployment, c.live))
			if err != nil {
				t.Fatal(err)
			}
			if !d.Modified {
				t.Fatalf("not modified:\nlive      %s\npredicted %s", d.NormalizedLive, d.PredictedLive)
			}
			want := decode(t, d.NormalizedLive)
			c.want(want)
			if got := decode(t, d.PredictedLive); !reflect.DeepEqual(pruned(got), pruned(want)) {
				t.Errorf("predicted:\n%s\nwant live with only that change:\n%s", d.PredictedLive, must(json.Marshal(want)))
			}
		})
	}
}

func TestPredictLeavesWhatOthersWroteOnTheCluster(t *testing.T) {
	live := applied(t, gitDeployment, func(m map[string]any) {
		m["metadata"].(map[string]any)["annotations"].(map[string]any)["ops.example.com/on-call"] = "set by hand"
	})
	d, err := Predict(object(t, gitDeployment), live)
	if err != nil {
		t.Fatal(err)
	}
	if d.Modified {
		t.Errorf("an annotation that neither Git nor the last apply holds compares as modified (apply leaves it):\n%s\n%s", d.NormalizedLive, d.PredictedLive)
	}
	if !strings.Contains(string(d.PredictedLive), "set by hand") {
		t.Errorf("the predicted state dropped the annotation set by hand: %s", d.PredictedLive)
	}
}

// A kind client-go does not know is merged as JSON: the fields the cluster added inside a list
// item are taken out before the patch is made, so that they do not show as a difference.
func TestPredictMergesAnUnknownKindAsJSON(t *testing.T) {
	const widget = `
apiVersion: example.com/v1
kind: Widget
metadata: {name: gear}
spec:
  size: 3
  parts: [{name: cog}]
`
	addDefaults := func(m map[string]any) {
		spec(m)["parts"].([]any)[0].(map[string]any)["weight"] = int64(7) // a webhook's default
		spec(m)["owner"] = "controller"
	}
	d, err := Predict(object(t, widget), applied(t, widget, addDefaults))
	if err != nil {
		t.Fatal(err)
	}
	if d.Modified {
		t.Errorf("the Widget as applied compares as modified:\n%s\n%s", d.NormalizedLive, d.PredictedLive)
	}
	d, err = Predict(object(t, strings.Replace(widget, "size: 3", "size: 4", 1)), applied(t, widget, addDefaults))
	if err != nil {
		t.Fatal(err)
	}
	want := decode(t, d.NormalizedLive)
	spec(want)["size"] = float64(4)
	if got := decode(t, d.PredictedLive); !d.Modified || !reflect.DeepEqual(got, want) {
		t.Errorf("predicted:\n%s\nwant live with size 4 only", d.PredictedLive)
	}
}

// With no last-applied configuration (server-side apply, or written by hand), only the fields
// the target holds are compared.
func TestPredictWithoutALastAppliedConfiguration(t *testing.T) {
	for _, annotation := range []string{"", "not JSON", `{"apiVersion":"v1","kind":"ConfigMap"}`} {
		live := applied(t, gitDeployment, func(m map[string]any) {
			ann := m["metadata"].(map[string]any)["annotations"].(map[string]any)
			if annotation == "" {
				delete(ann, "kubectl.kubernetes.io/last-applied-configuration")
			} else {
				ann["kubectl.kubernetes.io/last-applied-configuration"] = annotation // the cluster wrote it
			}
		})
		d, err := Predict(object(t, gitDeployment), live)
		if err != nil {
			t.Fatalf("last-applied %q: %v", annotation, err)
		}
		if d.Modified {
			t.Errorf("last-applied %q: compares as modified:\n%s\n%s", annotation, d.NormalizedLive, d.PredictedLive)
		}
		d, err = Predict(object(t, strings.Replace(gitDeployment, "replicas: 2", "replicas: 3", 1)), live)
		if err != nil || !d.Modified {
			t.Errorf("last-applied %q: a change of replicas is not seen (err %v)", annotation, err)
		}
	}
}

func TestPredictAResourceOnOneSideOnly(t *testing.T) {
	d, err := Predict(nil, applied(t, gitDeployment, nil))
	if err != nil || string(d.PredictedLive) != "null" || d.Modified || strings.Contains(string(d.NormalizedLive), `"status"`) {
		t.Errorf("live only: %+v, %v; want predicted null, not modified (Argo CD prunes it, if asked), no status", d, err)
	}
	d, err = Predict(object(t, gitDeployment), nil)
	if err != nil || string(d.NormalizedLive) != "null" || !d.Modified || decode(t, d.PredictedLive)["kind"] != "Deployment" {
		t.Errorf("target only: %+v, %v; want live null, the target predicted, modified", d, err)
	}
	d, err = Predict(nil, nil)
	if err != nil || string(d.NormalizedLive) != "null" || string(d.PredictedLive) != "null" || d.Modified {
		t.Errorf("neither: %+v, %v", d, err)
	}
}
