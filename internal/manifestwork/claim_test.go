package manifestwork

import (
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
