package propagation

import (
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/test/workfixture"
)

// The fixtures the ladder and the plan decide on (internal/test/workfixture).
var (
	pullApp    = workfixture.PullApp
	applied    = workfixture.Applied
	upstreamOf = workfixture.UpstreamOf
)

// reported returns work as the agent left it, with the claim's feedback owner and uid.
func reported(work *workv1.ManifestWork, there string, owner, uid string) *workv1.ManifestWork {
	return workfixture.Reported(work, there, map[string]string{manifestwork.FeedbackHubApplication: owner, manifestwork.FeedbackManagedUID: uid})
}
