package manifestwork

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
)

func TestPauseOf(t *testing.T) {
	marked := func(v string) *unstructured.Unstructured {
		u := argocd.NewApplicationSet()
		u.SetName("fleet")
		if v != "-" {
			u.SetAnnotations(map[string]string{api.PausedAnnotation: v})
		}
		return u
	}
	tests := map[string]struct {
		app, appSet *unstructured.Unstructured
		global      string
		want        Pausing
		paused      bool
	}{
		"nothing paused":               {app: marked("-"), appSet: marked("-")},
		"the Application":              {app: marked("true"), want: Pausing{Scope: "Application", Reason: "true"}, paused: true},
		"a reason is kept":             {app: marked("incident 42"), want: Pausing{Scope: "Application", Reason: "incident 42"}, paused: true},
		"false does not pause":         {app: marked("false"), appSet: marked("")},
		"a typo pauses (fails closed)": {app: marked("ture"), want: Pausing{Scope: "Application", Reason: "ture"}, paused: true},
		"the ApplicationSet":           {app: marked("-"), appSet: marked("true"), want: Pausing{Scope: "ApplicationSet fleet", Reason: "true"}, paused: true},
		"the controller":               {app: marked("-"), global: "migration", want: Pausing{Scope: "controller", Reason: "migration"}, paused: true},
		"a tenant's false cannot lift the operator's pause": {
			app: marked("false"), appSet: marked("false"), global: "migration", want: Pausing{Scope: "controller", Reason: "migration"}, paused: true,
		},
		"nor the ApplicationSet's": {
			app: marked("false"), appSet: marked("frozen"), want: Pausing{Scope: "ApplicationSet fleet", Reason: "frozen"}, paused: true,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got, paused := PauseOf(tt.app, tt.appSet, tt.global)
			g.Expect(paused).To(Equal(tt.paused))
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestPauseAndRelease(t *testing.T) {
	g := NewWithT(t)
	pending, err := DesiredWork(pullApp(), nil, Target{Cluster: "cluster1", AppNamespace: "argocd"}, Deliveries{})
	g.Expect(err).NotTo(HaveOccurred())
	held, err := Hold(pending)
	g.Expect(err).NotTo(HaveOccurred())

	none, err := Pause(pending, "x")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(none).To(BeNil(), "a pending work delivered nothing: it stays as it is")
	g.Expect(DeleteNow(pending)).To(BeTrue())

	paused, err := Pause(held, "incident")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(Paused(paused)).To(BeTrue())
	g.Expect(Held(paused)).To(BeTrue(), "a paused work is not pending: resuming holds it, it never waits for a claim")
	g.Expect(ClaimOf(paused)).To(Equal(ClaimOurs))
	g.Expect(paused.Spec.ManifestConfigs[0].UpdateStrategy.Type).To(Equal(workv1.UpdateStrategyTypeReadOnly))
	g.Expect(paused.Spec.ManifestConfigs[0].FeedbackRules).To(Equal(held.Spec.ManifestConfigs[0].FeedbackRules), "status keeps flowing")
	g.Expect(paused.Spec.Workload).To(Equal(held.Spec.Workload))
	g.Expect(UpToDate(held, paused)).To(BeFalse(), "pausing is one write")
	again, err := Pause(paused, "incident")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(BeNil(), "and only one")
	other, err := Pause(paused, "another reason")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(other.Annotations).To(HaveKeyWithValue(api.PausedAnnotation, "another reason"))
	g.Expect(DeleteNow(paused)).To(BeFalse(), "a paused work is released before it goes")

	released, err := Release(paused)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(Released(released)).To(BeTrue())
	g.Expect(released.Spec.ManifestConfigs[0].UpdateStrategy.Type).To(Equal(workv1.UpdateStrategyTypeCreateOnly),
		"the agent changes nothing of what runs, and removes its owner from the Application")
	g.Expect(released.Spec.DeleteOption.SelectivelyOrphan.OrphaningRules).To(ConsistOf(workv1.OrphaningRule{
		Group: "argoproj.io", Resource: "applications", Name: "guestbook-cluster1", Namespace: "argocd"}))
	nothing, err := Pause(released, "incident")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(nothing).To(BeNil(), "a released work is never paused again")

	released.Generation = 3
	released.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
		ResourceMeta: workv1.ManifestResourceMeta{Group: argocd.Group, Kind: argocd.ApplicationGVK.Kind},
		Conditions:   []metav1.Condition{{Type: workv1.ManifestApplied, Status: metav1.ConditionTrue}},
	}}
	released.Status.Conditions = []metav1.Condition{{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, ObservedGeneration: 2}}
	g.Expect(DeleteNow(released)).To(BeFalse(), "the agent has not applied the release yet: the Application is still its")
	released.Status.Conditions[0].ObservedGeneration = 3
	g.Expect(DeleteNow(released)).To(BeTrue())
}
