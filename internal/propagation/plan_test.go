package propagation

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/test/upstreamwork"
)

// step is what a plan's step comes to, for comparing plans: the action, the work's
// "namespace/name", and whether it is an upstream work.
type step struct {
	Action   Action
	Work     string
	Upstream bool
	MovedTo  string
}

func steps(p []Step) []step {
	out := []step{}
	for _, s := range p {
		out = append(out, step{s.Action, s.Work.Namespace + "/" + s.Work.Name, s.Upstream, s.MovedTo})
	}
	return out
}

// Every work write a reconcile makes, decided from the ladder's verdict, for each case the
// controller's tests cover: what happens to the Application's own work and to every other work
// it touches.
func TestPlanDelivery(t *testing.T) {
	g := NewWithT(t)
	app := pullApp()
	work := func(cluster string, mutate ...func(*workv1.ManifestWork) *workv1.ManifestWork) *workv1.ManifestWork {
		w, err := manifestwork.DesiredWork(app, nil, manifestwork.Target{Cluster: cluster, AppNamespace: "argocd"}, manifestwork.Deliveries{})
		g.Expect(err).NotTo(HaveOccurred())
		w.Generation = 1
		for _, m := range mutate {
			w = m(w)
		}
		return w
	}
	held := func(w *workv1.ManifestWork) *workv1.ManifestWork {
		out, err := manifestwork.Hold(w)
		g.Expect(err).NotTo(HaveOccurred())
		return out
	}
	paused := func(w *workv1.ManifestWork) *workv1.ManifestWork {
		out, err := manifestwork.Pause(w, "incident")
		g.Expect(err).NotTo(HaveOccurred())
		return out
	}
	released := func(w *workv1.ManifestWork) *workv1.ManifestWork {
		out, err := manifestwork.Release(w)
		g.Expect(err).NotTo(HaveOccurred())
		out.Generation = w.Generation + 1
		return out
	}
	frozen := func(w *workv1.ManifestWork) *workv1.ManifestWork {
		out, err := manifestwork.Freeze(w, ReasonClusterNotBound)
		g.Expect(err).NotTo(HaveOccurred())
		return out
	}
	deleting := func(w *workv1.ManifestWork) *workv1.ManifestWork {
		out := w.DeepCopy()
		now := metav1.Now()
		out.DeletionTimestamp = &now
		return out
	}
	// A work of another hub Application carrying the same managed-cluster Application, older.
	rival := func(answered bool) *workv1.ManifestWork {
		other := pullApp(func(u *unstructured.Unstructured) { u.SetNamespace("team-b") })
		w, err := manifestwork.DesiredWork(other, nil, manifestwork.Target{Cluster: "cluster1", AppNamespace: "argocd"}, manifestwork.Deliveries{})
		g.Expect(err).NotTo(HaveOccurred())
		w.Generation = 1
		if answered {
			w = applied(w)
		}
		return w
	}
	upstream := upstreamOf(t, upstreamwork.RHACM, app, "")
	ours := applied(held(work("cluster1")))
	desired := work("cluster1")
	deliver := Verdict{Work: desired}
	refuse := func(reason string) Verdict { return Verdict{Refusal: &Refusal{Reason: reason, Message: "m"}} }

	tests := map[string]struct {
		existing, upstream *workv1.ManifestWork
		verdict            Verdict
		works              []workv1.ManifestWork
		rival              *workv1.ManifestWork
		want               []step
		wantFrozen         []string
	}{
		"new: created": {
			verdict: deliver, want: []step{{Action: ActCreate, Work: "cluster1/" + desired.Name}},
		},
		"up to date: nothing written": {
			existing: desired, verdict: deliver, works: []workv1.ManifestWork{*desired}, want: []step{},
		},
		"changed: updated": {
			existing: func() *workv1.ManifestWork {
				before := pullApp(func(u *unstructured.Unstructured) { u.Object["spec"].(map[string]any)["project"] = "before" })
				w, err := manifestwork.DesiredWork(before, nil, manifestwork.Target{Cluster: "cluster1", AppNamespace: "argocd"}, manifestwork.Deliveries{})
				g.Expect(err).NotTo(HaveOccurred())
				return w
			}(),
			verdict: deliver, want: []step{{Action: ActUpdate, Work: "cluster1/" + desired.Name}},
		},
		"moved: the old cluster's work deleted, the new one created": {
			verdict: deliver, works: []workv1.ManifestWork{*work("cluster0")},
			want: []step{{Action: ActDelete, Work: "cluster0/" + desired.Name, MovedTo: "cluster1"}, {Action: ActCreate, Work: "cluster1/" + desired.Name}},
		},
		"moved from a paused work: released first": {
			verdict: deliver, works: []workv1.ManifestWork{*paused(applied(held(work("cluster0"))))},
			want: []step{{Action: ActRelease, Work: "cluster0/" + desired.Name}, {Action: ActCreate, Work: "cluster1/" + desired.Name}},
		},
		"moved from a released work the agent has not applied: it waits": {
			verdict: deliver, works: []workv1.ManifestWork{*released(paused(applied(held(work("cluster0")))))},
			want: []step{{Action: ActCreate, Work: "cluster1/" + desired.Name}},
		},
		"a work being deleted is left to finish": {
			verdict: deliver, works: []workv1.ManifestWork{*deleting(work("cluster0"))},
			want: []step{{Action: ActCreate, Work: "cluster1/" + desired.Name}},
		},
		"refused, a right revoked: its work frozen": {
			existing: ours, verdict: refuse(ReasonClusterNotBound), works: []workv1.ManifestWork{*ours},
			want: []step{{Action: ActFreeze, Work: "cluster1/" + desired.Name}}, wantFrozen: []string{"cluster1/" + desired.Name},
		},
		"refused, frozen already: nothing written, still frozen": {
			verdict: refuse(ReasonClusterNotBound), works: []workv1.ManifestWork{*frozen(ours)},
			want: []step{}, wantFrozen: []string{"cluster1/" + desired.Name},
		},
		"refused for a reason that revokes nothing: its work kept as it is": {
			existing: ours, verdict: refuse(ReasonNamespaceMissing), works: []workv1.ManifestWork{*ours},
			want: []step{},
		},
		"refused: a work on a cluster the Application left is frozen": {
			verdict: refuse(ReasonNamespaceMissing), works: []workv1.ManifestWork{*applied(held(work("cluster0")))},
			want: []step{{Action: ActFreeze, Work: "cluster0/" + desired.Name}}, wantFrozen: []string{"cluster0/" + desired.Name},
		},
		"refused, the upstream controller still runs: its work paused": {
			existing: ours, verdict: refuse(ReasonUpstreamRunning), works: []workv1.ManifestWork{*ours},
			want: []step{{Action: ActPause, Work: "cluster1/" + desired.Name}},
		},
		"refused, delivered by an older work that is applied: it yields": {
			existing: ours, verdict: refuse(ReasonAlreadyDelivered), works: []workv1.ManifestWork{*ours}, rival: rival(true),
			want: []step{{Action: ActYield, Work: "cluster1/" + desired.Name}},
		},
		"refused, delivered by an older work not applied yet: it waits": {
			existing: ours, verdict: refuse(ReasonAlreadyDelivered), works: []workv1.ManifestWork{*ours}, rival: rival(false),
			want: []step{},
		},
		"refused, its work carries another managed-cluster Application: never deleted for the rival": {
			verdict: refuse(ReasonAlreadyDelivered), rival: rival(true),
			works: []workv1.ManifestWork{*work("cluster1", func(w *workv1.ManifestWork) *workv1.ManifestWork {
				return applied(held(workCarrying(t, w, "another")))
			})},
			want: []step{},
		},
		"taking over: nothing to the upstream work before ours is applied": {
			existing: held(work("cluster1")), upstream: upstream, verdict: Verdict{Work: held(work("cluster1"))},
			want: []step{},
		},
		"taking over: ours applied, the upstream work released": {
			existing: ours, upstream: upstream, verdict: Verdict{Work: ours},
			want: []step{{Action: ActRelease, Work: upstream.Namespace + "/" + upstream.Name, Upstream: true}},
		},
		"taking over: the release applied, the upstream work deleted": {
			existing: ours, upstream: applied(released(upstream)), verdict: Verdict{Work: ours},
			want: []step{{Action: ActDelete, Work: upstream.Namespace + "/" + upstream.Name, Upstream: true}},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			f := Facts{App: app, Existing: tt.existing, Upstream: tt.upstream}
			plan, err := PlanDelivery(f, tt.verdict, tt.works, tt.rival)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(steps(plan.Steps)).To(Equal(tt.want))
			g.Expect(plan.Frozen).To(Equal(tt.wantFrozen))
			g.Expect(plan.Refusal).To(Equal(tt.verdict.Refusal))
		})
	}
}

