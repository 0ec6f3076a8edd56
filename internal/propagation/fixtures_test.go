package propagation

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
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

// ladder is Ladder on f as the controller meets it once the cluster answered: an Application with
// no work yet finds its name free in the cluster's claim probe (see TestLadderClaims for the
// other answers).
func ladder(f Facts) (Verdict, error) {
	if f.Existing == nil && f.Probe == nil && f.App != nil {
		f.Probe = probeAnswering(f.App, nil)
	}
	return Ladder(f)
}

// probeAnswering is the claim probe of app's cluster asking about app, as the agent answered it:
// there says what the cluster has of it (nil: nothing).
func probeAnswering(app *unstructured.Unstructured, there *testenv.OnCluster) *workv1.ManifestWork {
	target, _, _ := manifestwork.ReadMarkers(app)
	e := manifestwork.ProbeEntry{Namespace: target.AppNamespace, Name: app.GetName(), Hub: types.NamespacedName{Namespace: app.GetNamespace(), Name: app.GetName()}}
	probe, err := manifestwork.DesiredProbe(target.Cluster, []manifestwork.ProbeEntry{e})
	if err != nil {
		panic(err)
	}
	probe.Generation = 1
	answers := map[string]testenv.OnCluster{}
	if there != nil {
		answers[e.Key()] = *there
	}
	testenv.AnswerProbe(probe, answers)
	return probe
}
