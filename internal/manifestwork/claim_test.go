package manifestwork

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/internal/test/workfixture"
)

// reported returns work as the agent left it (workfixture.Reported), with the claim's feedback
// owner and uid ("" for none).
func reported(work *workv1.ManifestWork, there string, owner, uid string) *workv1.ManifestWork {
	return workfixture.Reported(work, there, map[string]string{FeedbackHubApplication: owner, FeedbackManagedUID: uid})
}

func TestClaim(t *testing.T) {
	g := NewWithT(t)
	pending, err := DesiredWork(pullApp(), nil, Target{Cluster: "cluster1", AppNamespace: "argocd"}, Deliveries{})
	g.Expect(err).NotTo(HaveOccurred())
	held, err := Hold(pending)
	g.Expect(err).NotTo(HaveOccurred())
	const ours = "argocd/guestbook-cluster1"

	tests := map[string]struct {
		work *workv1.ManifestWork
		want Claim
	}{
		"new, not read yet":                                           {work: pending, want: ClaimPending},
		"read, not reported yet":                                      {work: reported(pending, "", "", ""), want: ClaimPending},
		"absent: the hub may create it":                               {work: reported(pending, "absent", "", ""), want: ClaimFree},
		"absent, with the feedback of the one that was there before":  {work: reported(pending, "absent", "", "u1"), want: ClaimFree},
		"there, made for this hub Application (a hub restored)":       {work: reported(pending, "there", ours, "u1"), want: ClaimOurs},
		"there before, without the annotation: foreign, left alone":   {work: reported(pending, "there", "", "u1"), want: ClaimForeign},
		"there before, naming another hub Application: foreign":       {work: reported(pending, "there", "argocd/other", "u1"), want: ClaimForeign},
		"there, its feedback not read yet":                            {work: reported(pending, "there", "", ""), want: ClaimPending},
		"the agent could not read it":                                 {work: reported(pending, "unreadable", "", "u1"), want: ClaimPending},
		"held":                                                        {work: reported(held, "there", "", ""), want: ClaimOurs},
		"a work without configurations (the earliest releases): held": {work: &workv1.ManifestWork{}, want: ClaimOurs},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(ClaimOf(tt.work)).To(Equal(tt.want))
		})
	}
	g.Expect(ClaimOf(nil)).To(Equal(ClaimPending))
}

// A pending work asks its cluster only whose the Application is: nothing else of it is read
// before the hold (appstatus reads no feedback of a pending work), a foreign Application's status
// is never asked for, and every write of a new fleet's first round (the create, the agent's
// answer) carries a work a third of the size (issue 73: the apiserver's CPU per write grows with
// the object). The hold asks for everything a delivered Application reports.
func TestAPendingWorkAsksOnlyWhoseItsApplicationIs(t *testing.T) {
	g := NewWithT(t)
	target := Target{Cluster: "cluster1", AppNamespace: "argocd"}
	for name, deliveries := range map[string]Deliveries{
		"at rest":        {},
		"with a sync":    {Sync: &Delivery{ID: "s1", Hash: "h"}},
		"with a refresh": {Refresh: &Delivery{ID: "r1", Hash: "h"}},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			pending, err := DesiredWork(pullApp(), nil, target, deliveries)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(feedbackNames(pending)).To(ConsistOf(FeedbackHubApplication, FeedbackManagedUID))
			g.Expect(AsksReconciledAt(pending)).To(BeFalse())
			held, err := Hold(pending)
			g.Expect(err).NotTo(HaveOccurred())
			want := FeedbackRulePaths()
			if deliveries.Sync == nil && deliveries.Refresh == nil {
				want = feedbackPaths
			}
			g.Expect(held.Spec.ManifestConfigs[0].FeedbackRules).To(Equal([]workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: want}}))
			g.Expect(AsksReconciledAt(held)).To(Equal(deliveries.Sync != nil || deliveries.Refresh != nil), "reconciledAt only while a request travels")
		})
	}
	pending, err := DesiredWork(pullApp(), nil, target, Deliveries{})
	g.Expect(err).NotTo(HaveOccurred())
	held, err := Hold(pending)
	g.Expect(err).NotTo(HaveOccurred())
	p, _ := json.Marshal(pending)
	h, _ := json.Marshal(held)
	g.Expect(len(p)).To(BeNumerically("<", len(h)/3), "the pending work:\n%s", p)
}
