package propagation

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/tenancy"
	"github.com/argocd-pull/argocd-pull/internal/test/upstreamwork"
)

// upstreamOf is the work writer wrote for app, as the apiserver holds it: a UID, generation 1.
func upstreamOf(t *testing.T, writer upstreamwork.Writer, app *unstructured.Unstructured, appSet string) *workv1.ManifestWork {
	t.Helper()
	w, err := upstreamwork.Work(writer, app, nil, appSet)
	if err != nil {
		t.Fatal(err)
	}
	w.UID, w.Generation = types.UID("upstream-uid-1"), 1
	return w
}

// applied returns work as the agent reports it once applied at its generation: the work Applied,
// its Application applied and available.
func applied(work *workv1.ManifestWork) *workv1.ManifestWork {
	out := work.DeepCopy()
	out.Status.Conditions = []metav1.Condition{{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, ObservedGeneration: out.Generation}}
	out.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
		ResourceMeta: workv1.ManifestResourceMeta{Group: argocd.Group, Kind: "Application", Resource: "applications"},
		Conditions: []metav1.Condition{
			{Type: workv1.ManifestApplied, Status: metav1.ConditionTrue},
			{Type: workv1.ManifestAvailable, Status: metav1.ConditionTrue},
		},
	}}
	return out
}

