package testenv

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

// SetAgentStatus writes into w the status the OCM work agent reports for a work carrying the
// Application namespace/name: Applied and Available at generation appliedGeneration (none when
// 0), and the Application's status feedback values by name. Controller tests and the scale
// benchmark stand in for the agent with it.
//
// A pending work (manifestwork.ClaimOf) only reads its Application: unless values name its UID
// (FeedbackManagedUID: an Application is there, and values are its feedback), the agent reports
// it absent, with no feedback. The Application of a held work is there.
func SetAgentStatus(w *workv1.ManifestWork, appliedGeneration int64, namespace, name string, values map[string]string) {
	now := metav1.Now()
	_, there := values[manifestwork.FeedbackManagedUID]
	present := manifestwork.Held(w) || there
	if !present {
		values = nil
	}
	if appliedGeneration > 0 {
		w.Status.Conditions = AppliedConditions(appliedGeneration, now)
	}
	fv := make([]workv1.FeedbackValue, 0, len(values))
	for k, v := range values {
		value := workv1.FieldValue{Type: workv1.String, String: ptr.To(v)}
		if k == manifestwork.FeedbackResources || k == manifestwork.FeedbackConditions || k == manifestwork.FeedbackOperation {
			value = workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: ptr.To(v)}
		}
		fv = append(fv, workv1.FeedbackValue{Name: k, Value: value})
	}
	w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{ApplicationManifestStatus(namespace, name, fv, present, now)}
}

// AppliedConditions are the work conditions the OCM work agent reports once it applied generation:
// Applied and Available.
func AppliedConditions(generation int64, now metav1.Time) []metav1.Condition {
	return []metav1.Condition{
		{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, Reason: "AppliedManifestWorkComplete", ObservedGeneration: generation, LastTransitionTime: now},
		{Type: workv1.WorkAvailable, Status: metav1.ConditionTrue, Reason: "ResourcesAvailable", ObservedGeneration: generation, LastTransitionTime: now},
	}
}

// ApplicationManifestStatus is what the OCM work agent reports of a work's Application
// namespace/name: applied, available when present (else OCM's ResourceNotAvailable), and its
// status feedback values.
func ApplicationManifestStatus(namespace, name string, values []workv1.FeedbackValue, present bool, now metav1.Time) workv1.ManifestCondition {
	available := metav1.Condition{Type: workv1.ManifestAvailable, Status: metav1.ConditionTrue, Reason: "ResourceAvailable", LastTransitionTime: now}
	if !present {
		available = metav1.Condition{Type: workv1.ManifestAvailable, Status: metav1.ConditionFalse, Reason: "ResourceNotAvailable", LastTransitionTime: now}
	}
	return workv1.ManifestCondition{
		ResourceMeta:    workv1.ManifestResourceMeta{Group: argocd.Group, Version: "v1alpha1", Kind: "Application", Resource: "applications", Name: name, Namespace: namespace},
		StatusFeedbacks: workv1.StatusFeedbackResult{Values: values},
		Conditions:      []metav1.Condition{{Type: workv1.ManifestApplied, Status: metav1.ConditionTrue, Reason: "Applied", LastTransitionTime: now}, available},
	}
}

// OnCluster is what a managed cluster has of an Application a claim probe asks about: its UID,
// and its api.HubApplicationAnnotation ("" for none).
type OnCluster struct{ UID, HubApplication string }

// AnswerProbe writes into probe (manifestwork.DesiredProbe) the status the OCM work agent reports
// once it read every entry at the probe's generation: each entry absent (OCM's
// ResourceNotAvailable), or there, with the claim's feedback, when there ("<namespace>/<name>" on
// the cluster) holds it. Controller tests and the benchmarks' simulated agents answer with it.
func AnswerProbe(probe *workv1.ManifestWork, there map[string]OnCluster) {
	now := metav1.Now()
	probe.Status.Conditions = AppliedConditions(probe.Generation, now)
	probe.Status.ResourceStatus.Manifests = nil
	for _, e := range manifestwork.ProbeEntries(probe) {
		got, present := there[e.Key()]
		var values []workv1.FeedbackValue
		if present {
			values = append(values, workv1.FeedbackValue{Name: manifestwork.FeedbackManagedUID, Value: workv1.FieldValue{Type: workv1.String, String: ptr.To(got.UID)}})
			if got.HubApplication != "" {
				values = append(values, workv1.FeedbackValue{Name: manifestwork.FeedbackHubApplication, Value: workv1.FieldValue{Type: workv1.String, String: ptr.To(got.HubApplication)}})
			}
		}
		probe.Status.ResourceStatus.Manifests = append(probe.Status.ResourceStatus.Manifests, ApplicationManifestStatus(e.Namespace, e.Name, values, present, now))
	}
}

// AnswerProbes stands in for every cluster's work agent on the claim probes (what the controller
// tests and the install tests have no agent for): every interval until ctx ends, it answers each
// probe whose answer is not current or changed (AnswerProbe), with there's Applications of its
// cluster (there nil, or returning nil: none). A cluster for which there says false does not
// answer (its agent is down).
func AnswerProbes(ctx context.Context, c client.Client, interval time.Duration, there func(cluster string) (map[string]OnCluster, bool)) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		probes := &workv1.ManifestWorkList{}
		if err := c.List(ctx, probes, client.MatchingLabels{manifestwork.ProbeLabel: "true"}); err != nil {
			continue
		}
		for i := range probes.Items {
			p := &probes.Items[i]
			answered := p.DeepCopy()
			var have map[string]OnCluster
			if there != nil {
				var answers bool
				if have, answers = there(p.Namespace); !answers {
					continue
				}
			}
			AnswerProbe(answered, have)
			if manifestwork.ProbeCurrent(p) && sameAnswers(p, answered) {
				continue
			}
			_ = c.Status().Update(ctx, answered) // a conflict is answered at the next tick
		}
	}
}

// sameAnswers compares the answers of two probes, without their times.
func sameAnswers(a, b *workv1.ManifestWork) bool {
	if len(a.Status.ResourceStatus.Manifests) != len(b.Status.ResourceStatus.Manifests) {
		return false
	}
	for i, m := range a.Status.ResourceStatus.Manifests {
		n := b.Status.ResourceStatus.Manifests[i]
		mv, nv := manifestwork.FeedbackText(m.StatusFeedbacks.Values), manifestwork.FeedbackText(n.StatusFeedbacks.Values)
		if m.ResourceMeta != n.ResourceMeta || len(m.Conditions) != len(n.Conditions) ||
			mv[manifestwork.FeedbackManagedUID] != nv[manifestwork.FeedbackManagedUID] || mv[manifestwork.FeedbackHubApplication] != nv[manifestwork.FeedbackHubApplication] {
			return false
		}
		for j := range m.Conditions {
			if m.Conditions[j].Type != n.Conditions[j].Type || m.Conditions[j].Status != n.Conditions[j].Status || m.Conditions[j].Reason != n.Conditions[j].Reason {
				return false
			}
		}
	}
	return true
}
