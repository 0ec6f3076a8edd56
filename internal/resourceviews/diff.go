package resourceviews

import (
	"bytes"
	"encoding/json"
	"fmt"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/jsonmergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/scheme"
)

// Diff is one resource's comparison, as Argo CD's DIFF and `argocd app diff` show it: the live
// object and the live object as the managed Argo CD's next sync would leave it, both JSON with
// sorted keys and without status, so that they differ exactly where that sync would change
// something. "null" stands for no object.
type Diff struct {
	NormalizedLive []byte
	PredictedLive  []byte
	// Modified: the sync would change the live object.
	Modified bool
}

var jsonNull = []byte("null")

// Predict compares target (the resource as the Application's sources render it; nil when they do
// not) with live (as the cluster holds it; nil when it has none), the way Argo CD's default
// comparison does, whose sync is kubectl's client-side apply: the predicted object is live with
// the change from the configuration applied last (live's last-applied-configuration annotation)
// to target merged in, strategically for the kinds client-go knows and as a JSON merge for the
// others; with no such annotation, target is taken as applied last, so that only target's own
// fields can differ. Unlike Argo CD, no scheme defaults are added and no ignoreDifferences
// applied.
func Predict(target, live *unstructured.Unstructured) (Diff, error) {
	switch {
	case target == nil && live == nil:
		return Diff{NormalizedLive: jsonNull, PredictedLive: jsonNull}, nil
	case target == nil:
		l, err := sortedJSON(withoutStatus(live).Object)
		return Diff{NormalizedLive: l, PredictedLive: jsonNull}, err
	case live == nil:
		t, err := sortedJSON(withoutStatus(target).Object)
		return Diff{NormalizedLive: jsonNull, PredictedLive: t, Modified: true}, err
	}
	live, target = withoutStatus(live), withoutStatus(target)
	if orig := lastApplied(live); orig != nil {
		if d, err := merge(orig, target, live); err == nil {
			return d, nil
		}
		// As Argo CD: a three-way merge that fails falls back to the two-way one.
	}
	return merge(target, target, live)
}

// merge is live with the change from orig to target merged in (see Predict).
func merge(orig, target, live *unstructured.Unstructured) (Diff, error) {
	orig, config := withoutNamespace(orig), withoutNamespace(target)
	origJSON, err := json.Marshal(orig.Object)
	if err != nil {
		return Diff{}, err
	}
	configJSON, err := json.Marshal(config.Object)
	if err != nil {
		return Diff{}, err
	}
	liveJSON, err := json.Marshal(live.Object)
	if err != nil {
		return Diff{}, err
	}
	var predicted []byte
	if typed, err := scheme.Scheme.New(orig.GroupVersionKind()); err == nil {
		meta, err := strategicpatch.NewPatchMetaFromStruct(typed)
		if err != nil {
			return Diff{}, err
		}
		current := liveJSON
		if gk := orig.GroupVersionKind().GroupKind(); gk.Group == "apps" && gk.Kind == "StatefulSet" {
			// The apiserver defaults fields inside volumeClaimTemplates that a client cannot
			// reproduce: the patch is made against live's templates cut to the applied fields.
			if current, err = json.Marshal(trimmedClaimTemplates(orig, live).Object); err != nil {
				return Diff{}, err
			}
		}
		patch, err := strategicpatch.CreateThreeWayMergePatch(origJSON, configJSON, current, meta, true)
		if err != nil {
			return Diff{}, fmt.Errorf("the three-way patch of %s %s: %w", live.GetKind(), live.GetName(), err)
		}
		if predicted, err = strategicpatch.StrategicMergePatchUsingLookupPatchMeta(liveJSON, patch, meta); err != nil {
			return Diff{}, fmt.Errorf("applying the patch of %s %s: %w", live.GetKind(), live.GetName(), err)
		}
	} else {
		// The fields the apiserver or another writer added are taken out before the patch is
		// made, or a JSON merge patch would replace each list that holds one.
		current, err := json.Marshal(keepFields(orig.Object, live.Object))
		if err != nil {
			return Diff{}, err
		}
		patch, err := jsonmergepatch.CreateThreeWayJSONMergePatch(origJSON, configJSON, current)
		if err != nil {
			return Diff{}, fmt.Errorf("the three-way patch of %s %s: %w", live.GetKind(), live.GetName(), err)
		}
		if predicted, err = jsonpatch.MergePatch(liveJSON, patch); err != nil {
			return Diff{}, fmt.Errorf("applying the patch of %s %s: %w", live.GetKind(), live.GetName(), err)
		}
	}
	var p map[string]any
	if err := json.Unmarshal(predicted, &p); err != nil {
		return Diff{}, err
	}
	if predicted, err = sortedJSON(p); err != nil {
		return Diff{}, err
	}
	normalized, err := sortedJSON(live.Object)
	if err != nil {
		return Diff{}, err
	}
	return Diff{NormalizedLive: normalized, PredictedLive: predicted, Modified: !bytes.Equal(normalized, predicted)}, nil
}

