package propagation

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/tenancy"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
	"github.com/argocd-pull/argocd-pull/internal/test/workfixture"
)

func TestLadder(t *testing.T) {
	cluster := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster1", Labels: map[string]string{clusterv1beta2.ClusterSetLabel: "gitops"}}}
	bound := tenancy.Bindings{Sets: []clusterv1beta2.ManagedClusterSet{{ObjectMeta: metav1.ObjectMeta{Name: "gitops"}}}}
	project := argocd.NewAppProject()
	project.SetName("platform")
	project.Object["spec"] = map[string]any{"sourceRepos": []any{"*"}}
	facts := func(mutate func(f *Facts)) Facts {
		f := Facts{App: pullApp(), Policy: Policy{ArgoCDNamespace: "argocd", PullNamespaces: []string{"argocd", "team-a"}}, Cluster: cluster, Bindings: bound,
			ClusterNamespace: true, NewDeliveryID: func() string { return "d1" }}
		if mutate != nil {
			mutate(&f)
		}
		return f
	}
	onProject := func(name string) func(*unstructured.Unstructured) {
		return func(u *unstructured.Unstructured) { u.Object["spec"].(map[string]any)["project"] = name }
	}
	// A tenant: an Application of namespace team-a, using the platform's project.
	tenant := func(mutate ...func(*unstructured.Unstructured)) *unstructured.Unstructured {
		return pullApp(append([]func(*unstructured.Unstructured){func(u *unstructured.Unstructured) {
			u.SetNamespace("team-a")
			u.Object["spec"].(map[string]any)["project"] = "platform"
		}}, mutate...)...)
	}
	teamProject := project.DeepCopy()
	teamProject.Object["spec"].(map[string]any)["sourceNamespaces"] = []any{"team-*"}
	landing := func(ns string) func(*unstructured.Unstructured) {
		return func(u *unstructured.Unstructured) { setAnn(u, api.AppNamespaceAnnotation, ns) }
	}

	tests := map[string]struct {
		facts      Facts
		wantReason string
		// wantMessage is a part of the refusal's message: what the person must do.
		wantMessage string
	}{
		"delivered": {facts: facts(nil)},
		"invalid markers": {
			facts:      facts(func(f *Facts) { f.App = pullApp(func(u *unstructured.Unstructured) { u.SetAnnotations(nil) }) }),
			wantReason: ReasonInvalidMarkers, wantMessage: api.ClusterAnnotation,
		},
		"namespace not allowed": {
			facts:      facts(func(f *Facts) { f.Policy.PullNamespaces = []string{"team-x", "team-y"} }),
			wantReason: ReasonNamespaceNotAllowed, wantMessage: "the operator allows team-x, team-y (flag --pull-namespaces)",
		},
		"cluster missing": {
			facts:      facts(func(f *Facts) { f.Cluster = nil }),
			wantReason: ReasonClusterNotFound, wantMessage: "ManagedCluster cluster1 does not exist",
		},
		"the hub by name": {
			facts: facts(func(f *Facts) {
				f.App = pullApp(func(u *unstructured.Unstructured) {
					u.GetAnnotations()
					setAnn(u, api.ClusterAnnotation, "local-cluster")
				})
			}),
			wantReason: ReasonHubNotATarget, wantMessage: "never delivered to the hub",
		},
		"the hub by label": {
			facts: facts(func(f *Facts) {
				hub := cluster.DeepCopy()
				hub.Labels["local-cluster"] = "true"
				f.Cluster = hub
			}),
			wantReason: ReasonHubNotATarget,
		},
		"cluster not bound": {
			facts:      facts(func(f *Facts) { f.Bindings = tenancy.Bindings{} }),
			wantReason: ReasonClusterNotBound, wantMessage: "create a ManagedClusterSetBinding in argocd",
		},
		"cluster namespace missing": {
			facts:      facts(func(f *Facts) { f.ClusterNamespace = false }),
			wantReason: ReasonNamespaceMissing, wantMessage: "registration accepted",
		},
		"a tenant lands in its own namespace": {
			facts: facts(func(f *Facts) { f.App, f.Project = tenant(), teamProject }),
		},
		"a tenant lands in a namespace granted to it": {
			facts: facts(func(f *Facts) {
				f.App, f.Project = tenant(landing("team-a-prod")), teamProject
				f.Policy.ManagedNamespaces = tenancy.Grants{"team-a": {"team-a-prod"}}
			}),
		},
		"a tenant aims at the managed Argo CD's namespace (row 1)": {
			facts:      facts(func(f *Facts) { f.App, f.Project = tenant(landing("argocd")), teamProject }),
			wantReason: ReasonAppNamespace, wantMessage: "--grant-managed-namespaces team-a=argocd",
		},
		"a tenant aims at another tenant's namespace (row 2)": {
			facts: facts(func(f *Facts) {
				f.App, f.Project = tenant(landing("team-b")), teamProject
				f.Policy.ManagedNamespaces = tenancy.Grants{"team-b": {"team-a"}}
			}),
			wantReason: ReasonAppNamespace, wantMessage: "lands in team-a on the managed cluster, not in team-b",
		},
		"the platform names any managed namespace": {
			facts: facts(func(f *Facts) { f.App = pullApp(landing("kube-system")) }),
		},
		"a tenant uses a project that does not list it (row 1)": {
			facts:      facts(func(f *Facts) { f.App, f.Project = tenant(), project }),
			wantReason: ReasonProjectNotPermitted, wantMessage: "spec.sourceNamespaces must match team-a",
		},
		"a tenant uses the default project, which is not on the hub": {
			facts:      facts(func(f *Facts) { f.App = tenant(onProject("default")) }),
			wantReason: ReasonProjectNotFound,
		},
		"the work name is another Application's (row 6)": {
			facts:      facts(func(f *Facts) { f.NameTakenBy = "team-b/x" }),
			wantReason: ReasonWorkNameTaken, wantMessage: "belongs to Application team-b/x",
		},
		"another Application delivers the same managed Application (row 2)": {
			facts:      facts(func(f *Facts) { f.DeliveredBy = "team-b/guestbook-cluster1" }),
			wantReason: ReasonAlreadyDelivered, wantMessage: "Application team-b/guestbook-cluster1 already delivers",
		},
		"project missing": {
			facts:      facts(func(f *Facts) { f.App = pullApp(onProject("platform")) }),
			wantReason: ReasonProjectNotFound, wantMessage: "AppProject platform not found in the Argo CD namespace argocd",
		},
		"project found": {
			facts: facts(func(f *Facts) { f.App = pullApp(onProject("platform")); f.Project = project }),
		},
		"payload too large": {
			facts: facts(func(f *Facts) {
				f.App = pullApp(func(u *unstructured.Unstructured) {
					u.Object["spec"].(map[string]any)["source"].(map[string]any)["helm"] = map[string]any{"values": strings.Repeat("x", manifestwork.MaxManifestsSize)}
				})
			}),
			wantReason: ReasonPayloadTooLarge, wantMessage: "the limit is",
		},
		"the first failing rung wins": {
			facts: facts(func(f *Facts) {
				f.Policy.PullNamespaces = []string{"team-x"}
				f.Cluster = nil
				f.ClusterNamespace = false
			}),
			wantReason: ReasonNamespaceNotAllowed,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			v, err := ladder(tt.facts)
			g.Expect(err).NotTo(HaveOccurred())
			if tt.wantReason == "" {
				g.Expect(v.Refusal).To(BeNil())
				g.Expect(v.Work).NotTo(BeNil())
				g.Expect(v.Work.Namespace).To(Equal("cluster1"))
				return
			}
			g.Expect(v.Work).To(BeNil(), "nothing is delivered on a refusal")
			g.Expect(v.Refusal).NotTo(BeNil())
			g.Expect(v.Refusal.Reason).To(Equal(tt.wantReason))
			g.Expect(v.Refusal.Message).To(ContainSubstring(tt.wantMessage))
		})
	}
}

