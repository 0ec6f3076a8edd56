package resourceviews

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/argocd-pull/argocd-pull/internal/appstatus"
	"github.com/argocd-pull/argocd-pull/internal/resourcetree"
)

// ResourceDiff is Argo CD's ResourceDiff (pkg/apis/application/v1alpha1): one resource of
// app|managed-resources|<app>, what the hub's API server answers ManagedResources with (the UI's
// resource panel and DIFF, `argocd app diff`, `argocd app manifests --source live`). Each state
// is a JSON document, "null" for none.
type ResourceDiff struct {
	Group               string `json:"group,omitempty"`
	Kind                string `json:"kind,omitempty"`
	Namespace           string `json:"namespace,omitempty"`
	Name                string `json:"name,omitempty"`
	TargetState         string `json:"targetState,omitempty"`
	LiveState           string `json:"liveState,omitempty"`
	Hook                bool   `json:"hook,omitempty"`
	NormalizedLiveState string `json:"normalizedLiveState,omitempty"`
	PredictedLiveState  string `json:"predictedLiveState,omitempty"`
	ResourceVersion     string `json:"resourceVersion,omitempty"`
	Modified            bool   `json:"modified,omitempty"`
}

// Caps on the managed resources of one Application: MaxItemSize bytes for the states of one
// resource, MaxManagedSize for all, JSON before compression. A resource over them keeps its item
// without states, which every reader takes as nothing to show.
const (
	MaxItemSize    = 512 * 1024
	MaxManagedSize = 8 << 20
)

// Tracking metadata the managed Argo CD writes on what it applies, with its own instance name:
// the hub renders another (its own namespace and name), so a target takes the live object's.
var (
	trackingAnnotations = []string{"argocd.argoproj.io/tracking-id", "argocd.argoproj.io/installation-id"}
	trackingLabels      = []string{"app.kubernetes.io/instance"}
)

// Sources are what the managed resources of one Application are made of.
type Sources struct {
	// Listed is the hub Application's status.resources (what its cluster compared).
	Listed []any
	// Live are the listed resources the cluster holds, as read; Unread those it was not asked
	// for or would not give (Secrets, a kind outside the read-only account's rights, over the
	// limits). A listed resource in neither is missing on the cluster.
	Live   map[resourcetree.Ref]*unstructured.Unstructured
	Unread map[resourcetree.Ref]bool
	// Targets are the Application's sources rendered at the revisions its cluster reports; nil
	// when they could not be had (then no item carries a comparison, only the live state).
	Targets []*unstructured.Unstructured
	// Namespace is the Application's destination namespace, where a target that names none goes.
	Namespace string
}

// Managed is the managed resources of one Application, with what was left out.
type Managed struct {
	Items []ResourceDiff
	// Left counts the resources that keep no states (over the caps, or not comparable); Why says
	// the first.
	Left int
	Why  string
}

// ManagedResources are the items of app|managed-resources|<app>, one per listed resource but
// hooks, in the order Argo CD writes them (group/kind/namespace/name). Only the live states come
// from the cluster, each as it was read, without managedFields; a Secret, which the read-only
// account never reads, keeps no states at all, and neither does a resource that was not read: the
// readers then show nothing for it rather than a difference that is not there. Without targets,
// items carry the live state alone: the live manifest shows, and no comparison is claimed.
func ManagedResources(s Sources) Managed {
	var out Managed
	leave := func(id resourcetree.Ref, why string) {
		if out.Left++; out.Left == 1 {
			out.Why = fmt.Sprintf("%s %s/%s: %s", id.Kind, id.Namespace, id.Name, why)
		}
	}
	targets := map[resourcetree.Ref]*unstructured.Unstructured{}
	for _, t := range s.Targets {
		if t == nil {
			continue
		}
		id := resourcetree.Ref{Group: t.GroupVersionKind().Group, Kind: t.GetKind(), Namespace: t.GetNamespace(), Name: t.GetName()}
		targets[id] = t
	}
	target := func(id resourcetree.Ref) *unstructured.Unstructured {
		if t, ok := targets[id]; ok {
			return t
		}
		if id.Namespace == s.Namespace {
			// Rendered without a namespace: the managed Argo CD puts it in the destination's.
			return targets[resourcetree.Ref{Group: id.Group, Kind: id.Kind, Name: id.Name}]
		}
		return nil
	}
	size := 0
	seen := map[resourcetree.Ref]bool{}
	for _, entry := range s.Listed {
		item, ok := entry.(map[string]any)
		if !ok || appstatus.InvalidResource(item) != "" {
			continue // the tree leaves it out too
		}
		if hook, _ := item["hook"].(bool); hook {
			continue
		}
		str := func(k string) string { v, _ := item[k].(string); return v }
		id := resourcetree.Ref{Group: str("group"), Kind: str("kind"), Namespace: str("namespace"), Name: str("name")}
		if seen[id] {
			continue
		}
		seen[id] = true
		d := ResourceDiff{Group: id.Group, Kind: id.Kind, Namespace: id.Namespace, Name: id.Name}
		full, why := states(id, s.Live[id], s.Unread[id], target(id), s.Targets != nil)
		n := full.size()
		switch {
		case why != "":
			leave(id, why)
		case n > MaxItemSize:
			leave(id, fmt.Sprintf("its states are %d bytes, over the cap of %d", n, MaxItemSize))
		case size+n > MaxManagedSize:
			leave(id, fmt.Sprintf("the managed resources reach their cap of %d bytes", MaxManagedSize))
		default:
			d = full
			size += n
		}
		if d.LiveState == "" && d.TargetState == "" {
			d.LiveState, d.NormalizedLiveState, d.PredictedLiveState, d.TargetState = "null", "null", "null", "null"
		}
		out.Items = append(out.Items, d)
	}
	sortDiffs(out.Items)
	return out
}

