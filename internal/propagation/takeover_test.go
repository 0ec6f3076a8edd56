package propagation

import (
	"testing"

	. "github.com/onsi/gomega"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/tenancy"
	"github.com/argocd-pull/argocd-pull/internal/test/upstreamwork"
)

func TestTheLadderAdoptsOnlyWhenAllowedAndEverythingElsePasses(t *testing.T) {
	cluster := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster1", Labels: map[string]string{clusterv1beta2.ClusterSetLabel: "gitops"}}}
	bound := tenancy.Bindings{Sets: []clusterv1beta2.ManagedClusterSet{{ObjectMeta: metav1.ObjectMeta{Name: "gitops"}}}}
	app := pullApp()
	upstream := upstreamOf(t, upstreamwork.RHACM, app, "")
	facts := func(mutate func(*Facts)) Facts {
		f := Facts{App: app, Policy: Policy{ArgoCDNamespace: "argocd", PullNamespaces: []string{"argocd", "team-a"}, AdoptUpstream: true},
			Cluster: cluster, Bindings: bound, ClusterNamespace: true, Upstream: upstream, NewDeliveryID: func() string { return "d1" }}
		if mutate != nil {
			mutate(&f)
		}
		return f
	}

	t.Run("adopted: held at once, the upstream work recorded", func(t *testing.T) {
		g := NewWithT(t)
		v, err := ladder(facts(nil))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(v.Refusal).To(BeNil())
		g.Expect(manifestwork.Held(v.Work)).To(BeTrue(), "no pending claim: the upstream work names this hub Application")
		g.Expect(v.Work.Annotations).To(HaveKeyWithValue(api.AdoptingAnnotation, upstream.Name+" upstream-uid-1 1"))
		g.Expect(v.Work.Annotations[api.SpecHashAnnotation]).NotTo(BeEmpty())

		// The agent reports the Application present without argocd-pull's annotation: adopted,
		// not refused as a stranger's, and the mark stays as first written.
		existing := applied(v.Work)
		existing.Annotations[api.AdoptingAnnotation] = upstream.Name + " upstream-uid-1 1"
		again, err := ladder(facts(func(f *Facts) { f.Existing = existing }))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(again.Refusal).To(BeNil())
		g.Expect(manifestwork.UpToDate(existing, again.Work)).To(BeTrue(), "nothing to write")
	})
	t.Run("the upstream work gone: the record stays, as adopted", func(t *testing.T) {
		g := NewWithT(t)
		v, err := ladder(facts(nil))
		g.Expect(err).NotTo(HaveOccurred())
		existing := applied(v.Work)
		done, err := ladder(facts(func(f *Facts) { f.Existing, f.Upstream = existing, nil }))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(done.Work.Annotations).To(HaveKeyWithValue(api.AdoptedAnnotation, existing.Annotations[api.AdoptingAnnotation]))
		g.Expect(done.Work.Annotations).NotTo(HaveKey(api.AdoptingAnnotation))
		g.Expect(manifestwork.Adopting(done.Work)).To(BeFalse())
		g.Expect(manifestwork.UpToDate(existing, done.Work)).To(BeFalse(), "one write records it")
		g.Expect(done.Work.Spec).To(Equal(existing.Spec), "the payload is the same: the agent applies nothing new")

		// Its controller writes the upstream work again after all.
		again := upstream.DeepCopy()
		again.UID = "upstream-uid-2"
		v, err = ladder(facts(func(f *Facts) { f.Existing, f.Upstream = applied(done.Work), again }))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(v.Refusal.Reason).To(Equal(ReasonUpstreamRunning))
	})
	t.Run("off by default: refused, the upstream work left as it is", func(t *testing.T) {
		g := NewWithT(t)
		v, err := ladder(facts(func(f *Facts) { f.Policy.AdoptUpstream = false }))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(v.Work).To(BeNil())
		g.Expect(v.Refusal.Reason).To(Equal(ReasonUpstreamWork))
		g.Expect(v.Refusal.Message).To(ContainSubstring("--adopt-upstream-works"))
		g.Expect(v.Refusal.Message).To(ContainSubstring("multicluster-integrations-config"), "how to stop RHACM's controller")
	})
	t.Run("an Application argocd-pull would refuse: its upstream work is not adopted", func(t *testing.T) {
		g := NewWithT(t)
		for reason, mutate := range map[string]func(*Facts){
			ReasonClusterNotBound:     func(f *Facts) { f.Bindings = tenancy.Bindings{} },
			ReasonNamespaceNotAllowed: func(f *Facts) { f.Policy.PullNamespaces = []string{"team-x"} },
		} {
			v, err := ladder(facts(mutate))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(v.Work).To(BeNil())
			g.Expect(v.Refusal.Reason).To(Equal(reason))
		}
	})
	t.Run("an upstream work that carries another managed Application is not adopted", func(t *testing.T) {
		g := NewWithT(t)
		other := upstreamOf(t, upstreamwork.OCMBasic, pullApp(func(u *unstructured.Unstructured) { setAnn(u, api.AppNamespaceAnnotation, "elsewhere") }), "")
		v, err := ladder(facts(func(f *Facts) { f.Upstream = other }))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(v.Work).To(BeNil())
		g.Expect(v.Refusal.Reason).To(Equal(ReasonUpstreamWork))
		g.Expect(v.Refusal.Message).To(ContainSubstring("is not adopted"))
	})
	t.Run("the upstream controller still runs", func(t *testing.T) {
		g := NewWithT(t)
		v, err := ladder(facts(nil))
		g.Expect(err).NotTo(HaveOccurred())
		existing := applied(v.Work)
		rewritten := upstream.DeepCopy()
		rewritten.Generation = 2 // its controller wrote it again (argocd-pull had not released it)
		v, err = ladder(facts(func(f *Facts) { f.Existing, f.Upstream = existing, rewritten }))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(v.Refusal.Reason).To(Equal(ReasonUpstreamRunning))
		g.Expect(v.Refusal.Message).To(ContainSubstring("delete ManifestWork cluster1/" + existing.Name))
	})
}

