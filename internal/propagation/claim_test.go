package propagation

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/tenancy"
)

// reported returns work as the agent left it: its Application there (with the claim's feedback
// owner and uid, "" for none), absent, or not read yet.
func reported(work *workv1.ManifestWork, there string, owner, uid string) *workv1.ManifestWork {
	w := work.DeepCopy()
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
		Conditions:      []metav1.Condition{{Type: workv1.ManifestApplied, Status: metav1.ConditionTrue}},
	}
	switch there {
	case "there":
		m.Conditions = append(m.Conditions, metav1.Condition{Type: workv1.ManifestAvailable, Status: metav1.ConditionTrue, Reason: "ResourceAvailable"})
	case "absent":
		m.Conditions = append(m.Conditions, metav1.Condition{Type: workv1.ManifestAvailable, Status: metav1.ConditionFalse, Reason: "ResourceNotAvailable"})
	case "unreadable":
		m.Conditions = append(m.Conditions, metav1.Condition{Type: workv1.ManifestAvailable, Status: metav1.ConditionUnknown, Reason: "FetchingResourceFailed"})
	}
	w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{m}
	return w
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

// An Application of the same name that was on the managed cluster before: the hub refuses with a
// reason and writes nothing; once the name is free there, it holds the work.
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
	g.Expect(Held(first.Work)).To(BeFalse(), "the first delivery only reads")

	facts.Existing = reported(first.Work, "there", "", "u1")
	foreign, err := Ladder(facts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(foreign.Work).To(BeNil())
	g.Expect(foreign.Refusal.Reason).To(Equal(ReasonManagedAppExists))
	g.Expect(foreign.Refusal.Message).To(ContainSubstring("cluster cluster1 already has an Application argocd/guestbook-cluster1"))
	g.Expect(foreign.Refusal.Message).To(ContainSubstring(api.HubApplicationAnnotation + "=argocd/guestbook-cluster1"))
	g.Expect(Revokes(foreign.Refusal.Reason)).To(BeFalse(), "nothing to freeze: the work changes nothing there")

	facts.Existing = reported(first.Work, "absent", "", "")
	ours, err := Ladder(facts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(Held(ours.Work)).To(BeTrue())
	g.Expect(UpToDate(facts.Existing, ours.Work)).To(BeFalse(), "holding is one write")

	facts.Existing = reported(ours.Work, "there", "", "")
	again, err := Ladder(facts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(UpToDate(facts.Existing, again.Work)).To(BeTrue(), "a held work stays held: nothing to write")
}