// The ladder plans the work's sync and refresh deliveries from what the existing work carried.
func TestLadderCarriesRequests(t *testing.T) {
	g := NewWithT(t)
	cluster := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster1"}}
	f := Facts{App: pullApp(func(u *unstructured.Unstructured) { u.Object["operation"] = map[string]any{"sync": map[string]any{}} }),
		Policy: Policy{ArgoCDNamespace: "argocd"}, Cluster: cluster, ClusterNamespace: true,
		Bindings:      tenancy.Bindings{Sets: []clusterv1beta2.ManagedClusterSet{{ObjectMeta: metav1.ObjectMeta{Name: "global"}, Spec: clusterv1beta2.ManagedClusterSetSpec{ClusterSelector: clusterv1beta2.ManagedClusterSelector{SelectorType: clusterv1beta2.LabelSelector, LabelSelector: &metav1.LabelSelector{}}}}}},
		NewDeliveryID: func() string { return "d1" }}
	v, err := ladder(f)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(v.Refusal).To(BeNil())
	g.Expect(manifestwork.ParseDeliveries(v.Work.Annotations[api.DeliveriesAnnotation]).Sync.ID).To(Equal("d1"))

	f.Existing, f.Carried = v.Work, manifestwork.ParseDeliveries(v.Work.Annotations[api.DeliveriesAnnotation])
	f.NewDeliveryID = func() string { return "d2" }
	again, err := ladder(f)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(manifestwork.UpToDate(v.Work, again.Work)).To(BeTrue(), "the same request keeps its delivery: nothing to write")
}

