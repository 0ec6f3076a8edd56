// Package workfixture builds the hub Applications and ManifestWorks the pure tests of
// internal/manifestwork and internal/propagation decide on: a pull-model Application, a work as
// the agent reports it, an upstream controller's work.
package workfixture

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/test/upstreamwork"
)

// PullApp is the pull-model Application guestbook-cluster1 of the Argo CD namespace for cluster1,
// as the hub holds it, changed by mutate.
func PullApp(mutate ...func(*unstructured.Unstructured)) *unstructured.Unstructured {
	app := argocd.NewApplication()
	app.SetName("guestbook-cluster1")
	app.SetNamespace("argocd")
	app.SetLabels(map[string]string{api.PullLabel: "true", "team": "web"})
	app.SetAnnotations(map[string]string{
		api.ClusterAnnotation:          "cluster1",
		argocd.SkipReconcileAnnotation: "true",
		"note":                         "kept",
	})
	app.SetFinalizers([]string{argocd.ResourcesFinalizer})
	app.SetResourceVersion("42")
	app.SetUID("uid-1")
	app.Object["spec"] = map[string]any{
		"project":     "default",
		"source":      map[string]any{"repoURL": "https://git.example/repo", "path": "guestbook", "targetRevision": "main"},
		"destination": map[string]any{"server": "https://cluster1-control-plane:6443", "namespace": "guestbook"},
		"syncPolicy":  map[string]any{"automated": map[string]any{"prune": true}},
	}
	app.Object["status"] = map[string]any{"health": map[string]any{"status": "Healthy"}}
	for _, m := range mutate {
		m(app)
	}
	return app
}

// Applied returns work as the agent reports it once applied at its generation: the work Applied,
// its Application applied and available.
func Applied(work *workv1.ManifestWork) *workv1.ManifestWork {
	out := work.DeepCopy()
	out.Status.Conditions = []metav1.Condition{{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, ObservedGeneration: out.Generation}}
	out.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
		ResourceMeta: workv1.ManifestResourceMeta{Group: argocd.Group, Kind: "Application", Resource: "applications"},
		Conditions: []metav1.Condition{
			{Type: workv1.ManifestApplied, Status: metav1.ConditionTrue},
			{Type: workv1.ManifestAvailable, Status: metav1.ConditionTrue},
		},
	}}
	return out
}

// Reported returns work as the agent left it: its Application there, absent, or unreadable ("" for
// not reported yet), with the feedback values given by name.
func Reported(work *workv1.ManifestWork, there string, feedback map[string]string) *workv1.ManifestWork {
	w := work.DeepCopy()
	var values []workv1.FeedbackValue
	for _, name := range slices.Sorted(maps.Keys(feedback)) {
		if value := feedback[name]; value != "" {
			values = append(values, workv1.FeedbackValue{Name: name, Value: workv1.FieldValue{Type: workv1.String, String: ptr.To(value)}})
		}
	}
	m := workv1.ManifestCondition{
		ResourceMeta:    workv1.ManifestResourceMeta{Group: argocd.Group, Kind: argocd.ApplicationGVK.Kind, Resource: "applications"},
		StatusFeedbacks: workv1.StatusFeedbackResult{Values: values},
		Conditions:      []metav1.Condition{{Type: workv1.ManifestApplied, Status: metav1.ConditionTrue}},
	}
	switch there {
	case "there":
		m.Conditions = append(m.Conditions, metav1.Condition{Type: workv1.ManifestAvailable, Status: metav1.ConditionTrue, Reason: "ResourceAvailable"})
	case "absent":
		m.Conditions = append(m.Conditions, metav1.Condition{Type: workv1.ManifestAvailable, Status: metav1.ConditionFalse, Reason: "ResourceNotAvailable"})
	case "unreadable":
		m.Conditions = append(m.Conditions, metav1.Condition{Type: workv1.ManifestAvailable, Status: metav1.ConditionUnknown, Reason: "FetchingResourceFailed"})
	}
	w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{m}
	return w
}

// UpstreamOf is the work writer wrote for app, as the apiserver holds it: a UID, generation 1.
func UpstreamOf(t *testing.T, writer upstreamwork.Writer, app *unstructured.Unstructured, appSet string) *workv1.ManifestWork {
	t.Helper()
	w, err := upstreamwork.Work(writer, app, nil, appSet)
	if err != nil {
		t.Fatal(err)
	}
	w.UID, w.Generation = types.UID("upstream-uid-1"), 1
	return w
}

// Payload decodes manifest i of w.
func Payload(t testing.TB, w *workv1.ManifestWork, i int) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(w.Spec.Workload.Manifests[i].Raw, &u.Object); err != nil {
		t.Fatalf("decoding manifest %d of %s: %v", i, w.Name, err)
	}
	return u
}