// sortedJSON is o as JSON, its keys sorted (encoding/json sorts a map's keys).
func sortedJSON(o map[string]any) ([]byte, error) { return json.Marshal(o) }

// lastApplied is the configuration kubectl's client-side apply left on live; nil when none, or
// when it is not an object of live's kind (the cluster wrote it: the comparison is then two-way,
// as Argo CD's is when it cannot read it).
func lastApplied(live *unstructured.Unstructured) *unstructured.Unstructured {
	s, ok := live.GetAnnotations()[corev1.LastAppliedConfigAnnotation]
	if !ok {
		return nil
	}
	o := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(s), &o.Object); err != nil || o.Object == nil || o.GroupVersionKind() != live.GroupVersionKind() {
		return nil
	}
	return o
}

// withoutStatus is o without its status, which Argo CD 3 leaves out of every comparison
// (ignoreResourceStatusField: all).
func withoutStatus(o *unstructured.Unstructured) *unstructured.Unstructured {
	if _, ok := o.Object["status"]; !ok {
		return o
	}
	o = o.DeepCopy()
	delete(o.Object, "status")
	return o
}

// withoutNamespace is o without metadata.namespace and without an empty annotations map: live
// holds its namespace where the configuration may not say it, a difference nobody asked for.
func withoutNamespace(o *unstructured.Unstructured) *unstructured.Unstructured {
	o = o.DeepCopy()
	if m, ok := o.Object["metadata"].(map[string]any); ok {
		delete(m, "namespace")
		if a, ok := m["annotations"].(map[string]any); m["annotations"] == nil || ok && len(a) == 0 {
			delete(m, "annotations")
		}
	}
	return o
}

// trimmedClaimTemplates is live with its spec.volumeClaimTemplates cut to the fields of orig's.
func trimmedClaimTemplates(orig, live *unstructured.Unstructured) *unstructured.Unstructured {
	o, ok, _ := unstructured.NestedSlice(orig.Object, "spec", "volumeClaimTemplates")
	if !ok {
		return live
	}
	l, ok, _ := unstructured.NestedSlice(live.Object, "spec", "volumeClaimTemplates")
	if !ok {
		return live
	}
	live = live.DeepCopy()
	_ = unstructured.SetNestedSlice(live.Object, keepListFields(o, l), "spec", "volumeClaimTemplates")
	return live
}

// keepFields is live cut to the keys config has, at every depth; a list's items are cut by the
// config's item at the same index, and items past config's are kept whole.
func keepFields(config, live map[string]any) map[string]any {
	out := make(map[string]any, len(config))
	for k, c := range config {
		l, ok := live[k]
		if !ok {
			continue
		}
		out[k] = keepValue(c, l)
	}
	return out
}

func keepValue(config, live any) any {
	switch c := config.(type) {
	case map[string]any:
		if l, ok := live.(map[string]any); ok {
			return keepFields(c, l)
		}
	case []any:
		if l, ok := live.([]any); ok {
			return keepListFields(c, l)
		}
	}
	return live
}

func keepListFields(config, live []any) []any {
	out := make([]any, 0, len(live))
	for i, l := range live {
		if i < len(config) && l != nil {
			l = keepValue(config[i], l)
		}
		out = append(out, l)
	}
	return out
}