// A RollingSync step's sync request reaches the cluster in a later second than the step began
// (manifestwork.StepDeliverAt): until then the work leaves it out and the verdict says when to look
// again; then it is delivered, and a request carried already is never held back.
func TestARollingSyncStepsRequestWaitsForTheNextSecond(t *testing.T) {
	g := NewWithT(t)
	cluster := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster1"}}
	began := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	f := Facts{App: pullApp(func(u *unstructured.Unstructured) {
		u.Object["operation"] = map[string]any{"initiatedBy": map[string]any{"username": manifestwork.RollingSyncUser, "automated": true}, "sync": map[string]any{}}
	}),
		Policy: Policy{ArgoCDNamespace: "argocd"}, Cluster: cluster, ClusterNamespace: true,
		Bindings:      tenancy.Bindings{Sets: []clusterv1beta2.ManagedClusterSet{{ObjectMeta: metav1.ObjectMeta{Name: "global"}, Spec: clusterv1beta2.ManagedClusterSetSpec{ClusterSelector: clusterv1beta2.ManagedClusterSelector{SelectorType: clusterv1beta2.LabelSelector, LabelSelector: &metav1.LabelSelector{}}}}}},
		NewDeliveryID: func() string { return "d1" }, StepBegan: began, Now: began.Add(400 * time.Millisecond)}
	early, err := ladder(f)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(manifestwork.ParseDeliveries(early.Work.Annotations[api.DeliveriesAnnotation]).Sync).To(BeNil(), "not in the step's own second")
	g.Expect(early.Recheck).To(Equal(began.Add(time.Second)))

	f.Now = began.Add(time.Second)
	v, err := ladder(f)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(v.Recheck.IsZero()).To(BeTrue())
	g.Expect(manifestwork.ParseDeliveries(v.Work.Annotations[api.DeliveriesAnnotation]).Sync.ID).To(Equal("d1"))

	// Carried already: a step that read Pending again later changes nothing of it.
	f.Existing, f.Carried = v.Work, manifestwork.ParseDeliveries(v.Work.Annotations[api.DeliveriesAnnotation])
	f.StepBegan, f.Now = began.Add(time.Minute), began.Add(time.Minute)
	again, err := ladder(f)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Recheck.IsZero()).To(BeTrue())
	g.Expect(manifestwork.UpToDate(v.Work, again.Work)).To(BeTrue())

	// Not the ApplicationSet controller's request: delivered at once.
	f = Facts{App: pullApp(func(u *unstructured.Unstructured) { u.Object["operation"] = map[string]any{"sync": map[string]any{}} }),
		Policy: f.Policy, Cluster: cluster, ClusterNamespace: true, Bindings: f.Bindings,
		NewDeliveryID: func() string { return "d2" }, StepBegan: began, Now: began}
	byHand, err := ladder(f)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(byHand.Recheck.IsZero()).To(BeTrue())
	g.Expect(manifestwork.ParseDeliveries(byHand.Work.Annotations[api.DeliveriesAnnotation]).Sync.ID).To(Equal("d2"))
}