// states is the item of the resource id, its live object live (nil: missing or unread), its
// target (nil: none); why says why it keeps none.
func states(id resourcetree.Ref, live *unstructured.Unstructured, unread bool, target *unstructured.Unstructured, compared bool) (ResourceDiff, string) {
	d := ResourceDiff{Group: id.Group, Kind: id.Kind, Namespace: id.Namespace, Name: id.Name}
	switch {
	case id.Group == "" && id.Kind == "Secret":
		return d, "" // never read, and Git's data is not for the hub's cache
	case unread:
		return d, ""
	case live != nil && (live.GetKind() != id.Kind || live.GetName() != id.Name || live.GetNamespace() != id.Namespace):
		return d, "the cluster answered with another object"
	}
	if live != nil {
		live = live.DeepCopy()
		unstructured.RemoveNestedField(live.Object, "metadata", "managedFields")
		data, err := json.Marshal(live.Object)
		if err != nil {
			return d, err.Error()
		}
		d.LiveState, d.ResourceVersion = string(data), live.GetResourceVersion()
	} else {
		d.LiveState = "null"
	}
	if !compared {
		return d, ""
	}
	if target != nil {
		target = tracked(target, live)
		data, err := json.Marshal(target.Object)
		if err != nil {
			return d, err.Error()
		}
		d.TargetState = string(data)
	} else {
		d.TargetState = "null"
	}
	diff, err := Predict(target, live)
	if err != nil {
		return d, err.Error()
	}
	d.NormalizedLiveState, d.PredictedLiveState, d.Modified = string(diff.NormalizedLive), string(diff.PredictedLive), diff.Modified
	return d, ""
}

// tracked is target with the managed Argo CD's tracking metadata as live carries it (none when
// live carries none).
func tracked(target, live *unstructured.Unstructured) *unstructured.Unstructured {
	target = target.DeepCopy()
	var liveAnn, liveLabels map[string]string
	if live != nil {
		liveAnn, liveLabels = live.GetAnnotations(), live.GetLabels()
	}
	ann, labels := target.GetAnnotations(), target.GetLabels()
	// An empty map Git holds stays; one emptied here goes, as if the hub had not rendered it.
	emptyAnn, emptyLabels := ann != nil && len(ann) == 0, labels != nil && len(labels) == 0
	for _, k := range trackingAnnotations {
		ann = copyKey(ann, liveAnn, k)
	}
	for _, k := range trackingLabels {
		labels = copyKey(labels, liveLabels, k)
	}
	if len(ann) == 0 && !emptyAnn {
		ann = nil
	}
	if len(labels) == 0 && !emptyLabels {
		labels = nil
	}
	target.SetAnnotations(ann)
	target.SetLabels(labels)
	return target
}

// copyKey sets to[k] to from[k], or removes it when from has none.
func copyKey(to, from map[string]string, k string) map[string]string {
	v, ok := from[k]
	switch {
	case ok && to == nil:
		to = map[string]string{k: v}
	case ok:
		to[k] = v
	default:
		delete(to, k)
	}
	return to
}

func (d ResourceDiff) size() int {
	return len(d.LiveState) + len(d.TargetState) + len(d.NormalizedLiveState) + len(d.PredictedLiveState)
}

// sortDiffs orders items as Argo CD's cache does (SetAppManagedResources: by group/kind/namespace/name).
func sortDiffs(items []ResourceDiff) {
	key := func(d ResourceDiff) string { return strings.Join([]string{d.Group, d.Kind, d.Namespace, d.Name}, "/") }
	slices.SortFunc(items, func(a, b ResourceDiff) int { return strings.Compare(key(a), key(b)) })
}

// Message says what ManagedResources left out, "" when nothing.
func (m Managed) Message() string {
	if m.Left == 0 {
		return ""
	}
	return fmt.Sprintf("the managed resources keep no states for %d resources (first: %s)", m.Left, m.Why)
}
