package manifestwork

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
)

// Freeze returns the work as it must be once a right its hub Application had is withdrawn
// (Revokes), or once the Application no longer describes it: the same managed-cluster
// Application, built from what the work already carries and never from the hub Application (whose
// edits are no longer accepted), with automated sync, any sync or refresh request removed, and the
// reason in the FrozenAnnotation of the work and of the Application. The managed Argo CD then
// keeps what it deployed but syncs nothing new: neither a hub edit nor a new Git commit reaches
// the cluster. Nothing is deleted; the next delivered work replaces the frozen one. It returns
// nil when the work is frozen already.
func Freeze(work *workv1.ManifestWork, reason string) (*workv1.ManifestWork, error) {
	out := work.DeepCopy()
	for i, m := range out.Spec.Workload.Manifests {
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(m.Raw); err != nil {
			return nil, fmt.Errorf("reading the manifests of ManifestWork %s/%s: %w", work.Namespace, work.Name, err)
		}
		if obj.GetKind() != argocd.ApplicationGVK.Kind {
			continue
		}
		delete(obj.Object, "operation")
		unstructured.RemoveNestedField(obj.Object, "spec", "syncPolicy", "automated")
		if policy, ok, _ := unstructured.NestedMap(obj.Object, "spec", "syncPolicy"); ok && len(policy) == 0 {
			// An empty syncPolicy reaches the managed cluster as null, which Argo CD's CRD refuses
			// (seen in the lab): the whole work would stop applying.
			unstructured.RemoveNestedField(obj.Object, "spec", "syncPolicy")
		}
		annotations := obj.GetAnnotations()
		for _, k := range []string{argocd.RefreshAnnotation, api.SyncDeliveryAnnotation, api.RefreshDeliveryAnnotation} {
			delete(annotations, k)
		}
		obj.SetAnnotations(withAnnotation(annotations, api.FrozenAnnotation, reason))
		raw, err := json.Marshal(obj.Object)
		if err != nil {
			return nil, fmt.Errorf("encoding the frozen Application %s: %w", obj.GetName(), err)
		}
		out.Spec.Workload.Manifests[i].Raw = raw
	}
	out.Annotations = withAnnotation(out.Annotations, api.FrozenAnnotation, reason)
	for _, k := range []string{api.DeliveriesAnnotation, api.SpecHashAnnotation, api.WrittenAtAnnotation} {
		delete(out.Annotations, k) // not part of the hash, as in DesiredWork
	}
	hash, err := specHash(out)
	if err != nil {
		return nil, err
	}
	if work.Annotations[api.FrozenAnnotation] == reason && work.Annotations[api.SpecHashAnnotation] == hash {
		return nil, nil
	}
	out.Annotations[api.SpecHashAnnotation] = hash
	return out, nil
}