// A RollingSync step's sync request that meets its step moved on (Healthy, Progressing, Waiting) is
// the ApplicationSet controller's late repeat (manifestwork.RepeatedStepSync): the work leaves it
// out, keeping what it carries, and the verdict says why the hub drops it. While the step reads
// Pending the same request is delivered.
func TestARollingSyncStepsRepeatedRequestIsNotDelivered(t *testing.T) {
	cluster := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster1"}}
	now := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	facts := func(step string) Facts {
		return Facts{App: pullApp(func(u *unstructured.Unstructured) {
			u.Object["operation"] = map[string]any{"initiatedBy": map[string]any{"username": manifestwork.RollingSyncUser, "automated": true}, "sync": map[string]any{}}
			u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "argoproj.io/v1alpha1", Kind: "ApplicationSet", Name: "fleet", UID: "u1"}})
		}),
			Policy: Policy{ArgoCDNamespace: "argocd"}, Cluster: cluster, ClusterNamespace: true,
			Bindings:      tenancy.Bindings{Sets: []clusterv1beta2.ManagedClusterSet{{ObjectMeta: metav1.ObjectMeta{Name: "global"}, Spec: clusterv1beta2.ManagedClusterSetSpec{ClusterSelector: clusterv1beta2.ManagedClusterSelector{SelectorType: clusterv1beta2.LabelSelector, LabelSelector: &metav1.LabelSelector{}}}}}},
			NewDeliveryID: func() string { return "d1" }, Step: step, Now: now}
	}
	for _, step := range []string{argocd.StepHealthy, argocd.StepProgressing, argocd.StepWaiting} {
		t.Run(step, func(t *testing.T) {
			g := NewWithT(t)
			v, err := ladder(facts(step))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(v.Work).NotTo(BeNil())
			g.Expect(manifestwork.ParseDeliveries(v.Work.Annotations[api.DeliveriesAnnotation]).Sync).To(BeNil(), "not delivered")
			g.Expect(v.Repeated).To(ContainSubstring("ApplicationSet fleet asked for a sync of this Application's RollingSync step while its status read " + step))
			g.Expect(v.Repeated).To(ContainSubstring("removed from the hub Application"))
			g.Expect(v.Recheck.IsZero()).To(BeTrue())
		})
	}
	g := NewWithT(t)
	f := facts(argocd.StepPending)
	f.StepBegan = now.Add(-time.Minute)
	v, err := ladder(f)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(v.Repeated).To(BeEmpty())
	g.Expect(manifestwork.ParseDeliveries(v.Work.Annotations[api.DeliveriesAnnotation]).Sync.ID).To(Equal("d1"), "the step's own request is delivered")

	// Carried already (delivered while Pending): the step moving on changes nothing of it.
	f = facts(argocd.StepHealthy)
	f.Existing, f.Carried = v.Work, manifestwork.ParseDeliveries(v.Work.Annotations[api.DeliveriesAnnotation])
	again, err := ladder(f)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Repeated).To(BeEmpty())
	g.Expect(manifestwork.UpToDate(v.Work, again.Work)).To(BeTrue())
}