func TestNextTakeoverStep(t *testing.T) {
	app := pullApp()
	upstream := applied(upstreamOf(t, upstreamwork.RHACM, app, ""))
	v, err := ladder(Facts{App: app, Policy: Policy{ArgoCDNamespace: "argocd", AdoptUpstream: true}, Cluster: &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster1"}},
		Bindings:         tenancy.Bindings{Sets: []clusterv1beta2.ManagedClusterSet{{ObjectMeta: metav1.ObjectMeta{Name: "global"}, Spec: clusterv1beta2.ManagedClusterSetSpec{ClusterSelector: clusterv1beta2.ManagedClusterSelector{SelectorType: clusterv1beta2.LabelSelector, LabelSelector: &metav1.LabelSelector{}}}}}},
		ClusterNamespace: true, Upstream: upstream, NewDeliveryID: func() string { return "d1" }})
	if err != nil || v.Work == nil {
		t.Fatalf("not delivered: %v %+v", err, v.Refusal)
	}
	ours := v.Work
	ours.Generation = 1
	released, err := manifestwork.Release(upstream)
	if err != nil {
		t.Fatal(err)
	}
	released.Generation = 2
	deleting := upstream.DeepCopy()
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	paused, err := manifestwork.Pause(applied(ours), "x")
	if err != nil {
		t.Fatal(err)
	}
	for name, tt := range map[string]struct {
		ours, upstream *workv1.ManifestWork
		want           manifestwork.TakeoverStep
	}{
		"ours not written yet":        {upstream: upstream, want: manifestwork.TakeoverWait},
		"ours not applied yet":        {ours: ours, upstream: upstream, want: manifestwork.TakeoverWait},
		"ours paused":                 {ours: paused, upstream: upstream, want: manifestwork.TakeoverWait},
		"ours applied: release":       {ours: applied(ours), upstream: upstream, want: manifestwork.TakeoverRelease},
		"released, not applied yet":   {ours: applied(ours), upstream: released, want: manifestwork.TakeoverWait},
		"the release applied: delete": {ours: applied(ours), upstream: applied(released), want: manifestwork.TakeoverDelete},
		"being deleted already":       {ours: applied(ours), upstream: deleting, want: manifestwork.TakeoverWait},
	} {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(manifestwork.NextTakeoverStep(tt.ours, tt.upstream)).To(Equal(tt.want))
		})
	}
}