func TestUpstreamWorksAreRecognised(t *testing.T) {
	app := pullApp()
	for name, tt := range map[string]struct {
		work func() *workv1.ManifestWork
		want bool
	}{
		"OCM basic":                       {work: func() *workv1.ManifestWork { return upstreamOf(t, upstreamwork.OCMBasic, app, "") }, want: true},
		"OCM basic, of an ApplicationSet": {work: func() *workv1.ManifestWork { return upstreamOf(t, upstreamwork.OCMBasic, app, "guestbook") }, want: true},
		"RHACM":                           {work: func() *workv1.ManifestWork { return upstreamOf(t, upstreamwork.RHACM, app, "") }, want: true},
		// RHACM replaces the labels of an ApplicationSet's work: no pull label.
		"RHACM, of an ApplicationSet": {work: func() *workv1.ManifestWork { return upstreamOf(t, upstreamwork.RHACM, app, "guestbook") }, want: true},
		"argocd-pull's own": {work: func() *workv1.ManifestWork {
			w := upstreamOf(t, upstreamwork.OCMBasic, app, "guestbook")
			w.Labels[api.ManagedByLabel] = api.ManagedByValue
			return w
		}},
		"no back-link to a hub Application": {work: func() *workv1.ManifestWork {
			w := upstreamOf(t, upstreamwork.OCMBasic, app, "")
			delete(w.Annotations, api.HubApplicationNameAnnotation)
			return w
		}},
		"another addon's work": {work: func() *workv1.ManifestWork {
			w := upstreamOf(t, upstreamwork.OCMBasic, app, "")
			w.Labels = map[string]string{"app": "x"}
			return w
		}},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			w := tt.work()
			g.Expect(IsUpstream(w)).To(Equal(tt.want))
			if tt.want {
				key, ok := ManagedApplication(w)
				g.Expect(ok).To(BeTrue())
				g.Expect(key).To(Equal("cluster1/argocd/guestbook-cluster1"), "the Application is found after RHACM's Namespace")
			}
		})
	}
	g := NewWithT(t)
	g.Expect(UpstreamWriter(upstreamOf(t, upstreamwork.RHACM, app, ""))).To(HavePrefix("RHACM"))
	g.Expect(UpstreamWriter(upstreamOf(t, upstreamwork.OCMBasic, app, ""))).To(HavePrefix("OCM"))
}

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
		v, err := Ladder(facts(nil))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(v.Refusal).To(BeNil())
		g.Expect(Held(v.Work)).To(BeTrue(), "no pending claim: the upstream work names this hub Application")
		g.Expect(v.Work.Annotations).To(HaveKeyWithValue(api.AdoptingAnnotation, upstream.Name+" upstream-uid-1 1"))
		g.Expect(v.Work.Annotations[api.SpecHashAnnotation]).NotTo(BeEmpty())

		// The agent reports the Application present without argocd-pull's annotation: adopted,
		// not refused as a stranger's, and the mark stays as first written.
		existing := applied(v.Work)
		existing.Annotations[api.AdoptingAnnotation] = upstream.Name + " upstream-uid-1 1"
		again, err := Ladder(facts(func(f *Facts) { f.Existing = existing }))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(again.Refusal).To(BeNil())
		g.Expect(UpToDate(existing, again.Work)).To(BeTrue(), "nothing to write")
	})
	t.Run("the upstream work gone: the record stays, as adopted", func(t *testing.T) {
		g := NewWithT(t)
		v, err := Ladder(facts(nil))
		g.Expect(err).NotTo(HaveOccurred())
		existing := applied(v.Work)
		done, err := Ladder(facts(func(f *Facts) { f.Existing, f.Upstream = existing, nil }))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(done.Work.Annotations).To(HaveKeyWithValue(api.AdoptedAnnotation, existing.Annotations[api.AdoptingAnnotation]))
		g.Expect(done.Work.Annotations).NotTo(HaveKey(api.AdoptingAnnotation))
		g.Expect(Adopting(done.Work)).To(BeFalse())
		g.Expect(UpToDate(existing, done.Work)).To(BeFalse(), "one write records it")
		g.Expect(done.Work.Spec).To(Equal(existing.Spec), "the payload is the same: the agent applies nothing new")

		// Its controller writes the upstream work again after all.
		again := upstream.DeepCopy()
		again.UID = "upstream-uid-2"
		v, err = Ladder(facts(func(f *Facts) { f.Existing, f.Upstream = applied(done.Work), again }))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(v.Refusal.Reason).To(Equal(ReasonUpstreamRunning))
	})
	t.Run("off by default: refused, the upstream work left as it is", func(t *testing.T) {
		g := NewWithT(t)
		v, err := Ladder(facts(func(f *Facts) { f.Policy.AdoptUpstream = false }))
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
			v, err := Ladder(facts(mutate))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(v.Work).To(BeNil())
			g.Expect(v.Refusal.Reason).To(Equal(reason))
		}
	})
	t.Run("an upstream work that carries another managed Application is not adopted", func(t *testing.T) {
		g := NewWithT(t)
		other := upstreamOf(t, upstreamwork.OCMBasic, pullApp(func(u *unstructured.Unstructured) { setAnn(u, api.AppNamespaceAnnotation, "elsewhere") }), "")
		v, err := Ladder(facts(func(f *Facts) { f.Upstream = other }))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(v.Work).To(BeNil())
		g.Expect(v.Refusal.Reason).To(Equal(ReasonUpstreamWork))
		g.Expect(v.Refusal.Message).To(ContainSubstring("is not adopted"))
	})
	t.Run("the upstream controller still runs", func(t *testing.T) {
		g := NewWithT(t)
		v, err := Ladder(facts(nil))
		g.Expect(err).NotTo(HaveOccurred())
		existing := applied(v.Work)
		rewritten := upstream.DeepCopy()
		rewritten.Generation = 2 // its controller wrote it again (argocd-pull had not released it)
		v, err = Ladder(facts(func(f *Facts) { f.Existing, f.Upstream = existing, rewritten }))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(v.Refusal.Reason).To(Equal(ReasonUpstreamRunning))
		g.Expect(v.Refusal.Message).To(ContainSubstring("delete ManifestWork cluster1/" + existing.Name))
	})
}