// A request the hub cleared stays in the payload while the other is carried: a rewrite would make
// the work agent apply the other again (a sync Argo CD just finished would run twice). Both
// cleared, they leave at once: a work carrying a request asks its cluster for reconciledAt, which
// changes on every reconciliation, and its agent would write its status to the hub at rest.
func TestAClearedRequestLeavesWithTheOther(t *testing.T) {
	cluster, global := deliveryTarget()
	ids := 0
	deliverOn := func(g Gomega, app *unstructured.Unstructured, existing *workv1.ManifestWork) *workv1.ManifestWork {
		f := Facts{App: app, Policy: Policy{ArgoCDNamespace: "argocd"}, Cluster: cluster, ClusterNamespace: true, Bindings: global,
			NewDeliveryID: func() string { ids++; return fmt.Sprintf("d%d", ids) }}
		return deliver(g, f, existing)
	}
	// The hub asks for a sync and a hard refresh: the work carries both.
	requested := pullApp(func(u *unstructured.Unstructured) {
		u.Object["operation"] = map[string]any{"sync": map[string]any{}}
		setAnn(u, argocd.RefreshAnnotation, "hard")
	})
	// The status controller cleared the refresh (the cluster finished it); the sync is still carried.
	refreshCleared := func(u *unstructured.Unstructured) {
		delete(u.Object["metadata"].(map[string]any)["annotations"].(map[string]any), argocd.RefreshAnnotation)
		setAnn(u, api.RefreshDeliveredAnnotation, "d2")
	}
	// Then the sync: status.operationState names the delivery that finished.
	syncCleared := func(u *unstructured.Unstructured) {
		delete(u.Object, "operation")
		u.Object["status"] = map[string]any{"operationState": map[string]any{"phase": "Succeeded",
			"operation": manifestwork.WithDeliveryID(map[string]any{"sync": map[string]any{}}, "d1")}}
	}

	t.Run("refresh cleared first, then the sync", func(t *testing.T) {
		g := NewWithT(t)
		ids = 0
		both := deliverOn(g, requested, nil)
		g.Expect(manifestwork.ParseDeliveries(both.Annotations[api.DeliveriesAnnotation])).To(Equal(manifestwork.Deliveries{Sync: &manifestwork.Delivery{ID: "d1", Hash: manifestwork.ContentHash(map[string]any{"sync": map[string]any{}})}, Refresh: &manifestwork.Delivery{ID: "d2", Hash: manifestwork.ContentHash("hard")}}))
		g.Expect(manifestwork.Held(both)).To(BeTrue(), "its cluster answered that the name is free: the work is created held, and delivers")

		app := pullApp(func(u *unstructured.Unstructured) { u.Object = requested.DeepCopy().Object; refreshCleared(u) })
		g.Expect(manifestwork.UpToDate(both, deliverOn(g, app, both))).To(BeTrue(), "the cleared refresh stays while the sync is carried: nothing to write")

		moved := app.DeepCopy()
		_ = unstructured.SetNestedField(moved.Object, "v2", "spec", "source", "targetRevision")
		changed := deliverOn(g, moved, both)
		g.Expect(manifestwork.ParseDeliveries(changed.Annotations[api.DeliveriesAnnotation]).Refresh).To(BeNil(), "a change rewrites the work anyway: the cleared refresh leaves with it")
		g.Expect(manifestwork.ParseDeliveries(changed.Annotations[api.DeliveriesAnnotation]).Sync.ID).To(Equal("d1"))

		g.Expect(manifestwork.AsksReconciledAt(both)).To(BeTrue(), "a work carrying a request asks for reconciledAt")
		syncCleared(app)
		withdrawn := deliverOn(g, app, both)
		g.Expect(withdrawn.Annotations).NotTo(HaveKey(api.DeliveriesAnnotation), "both cleared: they leave at once")
		g.Expect(manifestwork.AsksReconciledAt(withdrawn)).To(BeFalse(), "nor does it ask for reconciledAt, which changes at rest")
		g.Expect(manifestwork.UpToDate(withdrawn, deliverOn(g, app, withdrawn))).To(BeTrue(), "then nothing to write")
	})
	t.Run("refresh cleared first, its marker then dropped by the ApplicationSet controller", func(t *testing.T) {
		// The ApplicationSet controller rewrites the annotations of the Applications it generates
		// from its template: it drops the hub's record of the cleared refresh (seen in the lab).
		// The cluster's report that it finished the refresh keeps it in the work all the same.
		g := NewWithT(t)
		ids = 0
		both := deliverOn(g, requested, nil)
		app := pullApp(func(u *unstructured.Unstructured) {
			u.Object = requested.DeepCopy().Object
			refreshCleared(u)
			delete(u.Object["metadata"].(map[string]any)["annotations"].(map[string]any), api.RefreshDeliveredAnnotation)
		})
		f := Facts{App: app, Policy: Policy{ArgoCDNamespace: "argocd"}, Cluster: cluster, ClusterNamespace: true, Bindings: global,
			NewDeliveryID: func() string { ids++; return fmt.Sprintf("d%d", ids) }, Existing: both,
			Carried:  manifestwork.ParseDeliveries(both.Annotations[api.DeliveriesAnnotation]),
			Reported: manifestwork.Reported{RefreshDelivered: "d2", SyncDelivered: "d1", SyncHeld: "d1"}}
		f.Carried.Operation, f.Carried.RefreshValue = manifestwork.PayloadRequests(both)
		v, err := ladder(f)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(manifestwork.UpToDate(both, v.Work)).To(BeTrue(), "the refresh the cluster finished stays while the sync is carried: re-applying the sync could run it twice")
	})
	t.Run("sync cleared first, then the refresh", func(t *testing.T) {
		g := NewWithT(t)
		ids = 0
		both := deliverOn(g, requested, nil)
		app := pullApp(func(u *unstructured.Unstructured) { u.Object = requested.DeepCopy().Object; syncCleared(u) })
		g.Expect(manifestwork.UpToDate(both, deliverOn(g, app, both))).To(BeTrue(), "the cleared sync stays while the refresh is carried: nothing to write")
		refreshCleared(app)
		withdrawn := deliverOn(g, app, both)
		g.Expect(withdrawn.Annotations).NotTo(HaveKey(api.DeliveriesAnnotation), "both cleared: they leave at once")
		g.Expect(manifestwork.AsksReconciledAt(withdrawn)).To(BeFalse())
	})
	t.Run("a new sync while the cleared refresh is kept", func(t *testing.T) {
		g := NewWithT(t)
		ids = 0
		both := deliverOn(g, requested, nil)
		app := pullApp(func(u *unstructured.Unstructured) { u.Object = requested.DeepCopy().Object; refreshCleared(u) })
		app.Object["operation"] = map[string]any{"sync": map[string]any{"prune": true}}
		next := manifestwork.ParseDeliveries(deliverOn(g, app, both).Annotations[api.DeliveriesAnnotation])
		g.Expect(next.Refresh).To(BeNil(), "the new request rewrites the work: the cleared refresh is not applied again")
		g.Expect(next.Sync.ID).To(Equal("d3"))
	})
}