func TestPlanPausePausesEachHeldWorkOnce(t *testing.T) {
	g := NewWithT(t)
	pending, err := manifestwork.DesiredWork(pullApp(), nil, manifestwork.Target{Cluster: "cluster1", AppNamespace: "argocd"}, manifestwork.Deliveries{})
	g.Expect(err).NotTo(HaveOccurred())
	held, err := manifestwork.Hold(pending)
	g.Expect(err).NotTo(HaveOccurred())
	again, err := manifestwork.Pause(held, "incident")
	g.Expect(err).NotTo(HaveOccurred())
	other := held.DeepCopy()
	other.Namespace = "cluster2"
	plan, err := PlanPause([]workv1.ManifestWork{*pending, *held, *again, *other}, "incident")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(steps(plan)).To(Equal([]step{{Action: ActPause, Work: "cluster1/" + held.Name}, {Action: ActPause, Work: "cluster2/" + held.Name}}),
		"a pending work delivered nothing, and a paused one is paused already")
	g.Expect(plan[0].Work.Annotations).To(HaveKeyWithValue(api.PausedAnnotation, "incident"))
}

// workCarrying returns w with its Application payload renamed name: another managed-cluster
// Application than the hub Application's.
func workCarrying(t *testing.T, w *workv1.ManifestWork, name string) *workv1.ManifestWork {
	t.Helper()
	out := w.DeepCopy()
	for i, m := range out.Spec.Workload.Manifests {
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(m.Raw); err != nil {
			t.Fatal(err)
		}
		if obj.GetKind() != "Application" {
			continue
		}
		obj.SetName(name)
		raw, err := obj.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		out.Spec.Workload.Manifests[i].Raw = raw
	}
	return out
}

