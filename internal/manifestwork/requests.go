package manifestwork

import (
	"encoding/json"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
)

// A sync or refresh request changes the work (see delivery.go), so the work agent applies a new
// generation; until it has, the work is not applied at its generation. What the managed cluster's
// Application is, apart from the request, has not changed, though: its status still describes
// what the hub wants, and showing OutOfSync/Progressing meanwhile would show a state the managed
// cluster never had (argocd app get --refresh did). api.RequestsOnlyAnnotation records, on each
// write, the oldest generation whose content is the same as the new one's, and ContentApplied
// reads it.

// RequestsOnlySince is the api.RequestsOnlyAnnotation value of desired, written over existing
// (generation g becomes g+1 with the write): "" when desired changes more than the requests.
func RequestsOnlySince(existing, desired *workv1.ManifestWork) string {
	if existing.Generation == 0 || content(existing) != content(desired) {
		return ""
	}
	since := existing.Generation
	if g, n, ok := requestsOnly(existing); ok && n == existing.Generation {
		since = g
	}
	return fmt.Sprintf("%d/%d", since, existing.Generation+1)
}

// ContentApplied is true when the work agent applied the work's current generation, or an earlier
// one that differs from it by requests alone.
func ContentApplied(work *workv1.ManifestWork) bool {
	if AppliedAtGeneration(work) {
		return true
	}
	since, n, ok := requestsOnly(work)
	if !ok || n != work.Generation {
		return false // another write since (a pause, a freeze) changed more
	}
	c := meta.FindStatusCondition(work.Status.Conditions, workv1.WorkApplied)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration >= since && c.ObservedGeneration < n
}

func requestsOnly(work *workv1.ManifestWork) (since, generation int64, ok bool) {
	v := work.Annotations[api.RequestsOnlyAnnotation]
	if v == "" {
		return 0, 0, false
	}
	if _, err := fmt.Sscanf(v, "%d/%d", &since, &generation); err != nil || since <= 0 || since >= generation {
		return 0, 0, false
	}
	return since, generation, true
}

// content is a hash of the work without its requests (see contentOf).
func content(work *workv1.ManifestWork) string {
	hash, _ := specHash(contentOf(work))
	return hash
}

// contentOf is the work without its requests: the payload's .operation, request annotations and
// request to terminate, the delivery record, and the feedback asked only while a request travels.
func contentOf(work *workv1.ManifestWork) *workv1.ManifestWork {
	spec := work.Spec.DeepCopy()
	for i, m := range spec.Workload.Manifests {
		var obj map[string]any
		if json.Unmarshal(m.Raw, &obj) != nil || obj["kind"] != argocd.ApplicationGVK.Kind {
			continue
		}
		delete(obj, "operation")
		delete(obj, "status") // a request to terminate the operation (markTerminate)
		if annotations, ok, _ := unstructured.NestedMap(obj, "metadata", "annotations"); ok {
			for _, k := range requestAnnotations {
				delete(annotations, k)
			}
			_ = unstructured.SetNestedMap(obj, annotations, "metadata", "annotations")
		}
		spec.Workload.Manifests[i].Raw, _ = json.Marshal(obj)
	}
	if cfg := applicationConfig(spec); cfg != nil {
		for i, rule := range cfg.FeedbackRules {
			cfg.FeedbackRules[i].JsonPaths = slices.DeleteFunc(rule.JsonPaths, func(p workv1.JsonPath) bool { return p == reconciledAtPath })
		}
	}
	annotations := map[string]string{}
	for k, v := range work.Annotations {
		switch k {
		case api.DeliveriesAnnotation, api.SpecHashAnnotation, api.WrittenAtAnnotation, api.RequestsOnlyAnnotation:
		default:
			annotations[k] = v
		}
	}
	return &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: work.Name, Labels: work.Labels, Annotations: annotations}, Spec: *spec}
}