// A sync the managed cluster finished, still on the hub (its Argo CD has not compared since): the
// work keeps it while nothing else changes; a change rewrites the work without its .operation (the
// work agent would apply it again and Argo CD run it twice), and it stays out; once the hub cleared
// it, its record leaves at once.
func TestAFinishedSyncLeavesThePayloadWithAChange(t *testing.T) {
	g := NewWithT(t)
	cluster, global := deliveryTarget()
	ladder := func(app *unstructured.Unstructured, existing *workv1.ManifestWork, reported manifestwork.Reported) *workv1.ManifestWork {
		f := Facts{App: app, Policy: Policy{ArgoCDNamespace: "argocd"}, Cluster: cluster, ClusterNamespace: true, Bindings: global,
			NewDeliveryID: func() string { return "d1" }, Reported: reported}
		return deliver(g, f, existing)
	}
	operation := func(w *workv1.ManifestWork) any {
		op, _ := manifestwork.PayloadRequests(w)
		return op
	}
	requested := pullApp(func(u *unstructured.Unstructured) { u.Object["operation"] = map[string]any{"sync": map[string]any{}} })
	carrying := ladder(requested, nil, manifestwork.Reported{})
	g.Expect(operation(carrying)).NotTo(BeNil())

	running := manifestwork.Reported{SyncDelivered: "d1", SyncHeld: "d1", SyncStarted: "d1", Phase: "Running"}
	finished := manifestwork.Reported{SyncDelivered: "d1", SyncStarted: "d1", Phase: "Succeeded"}
	committed := requested.DeepCopy()
	g.Expect(unstructured.SetNestedField(committed.Object, "v2", "spec", "source", "targetRevision")).To(Succeed())

	g.Expect(operation(ladder(committed, carrying, running))).NotTo(BeNil(), "a running operation is never withdrawn")
	g.Expect(manifestwork.UpToDate(carrying, ladder(requested, carrying, finished))).To(BeTrue(), "finished, nothing else changed: nothing to write")

	changed := ladder(committed, carrying, finished)
	g.Expect(operation(changed)).To(BeNil(), "finished: applied again with the commit, it would run again")
	g.Expect(manifestwork.ParseDeliveries(changed.Annotations[api.DeliveriesAnnotation]).Sync).To(HaveField("Done", BeTrue()))
	g.Expect(manifestwork.UpToDate(changed, ladder(committed, changed, finished))).To(BeTrue(), "it stays out")

	// Terminated (argocd app terminate-op), then finished: the request to terminate leaves with the
	// .operation, or it would terminate the next operation the cluster starts.
	terminating := requested.DeepCopy()
	terminating.Object["status"] = map[string]any{"operationState": map[string]any{"phase": manifestwork.PhaseTerminating,
		"operation": manifestwork.WithDeliveryID(map[string]any{"sync": map[string]any{}}, "d1")}}
	terminated := ladder(terminating, carrying, running)
	g.Expect(workfixture.Payload(t, terminated, 0).Object).To(HaveKey("status"), "the running operation is asked to terminate")
	terminatingCommitted := terminating.DeepCopy()
	g.Expect(unstructured.SetNestedField(terminatingCommitted.Object, "v2", "spec", "source", "targetRevision")).To(Succeed())
	withdrawn := workfixture.Payload(t, ladder(terminatingCommitted, terminated, finished), 0).Object
	g.Expect(withdrawn).NotTo(HaveKey("operation"))
	g.Expect(withdrawn).NotTo(HaveKey("status"), "no request to terminate without its operation")

	cleared := committed.DeepCopy()
	delete(cleared.Object, "operation")
	cleared.Object["status"] = map[string]any{"operationState": map[string]any{"phase": "Succeeded",
		"operation": manifestwork.WithDeliveryID(map[string]any{"sync": map[string]any{}}, "d1")}}
	left := ladder(cleared, changed, finished)
	g.Expect(left.Annotations).NotTo(HaveKey(api.DeliveriesAnnotation), "the hub cleared it: it leaves at once")
	g.Expect(operation(left)).To(BeNil())
	g.Expect(manifestwork.AsksReconciledAt(left)).To(BeFalse())
}

// deliveryTarget is a cluster every namespace may deliver to.
func deliveryTarget() (*clusterv1.ManagedCluster, tenancy.Bindings) {
	cluster := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster1"}}
	global := tenancy.Bindings{Sets: []clusterv1beta2.ManagedClusterSet{{ObjectMeta: metav1.ObjectMeta{Name: "global"}, Spec: clusterv1beta2.ManagedClusterSetSpec{ClusterSelector: clusterv1beta2.ManagedClusterSelector{SelectorType: clusterv1beta2.LabelSelector, LabelSelector: &metav1.LabelSelector{}}}}}}
	return cluster, global
}

// deliver runs the ladder on f over the existing work (nil: none yet), with what that work
// carries, and returns the work it delivers.
func deliver(g Gomega, f Facts, existing *workv1.ManifestWork) *workv1.ManifestWork {
	if existing != nil {
		f.Existing = existing
		f.Carried = manifestwork.ParseDeliveries(existing.Annotations[api.DeliveriesAnnotation])
		f.Carried.Operation, f.Carried.RefreshValue = manifestwork.PayloadRequests(existing)
	}
	v, err := ladder(f)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(v.Refusal).To(BeNil())
	return v.Work
}

