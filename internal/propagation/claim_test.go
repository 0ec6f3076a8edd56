package propagation

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/tenancy"
)

// reported returns work as the agent left it: the Application applied (at generation applied of
// the work, 0 for not applied), with the claim's feedback owner and uid ("" for none).
func reported(work *workv1.ManifestWork, applied int64, owner, uid string) *workv1.ManifestWork {
	w := work.DeepCopy()
	w.Generation = 2
	var values []workv1.FeedbackValue
	if owner != "" {
		values = append(values, workv1.FeedbackValue{Name: FeedbackHubApplication, Value: workv1.FieldValue{Type: workv1.String, String: ptr.To(owner)}})
	}
	if uid != "" {
		values = append(values, workv1.FeedbackValue{Name: FeedbackManagedUID, Value: workv1.FieldValue{Type: workv1.String, String: ptr.To(uid)}})
	}
	m := workv1.ManifestCondition{
		ResourceMeta:    workv1.ManifestResourceMeta{Group: argocd.Group, Kind: argocd.ApplicationGVK.Kind, Resource: "applications"},
		StatusFeedbacks: workv1.StatusFeedbackResult{Values: values},
	}
	if applied > 0 {
		m.Conditions = []metav1.Condition{{Type: workv1.ManifestApplied, Status: metav1.ConditionTrue}}
		w.Status.Conditions = []metav1.Condition{{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, ObservedGeneration: applied}}
	}
	w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{m}
	return w
}

func TestClaimAndRelease(t *testing.T) {
	g := NewWithT(t)
	pending, err := DesiredWork(pullApp(), nil, Target{Cluster: "cluster1", AppNamespace: "argocd"}, Deliveries{})
	g.Expect(err).NotTo(HaveOccurred())
	held, err := Hold(pending)
	g.Expect(err).NotTo(HaveOccurred())
	const ours = "argocd/guestbook-cluster1"

	tests := map[string]struct {
		work        *workv1.ManifestWork
		wantClaim   Claim
		wantRelease Release
		inFlight    bool
	}{
		"new, not applied yet: deleting it touches nothing there": {
			work: pending, wantClaim: ClaimPending, wantRelease: ReleaseNow, inFlight: true,
		},
		"applied, not reported yet: wait for the feedback": {
			work: reported(pending, 2, "", ""), wantClaim: ClaimPending, wantRelease: ReleaseWait, inFlight: true,
		},
		"created from this payload: hold it before deleting": {
			work: reported(pending, 2, ours, "u1"), wantClaim: ClaimOurs, wantRelease: ReleaseHoldFirst, inFlight: true,
		},
		"there before, without the annotation: foreign, left alone": {
			work: reported(pending, 2, "", "u1"), wantClaim: ClaimForeign, wantRelease: ReleaseNow, inFlight: true,
		},
		"there before, naming another hub Application: foreign": {
			work: reported(pending, 2, "argocd/other", "u1"), wantClaim: ClaimForeign, wantRelease: ReleaseNow, inFlight: true,
		},
		"not applied by the agent (its apply failed): nothing there to keep": {
			work: reported(pending, 0, "", ""), wantClaim: ClaimPending, wantRelease: ReleaseNow, inFlight: true,
		},
		"held a moment ago, not applied since: the Application is not the agent's yet": {
			work: reported(held, 1, ours, "u1"), wantClaim: ClaimOurs, wantRelease: ReleaseWait, inFlight: true,
		},
		"held and applied": {
			work: reported(held, 2, "", ""), wantClaim: ClaimOurs, wantRelease: ReleaseNow,
		},
		"held by an earlier release, not applied yet": {
			work: reported(held, 1, "", ""), wantClaim: ClaimOurs, wantRelease: ReleaseNow,
		},
		"a work without configurations (the earliest releases)": {
			work: &workv1.ManifestWork{}, wantClaim: ClaimOurs, wantRelease: ReleaseNow,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(ClaimOf(tt.work)).To(Equal(tt.wantClaim))
			g.Expect(ReleaseOf(tt.work)).To(Equal(tt.wantRelease))
			g.Expect(ClaimInFlight(tt.work)).To(Equal(tt.inFlight))
		})
	}
	g.Expect(ClaimOf(nil)).To(Equal(ClaimPending))
}

// An Application of the same name that was on the managed cluster before: the hub refuses with a
// reason, writes nothing, and once it is the hub's, holds the work.
func TestLadderClaims(t *testing.T) {
	g := NewWithT(t)
	facts := Facts{
		App:    pullApp(),
		Policy: Policy{ArgoCDNamespace: "argocd"},
		Cluster: &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster1", Labels: map[string]string{
			clusterv1beta2.ClusterSetLabel: "gitops",
		}}},
		Bindings:         tenancy.Bindings{Sets: []clusterv1beta2.ManagedClusterSet{{ObjectMeta: metav1.ObjectMeta{Name: "gitops"}}}},
		ClusterNamespace: true,
	}
	first, err := Ladder(facts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(first.Work).NotTo(BeNil())
	g.Expect(Held(first.Work)).To(BeFalse(), "the first delivery only creates")

	facts.Existing = reported(first.Work, 2, "", "u1")
	foreign, err := Ladder(facts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(foreign.Work).To(BeNil())
	g.Expect(foreign.Refusal.Reason).To(Equal(ReasonManagedAppExists))
	g.Expect(foreign.Refusal.Message).To(ContainSubstring("cluster cluster1 already has an Application argocd/guestbook-cluster1"))
	g.Expect(foreign.Refusal.Message).To(ContainSubstring(api.HubApplicationAnnotation + "=argocd/guestbook-cluster1"))
	g.Expect(Revokes(foreign.Refusal.Reason)).To(BeFalse(), "nothing to freeze: the work changes nothing there")

	facts.Existing = reported(first.Work, 2, "argocd/guestbook-cluster1", "u1")
	ours, err := Ladder(facts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(Held(ours.Work)).To(BeTrue())
	g.Expect(UpToDate(facts.Existing, ours.Work)).To(BeFalse(), "holding is one write")

	facts.Existing = reported(ours.Work, 2, "", "")
	again, err := Ladder(facts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(UpToDate(facts.Existing, again.Work)).To(BeTrue(), "a held work stays held: nothing to write")
}

// A pending work the hub froze still reaches the cluster once its Application is the hub's: a
// create-only work would never apply the frozen payload.
func TestFreezeHoldsAWorkWhoseApplicationIsTheHubs(t *testing.T) {
	g := NewWithT(t)
	app := pullApp(func(u *unstructured.Unstructured) {
		u.Object["spec"].(map[string]any)["syncPolicy"] = map[string]any{"automated": map[string]any{}}
	})
	pending, err := DesiredWork(app, nil, Target{Cluster: "cluster1", AppNamespace: "argocd"}, Deliveries{})
	g.Expect(err).NotTo(HaveOccurred())

	frozen, err := Freeze(reported(pending, 2, "argocd/guestbook-cluster1", "u1"), ReasonClusterNotBound)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(Held(frozen)).To(BeTrue())

	foreign, err := Freeze(reported(pending, 2, "", "u1"), ReasonClusterNotBound)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(Held(foreign)).To(BeFalse(), "another's Application is never overwritten, frozen or not")
}
