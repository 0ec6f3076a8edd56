package manifestwork

import (
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
)

// HubApplicationOf is the hub Application a work points back to (its annotations), false when it
// names none. Works are found by their back-link, never by name.
func HubApplicationOf(work client.Object) (types.NamespacedName, bool) {
	a := work.GetAnnotations()
	key := types.NamespacedName{Namespace: a[api.HubApplicationNamespaceAnnotation], Name: a[api.HubApplicationNameAnnotation]}
	return key, key.Namespace != "" && key.Name != ""
}

// Oldest is the oldest of works that match and are not being deleted (see OlderThan), nil when
// none is: of two works that claim the same thing, the first keeps it.
func Oldest(works []workv1.ManifestWork, match func(*workv1.ManifestWork) bool) *workv1.ManifestWork {
	var out *workv1.ManifestWork
	for i := range works {
		w := &works[i]
		if !match(w) || !w.DeletionTimestamp.IsZero() {
			continue
		}
		if out == nil || OlderThan(w, out) {
			out = w
		}
	}
	return out
}

// OlderThan orders works by creation, then name.
func OlderThan(a, b *workv1.ManifestWork) bool {
	return a.CreationTimestamp.Before(&b.CreationTimestamp) ||
		a.CreationTimestamp.Equal(&b.CreationTimestamp) && a.Name < b.Name
}