func setAnn(u *unstructured.Unstructured, k, v string) {
	a := u.GetAnnotations()
	a[k] = v
	u.SetAnnotations(a)
}

// A tenant's AppProject travels to the managed Argo CD's namespace, where Argo CD reads it, and
// its Application to the tenant's namespace.
func TestTenantPayloadLandsWhereArgoCDReadsIt(t *testing.T) {
	g := NewWithT(t)
	project := argocd.NewAppProject()
	project.SetName("team")
	project.Object["spec"] = map[string]any{"sourceNamespaces": []any{"team-a"}}
	app := pullApp(func(u *unstructured.Unstructured) {
		u.SetNamespace("team-a")
		u.Object["spec"].(map[string]any)["project"] = "team"
	})
	cluster := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster1", Labels: map[string]string{clusterv1beta2.ClusterSetLabel: "s"}}}
	v, err := ladder(Facts{App: app, Policy: Policy{ArgoCDNamespace: "argocd", PullNamespaces: []string{"team-a"}}, Cluster: cluster, ClusterNamespace: true, Project: project,
		Bindings: tenancy.Bindings{Sets: []clusterv1beta2.ManagedClusterSet{{ObjectMeta: metav1.ObjectMeta{Name: "s"}}}}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(v.Refusal).To(BeNil())
	var where []string
	for _, m := range v.Work.Spec.Workload.Manifests {
		u := &unstructured.Unstructured{}
		g.Expect(u.UnmarshalJSON(m.Raw)).To(Succeed())
		where = append(where, u.GetKind()+" "+u.GetNamespace())
	}
	g.Expect(where).To(ConsistOf("Application team-a", "AppProject argocd"))
}

func TestPolicyNamespaces(t *testing.T) {
	g := NewWithT(t)
	def := Policy{ArgoCDNamespace: "argocd"}
	g.Expect(def.Namespaces()).To(Equal([]string{"argocd"}), "the Argo CD namespace by default")
	g.Expect(def.Allows("argocd")).To(BeTrue())
	g.Expect(def.Allows("team-a")).To(BeFalse())
	listed := Policy{ArgoCDNamespace: "argocd", PullNamespaces: []string{"team-a"}}
	g.Expect(listed.Allows("team-a")).To(BeTrue())
	g.Expect(listed.Allows("argocd")).To(BeFalse(), "the list replaces the default")
	all := Policy{ArgoCDNamespace: "argocd", PullNamespaces: []string{"team-a", "*"}}
	g.Expect(all.Namespaces()).To(Equal([]string{"*"}))
	g.Expect(all.Allows("anything")).To(BeTrue())
}

// An Application of the same name that was on the managed cluster before: the hub refuses with a
// reason and writes nothing; once the name is free there, it creates the work held. The cluster
// answers through its claim probe: until it did, the Application is only asked about.
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
	ask, err := Ladder(facts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ask.Work).To(BeNil(), "nothing is written before the cluster answered")
	g.Expect(ask.Refusal).To(BeNil())
	g.Expect(*ask.Ask).To(Equal(manifestwork.ProbeEntry{Namespace: "argocd", Name: "guestbook-cluster1", Hub: types.NamespacedName{Namespace: "argocd", Name: "guestbook-cluster1"}}))
	plan, err := PlanDelivery(facts, ask, nil, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(plan.Steps).To(Equal([]Step{{Action: ActAsk, Ask: ask.Ask}}))
	// Asked, not answered yet: nothing more to write.
	facts.Probe, err = manifestwork.DesiredProbe("cluster1", []manifestwork.ProbeEntry{*ask.Ask})
	g.Expect(err).NotTo(HaveOccurred())
	waiting, err := Ladder(facts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(waiting.Ask).NotTo(BeNil())
	plan, err = PlanDelivery(facts, waiting, nil, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(plan.Steps).To(BeEmpty())

	facts.Probe = probeAnswering(facts.App, &testenv.OnCluster{UID: "u1"})
	foreign, err := Ladder(facts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(foreign.Work).To(BeNil())
	g.Expect(foreign.Refusal.Reason).To(Equal(ReasonManagedAppExists))
	g.Expect(foreign.Refusal.Message).To(ContainSubstring("cluster cluster1 already has an Application argocd/guestbook-cluster1"))
	g.Expect(foreign.Refusal.Message).To(ContainSubstring(api.HubApplicationAnnotation + "=argocd/guestbook-cluster1"))
	g.Expect(Revokes(foreign.Refusal.Reason)).To(BeFalse(), "nothing to freeze: nothing was written")

	facts.Probe = probeAnswering(facts.App, &testenv.OnCluster{UID: "u1", HubApplication: "argocd/other"})
	other, err := Ladder(facts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(other.Refusal.Reason).To(Equal(ReasonManagedAppExists), "delivered for another hub Application: not this one's")

	for name, there := range map[string]*testenv.OnCluster{
		"free": nil,
		"delivered for it before (a hub restored)": {UID: "u1", HubApplication: "argocd/guestbook-cluster1"},
	} {
		facts.Probe = probeAnswering(facts.App, there)
		ours, err := Ladder(facts)
		g.Expect(err).NotTo(HaveOccurred(), name)
		g.Expect(ours.Refusal).To(BeNil(), name)
		g.Expect(manifestwork.Held(ours.Work)).To(BeTrue(), "%s: created held, in one write", name)
	}

	// A work of an earlier release, pending: the claim is read from it, and the probe not at all.
	pending, err := manifestwork.DesiredWork(facts.App, nil, manifestwork.Target{Cluster: "cluster1", AppNamespace: "argocd"}, manifestwork.Deliveries{})
	g.Expect(err).NotTo(HaveOccurred())
	facts.Probe = nil
	facts.Existing = reported(pending, "there", "", "u1")
	v, err := Ladder(facts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(v.Refusal.Reason).To(Equal(ReasonManagedAppExists))
	facts.Existing = reported(pending, "absent", "", "")
	held, err := Ladder(facts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(manifestwork.Held(held.Work)).To(BeTrue())
	g.Expect(manifestwork.UpToDate(facts.Existing, held.Work)).To(BeFalse(), "holding is one write")
	facts.Existing = reported(held.Work, "there", "", "")
	again, err := Ladder(facts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(manifestwork.UpToDate(facts.Existing, again.Work)).To(BeTrue(), "a held work stays held: nothing to write")
}

// An Application waits for its cluster's answer silently, for as long as a delivered one's status
// may stay unconfirmed (--stale-after); then, or at once when the cluster is not available, the
// verdict says why it waits.
func TestLadderSaysWhenTheClusterDoesNotAnswer(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	facts := Facts{
		App:    pullApp(),
		Policy: Policy{ArgoCDNamespace: "argocd", StaleAfter: 5 * time.Minute},
		Cluster: &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster1", Labels: map[string]string{
			clusterv1beta2.ClusterSetLabel: "gitops",
		}}},
		Bindings:         tenancy.Bindings{Sets: []clusterv1beta2.ManagedClusterSet{{ObjectMeta: metav1.ObjectMeta{Name: "gitops"}}}},
		ClusterNamespace: true,
		Now:              now,
	}
	first, err := Ladder(facts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(first.Waiting).To(BeEmpty(), "asked now")
	g.Expect(first.Recheck).To(Equal(now.Add(5*time.Minute)), "looked at again once the answer is late")

	facts.Probe, err = manifestwork.DesiredProbe("cluster1", []manifestwork.ProbeEntry{*first.Ask})
	g.Expect(err).NotTo(HaveOccurred())
	manifestwork.StampWritten(facts.Probe, now.Add(-time.Minute))
	asked, err := Ladder(facts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(asked.Waiting).To(BeEmpty(), "asked a minute ago")
	g.Expect(asked.Recheck).To(Equal(now.Add(4*time.Minute)), "from the probe's write")

	manifestwork.StampWritten(facts.Probe, now.Add(-6*time.Minute))
	late, err := Ladder(facts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(late.Ask).NotTo(BeNil(), "still asked about")
	g.Expect(late.Work).To(BeNil())
	g.Expect(late.Recheck.IsZero()).To(BeTrue(), "the answer's arrival brings it back")
	g.Expect(late.Waiting).To(ContainSubstring("cluster cluster1 must first say whether Application argocd/guestbook-cluster1 is already there"))
	g.Expect(late.Waiting).To(ContainSubstring("ManifestWork cluster1/" + manifestwork.ProbeName))
	g.Expect(late.Waiting).To(ContainSubstring("its work agent has not applied the ManifestWork written then"))

	manifestwork.StampWritten(facts.Probe, now.Add(-time.Minute))
	facts.Cluster.Status.Conditions = []metav1.Condition{{Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionUnknown,
		Reason: "ManagedClusterLeaseUpdateStopped", LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}
	offline, err := Ladder(facts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(offline.Waiting).To(ContainSubstring("the ManagedCluster is not available (ManagedClusterLeaseUpdateStopped)"), "said at once")

	facts.Probe = probeAnswering(facts.App, nil)
	answered, err := Ladder(facts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(answered.Waiting).To(BeEmpty(), "answered: its work is written, an offline cluster gets it when back")
	g.Expect(answered.Work).NotTo(BeNil())
}
