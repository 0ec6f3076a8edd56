package testenv

import (
	"encoding/json"
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/propagation"
)

// SetAgentStatus writes into w the status the OCM work agent reports for a work carrying the
// Application namespace/name: Applied and Available at generation appliedGeneration (none when
// 0), and the Application's status feedback values by name. Controller tests and the scale
// benchmark stand in for the agent with it.
//
// As the real agent does for a work that asks (a pending work, see propagation.ClaimOf), the
// feedback of an applied work also carries the Application's hub-application annotation and a UID,
// as created from the work's payload, unless values names them (an Application that was there
// before: give FeedbackManagedUID alone).
func SetAgentStatus(w *workv1.ManifestWork, appliedGeneration int64, namespace, name string, values map[string]string) {
	now := metav1.Now()
	if appliedGeneration > 0 && asksClaim(w) {
		values = maps.Clone(values)
		if values == nil {
			values = map[string]string{}
		}
		if _, ok := values[propagation.FeedbackManagedUID]; !ok {
			values[propagation.FeedbackManagedUID] = "uid-of-" + namespace + "-" + name
			values[propagation.FeedbackHubApplication] = payloadAnnotation(w, api.HubApplicationAnnotation)
		}
	}
	if appliedGeneration > 0 {
		w.Status.Conditions = []metav1.Condition{
			{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, Reason: "AppliedManifestWorkComplete", ObservedGeneration: appliedGeneration, LastTransitionTime: now},
			{Type: workv1.WorkAvailable, Status: metav1.ConditionTrue, Reason: "ResourcesAvailable", ObservedGeneration: appliedGeneration, LastTransitionTime: now},
		}
	}
	fv := make([]workv1.FeedbackValue, 0, len(values))
	for k, v := range values {
		value := workv1.FieldValue{Type: workv1.String, String: ptr.To(v)}
		if k == propagation.FeedbackResources || k == propagation.FeedbackConditions || k == propagation.FeedbackOperation {
			value = workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: ptr.To(v)}
		}
		fv = append(fv, workv1.FeedbackValue{Name: k, Value: value})
	}
	w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
		ResourceMeta:    workv1.ManifestResourceMeta{Group: argocd.Group, Version: "v1alpha1", Kind: "Application", Resource: "applications", Name: name, Namespace: namespace},
		StatusFeedbacks: workv1.StatusFeedbackResult{Values: fv},
		Conditions:      []metav1.Condition{{Type: workv1.ManifestApplied, Status: metav1.ConditionTrue, Reason: "Applied", LastTransitionTime: now}},
	}}
}

// asksClaim: the work's feedback rules ask whose its Application is.
func asksClaim(w *workv1.ManifestWork) bool {
	for _, c := range w.Spec.ManifestConfigs {
		for _, rule := range c.FeedbackRules {
			for _, p := range rule.JsonPaths {
				if p.Name == propagation.FeedbackHubApplication {
					return true
				}
			}
		}
	}
	return false
}

// payloadAnnotation is the annotation key of the work's Application manifest.
func payloadAnnotation(w *workv1.ManifestWork, key string) string {
	for _, m := range w.Spec.Workload.Manifests {
		var obj struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		if json.Unmarshal(m.Raw, &obj) == nil && obj.Kind == argocd.ApplicationGVK.Kind {
			return obj.Metadata.Annotations[key]
		}
	}
	return ""
}
