package manifestwork

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/test/upstreamwork"
	"github.com/argocd-pull/argocd-pull/internal/test/workfixture"
)

var upstreamOf = workfixture.UpstreamOf

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

func TestUpstreamRunning(t *testing.T) {
	app := pullApp()
	upstream := upstreamOf(t, upstreamwork.OCMBasic, app, "")
	ours := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{api.AdoptingAnnotation: AdoptionMark(upstream)}}}
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