func TestUpstreamRunning(t *testing.T) {
	app := pullApp()
	upstream := upstreamOf(t, upstreamwork.OCMBasic, app, "")
	ours := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{api.AdoptingAnnotation: adoptionMark(upstream)}}}
	released, err := Release(upstream)
	if err != nil {
		t.Fatal(err)
	}
	released.Generation = 2
	revertedAfterRelease := upstream.DeepCopy()
	revertedAfterRelease.Generation = 3
	recreated := upstream.DeepCopy()
	recreated.UID = "upstream-uid-2"
	changedBeforeRelease := upstream.DeepCopy()
	changedBeforeRelease.Generation = 2
	beingDeleted := released.DeepCopy()
	beingDeleted.Generation = 3 // the apiserver counts a custom resource's deletion as a generation
	now := metav1.Now()
	beingDeleted.DeletionTimestamp = &now
	for name, tt := range map[string]struct {
		ours, upstream *workv1.ManifestWork
		want           bool
	}{
		"as recorded":                       {ours: ours, upstream: upstream},
		"released by argocd-pull":           {ours: ours, upstream: released},
		"released, then deleted":            {ours: ours, upstream: beingDeleted},
		"changed before the release":        {ours: ours, upstream: changedBeforeRelease, want: true},
		"the release reverted":              {ours: ours, upstream: revertedAfterRelease, want: true},
		"written again after the deletion":  {ours: ours, upstream: recreated, want: true},
		"nothing recorded":                  {ours: &workv1.ManifestWork{}, upstream: recreated},
		"no upstream work":                  {ours: ours},
		"a malformed mark is not a verdict": {ours: &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{api.AdoptingAnnotation: "x"}}}, upstream: upstream},
	} {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(UpstreamRunning(tt.ours, tt.upstream)).To(Equal(tt.want))
		})
	}
}

func TestNextTakeoverStep(t *testing.T) {
	app := pullApp()
	upstream := applied(upstreamOf(t, upstreamwork.RHACM, app, ""))
	v, err := Ladder(Facts{App: app, Policy: Policy{ArgoCDNamespace: "argocd", AdoptUpstream: true}, Cluster: &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster1"}},
		Bindings:         tenancy.Bindings{Sets: []clusterv1beta2.ManagedClusterSet{{ObjectMeta: metav1.ObjectMeta{Name: "global"}, Spec: clusterv1beta2.ManagedClusterSetSpec{ClusterSelector: clusterv1beta2.ManagedClusterSelector{SelectorType: clusterv1beta2.LabelSelector, LabelSelector: &metav1.LabelSelector{}}}}}},
		ClusterNamespace: true, Upstream: upstream, NewDeliveryID: func() string { return "d1" }})
	if err != nil || v.Work == nil {
		t.Fatalf("not delivered: %v %+v", err, v.Refusal)
	}
	ours := v.Work
	ours.Generation = 1
	released, err := Release(upstream)
	if err != nil {
		t.Fatal(err)
	}
	released.Generation = 2
	deleting := upstream.DeepCopy()
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	paused, err := Pause(applied(ours), "x")
	if err != nil {
		t.Fatal(err)
	}
	for name, tt := range map[string]struct {
		ours, upstream *workv1.ManifestWork
		want           TakeoverStep
	}{
		"ours not written yet":        {upstream: upstream, want: TakeoverWait},
		"ours not applied yet":        {ours: ours, upstream: upstream, want: TakeoverWait},
		"ours paused":                 {ours: paused, upstream: upstream, want: TakeoverWait},
		"ours applied: release":       {ours: applied(ours), upstream: upstream, want: TakeoverRelease},
		"released, not applied yet":   {ours: applied(ours), upstream: released, want: TakeoverWait},
		"the release applied: delete": {ours: applied(ours), upstream: applied(released), want: TakeoverDelete},
		"being deleted already":       {ours: applied(ours), upstream: deleting, want: TakeoverWait},
	} {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(NextTakeoverStep(tt.ours, tt.upstream)).To(Equal(tt.want))
		})
	}
}
