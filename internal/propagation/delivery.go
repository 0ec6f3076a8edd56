package propagation

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/argocd-pull/argocd-pull/internal/argocd"
)

// DeliveryBaselineAnnotation records, on a work that carries a sync (.operation) or refresh
// request, what the managed cluster had reported when the request was put in the work:
// "<operationState.startedAt>|<reconciledAt>". The request has been acted on when that changes.
const DeliveryBaselineAnnotation = "apps.open-cluster-management.io/pull-delivery-baseline"

// Requests says which requests a hub Application carries for the managed cluster's Argo CD.
type Requests struct {
	Sync, Refresh bool
}

// RequestsOf reads the sync and refresh requests of an Application (hub copy or payload).
func RequestsOf(app *unstructured.Unstructured) Requests {
	_, sync := app.Object["operation"]
	_, refresh := app.GetAnnotations()[argocd.RefreshAnnotation]
	return Requests{Sync: sync, Refresh: refresh}
}

// Any is true when there is a request.
func (r Requests) Any() bool { return r.Sync || r.Refresh }

// Baseline is what the managed cluster reported: the start of its last operation and its last
// reconciliation.
type Baseline struct {
	StartedAt, ReconciledAt string
}

func (b Baseline) String() string { return b.StartedAt + "|" + b.ReconciledAt }

// ParseBaseline reads a DeliveryBaselineAnnotation value.
func ParseBaseline(s string) (Baseline, bool) {
	started, reconciled, ok := strings.Cut(s, "|")
	return Baseline{StartedAt: started, ReconciledAt: reconciled}, ok
}

// Acknowledged says which of the requests the managed cluster has acted on since the baseline:
// a sync when a new operation started, a refresh when its Argo CD reconciled again.
func Acknowledged(requests Requests, baseline, now Baseline) Requests {
	return Requests{
		Sync:    requests.Sync && now.StartedAt != "" && now.StartedAt != baseline.StartedAt,
		Refresh: requests.Refresh && now.ReconciledAt != "" && now.ReconciledAt != baseline.ReconciledAt,
	}
}