// The works of an Application being deleted: each first carries what the deletion needs on the
// managed cluster (manifestwork.FinalWork), or waits for the cluster's answer, then goes.
func TestPlanFinalize(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	app := pullApp()
	desired, err := manifestwork.DesiredWork(app, nil, manifestwork.Target{Cluster: "cluster1", AppNamespace: "argocd"}, manifestwork.Deliveries{})
	g.Expect(err).NotTo(HaveOccurred())
	held, err := manifestwork.Hold(desired)
	g.Expect(err).NotTo(HaveOccurred())
	held.Generation = 3
	manifestwork.StampWritten(held, now.Add(-time.Hour))
	work := applied(held)
	name := "cluster1/" + work.Name
	cascade := []string{argocd.ResourcesFinalizer}
	phase := func(p string) func(*workv1.ManifestWork) manifestwork.Reported {
		return func(*workv1.ManifestWork) manifestwork.Reported { return manifestwork.Reported{Phase: p} }
	}

	steps0, wait, err := PlanFinalize([]workv1.ManifestWork{*work}, cascade, false, phase("Running"), now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(steps(steps0)).To(Equal([]step{{Action: ActDelete, Work: name}}), "not a pull-model Application: its works go at once")
	g.Expect(wait).To(BeZero())

	steps1, _, err := PlanFinalize([]workv1.ManifestWork{*work}, nil, true, phase("Running"), now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(steps(steps1)).To(Equal([]step{{Action: ActDelete, Work: name}}), "no resources finalizer: nothing to carry first")

	steps2, _, err := PlanFinalize([]workv1.ManifestWork{*work}, cascade, true, phase("Running"), now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(steps(steps2)).To(Equal([]step{{Action: ActFinalize, Work: name}}), "an operation running: a terminate and the finalizer are written first")

	final := applied(steps2[0].Work)
	manifestwork.StampWritten(final, now.Add(-30*time.Second))
	steps3, wait, err := PlanFinalize([]workv1.ManifestWork{*final}, cascade, true, phase("Terminating"), now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(steps(steps3)).To(BeEmpty())
	g.Expect(wait).To(Equal(manifestwork.FinalGrace-30*time.Second), "waits for the cluster's answer, up to the grace")

	gone := work.DeepCopy()
	gone.DeletionTimestamp = &metav1.Time{Time: now}
	steps4, _, err := PlanFinalize([]workv1.ManifestWork{*gone}, cascade, true, phase("Running"), now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(steps(steps4)).To(BeEmpty(), "a work being deleted is left to finish")
}
