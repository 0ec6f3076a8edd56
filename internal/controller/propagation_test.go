package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/propagation"
	"github.com/argocd-pull/argocd-pull/internal/tenancy"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
	"github.com/argocd-pull/argocd-pull/internal/test/workfixture"
)

func TestPushModelApplicationsAreLeftAlone(t *testing.T) {
	h := start(t)
	cluster := h.cluster()
	push := h.app("push", cluster, func(u *unstructured.Unstructured) { u.SetLabels(nil) })
	off := h.app("off", cluster, func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{api.PullLabel: "false"}) })
	h.app("pull", cluster) // proves the controller is running
	h.work("pull", cluster)

	h.noWorkFor("push")
	h.noWorkFor("off")
	h.g.Expect(h.getApp("push").GetResourceVersion()).To(Equal(push.GetResourceVersion()), "not written to")
	h.g.Expect(h.getApp("off").GetResourceVersion()).To(Equal(off.GetResourceVersion()), "not written to")
}

func TestCreatesManifestWorkInClusterNamespace(t *testing.T) {
	h := start(t)
	cluster := h.cluster()
	appSet := argocd.NewApplication()
	appSet.SetGroupVersionKind(argocd.ApplicationSetGVK)
	appSet.SetName("guestbook-allclusters-app-set")
	appSet.SetNamespace(h.ns)
	appSet.Object["spec"] = map[string]any{"generators": []any{}, "template": map[string]any{"metadata": map[string]any{}, "spec": map[string]any{
		"project": "default", "destination": map[string]any{}, "source": map[string]any{"repoURL": "x"}}}}
	h.create(appSet)
	name := "guestbook-" + strings.Repeat("x", 243) // a 253-character app name, the longest there is
	h.app(name, cluster, func(u *unstructured.Unstructured) {
		u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "argoproj.io/v1alpha1", Kind: "ApplicationSet", Name: appSet.GetName(), UID: appSet.GetUID()}})
		u.SetFinalizers([]string{argocd.ResourcesFinalizer})
		a := u.GetAnnotations()
		a[api.AppNamespaceAnnotation] = "openshift-gitops"
		u.SetAnnotations(a)
	})

	w := h.writtenWork(name, cluster)
	h.g.Expect(len(w.Name)).To(BeNumerically("<=", 253))
	h.g.Expect(w.Labels).To(HaveKeyWithValue(api.ApplicationSetLabel, "true"))
	h.g.Expect(w.Annotations).To(HaveKeyWithValue(api.HostingApplicationSetAnnotation, h.ns+"/guestbook-allclusters-app-set"))
	h.g.Expect(w.Annotations).To(HaveKeyWithValue(api.HubApplicationNamespaceAnnotation, h.ns))
	h.g.Expect(w.Annotations).To(HaveKeyWithValue(api.HubApplicationNameAnnotation, name))

	p := workfixture.Payload(t, w, 0)
	h.g.Expect(p.GetNamespace()).To(Equal("openshift-gitops"))
	h.g.Expect(p.GetFinalizers()).To(ConsistOf(argocd.ResourcesFinalizer))
	h.g.Expect(p.GetLabels()).NotTo(HaveKey(api.PullLabel))
	h.g.Expect(p.GetAnnotations()).NotTo(HaveKey(argocd.SkipReconcileAnnotation))
	h.g.Expect(p.GetAnnotations()).To(HaveKeyWithValue(api.HostingApplicationSetAnnotation, h.ns+"/guestbook-allclusters-app-set"))
	dest, _, _ := unstructured.NestedStringMap(p.Object, "spec", "destination")
	h.g.Expect(dest).To(Equal(map[string]string{"server": argocd.LocalServer, "namespace": "guestbook"}))
	h.g.Expect(w.Spec.ManifestConfigs[0].FeedbackScrapeType).To(Equal(workv1.FeedbackWatchType))
	// Creating a work costs one request: no event, and no Unknown status written while the
	// cluster has not answered (no status already says that).
	h.g.Consistently(func(g Gomega) {
		g.Expect(h.eventsFor(name)).To(BeEmpty())
		g.Expect(h.getApp(name).Object).NotTo(HaveKey("status"))
	}, 2*time.Second, 100*time.Millisecond).Should(Succeed())
	// The cluster's first answer is written.
	h.report(name, cluster, w.Generation, map[string]string{manifestwork.FeedbackHealth: "Healthy", manifestwork.FeedbackSync: "Synced"})
	h.g.Eventually(func() string { return statusField(h.getApp(name), "health", "status") }, timeout, interval).Should(Equal("Healthy"))
}

func TestAppProjectTravelsAndIsOrphaned(t *testing.T) {
	h := start(t)
	cluster := h.cluster()
	project := argocd.NewAppProject()
	project.SetName("team-web")
	project.SetNamespace(h.ns)
	project.Object["spec"] = map[string]any{"sourceRepos": []any{"*"}, "destinations": []any{map[string]any{"server": "*", "namespace": "*"}}}
	h.create(project)
	h.app("web", cluster, func(u *unstructured.Unstructured) { u.Object["spec"].(map[string]any)["project"] = "team-web" })

	w := h.work("web", cluster)
	h.g.Expect(w.Spec.Workload.Manifests).To(HaveLen(2))
	h.g.Expect(workfixture.Payload(t, w, 1).GetName()).To(Equal("team-web"))
	h.g.Expect(w.Spec.DeleteOption.PropagationPolicy).To(Equal(workv1.DeletePropagationPolicyTypeSelectivelyOrphan))
	h.g.Expect(w.Spec.DeleteOption.SelectivelyOrphan.OrphaningRules).To(ConsistOf(workv1.OrphaningRule{Group: "argoproj.io", Resource: "appprojects", Name: "team-web", Namespace: h.ns}))
}

func TestMissingAppProjectIsReported(t *testing.T) {
	h := start(t)
	cluster := h.cluster()
	h.app("web", cluster, func(u *unstructured.Unstructured) { u.Object["spec"].(map[string]any)["project"] = "nope" })
	h.g.Eventually(func() string { return h.condition("web") }, timeout, interval).Should(HavePrefix(propagation.ReasonProjectNotFound + ": AppProject nope not found"))
	h.noWorkFor("web")
}

func TestNoWriteWhenNothingChanged(t *testing.T) {
	h := start(t)
	cluster := h.cluster()
	h.app("web", cluster)
	w := h.work("web", cluster)

	// Touch what the controllers watch without changing what the work carries: the app's status
	// and the cluster's labels both requeue the Application.
	h.updateApp("web", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "2026-11-21T00:00:00Z", "status", "reconciledAt")
	})
	h.labelCluster(cluster, "touched", "yes")
	h.g.Consistently(func() string {
		got := &workv1.ManifestWork{}
		h.g.Expect(h.c.Get(context.Background(), client.ObjectKeyFromObject(w), got)).To(Succeed())
		return got.ResourceVersion
	}, 3*time.Second, 100*time.Millisecond).Should(Equal(w.ResourceVersion))

	h.updateApp("web", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "v2", "spec", "source", "targetRevision")
	})
	h.g.Eventually(func() string {
		got := h.work("web", cluster)
		rev, _, _ := unstructured.NestedString(workfixture.Payload(t, got, 0).Object, "spec", "source", "targetRevision")
		return rev
	}, timeout, interval).Should(Equal("v2"))
}

func TestDeleteWithResourcesFinalizerWaitsForTheWork(t *testing.T) {
	h := start(t)
	cluster := h.cluster()
	h.app("web", cluster, func(u *unstructured.Unstructured) { u.SetFinalizers([]string{argocd.ResourcesFinalizer}) })
	w := h.work("web", cluster)
	// Stand in for the work agent, which holds the work until the managed cluster cleaned up.
	w.Finalizers = []string{workv1.ManifestWorkFinalizer}
	h.g.Expect(h.c.Update(context.Background(), w)).To(Succeed())

	h.g.Expect(h.c.Delete(context.Background(), h.getApp("web"))).To(Succeed())
	h.g.Eventually(func() bool {
		got := &workv1.ManifestWork{}
		return h.c.Get(context.Background(), client.ObjectKeyFromObject(w), got) == nil && !got.DeletionTimestamp.IsZero()
	}, timeout, interval).Should(BeTrue(), "the work is being deleted")
	h.g.Consistently(func() []string { return h.getApp("web").GetFinalizers() }, 2*time.Second, 100*time.Millisecond).
		Should(ConsistOf(argocd.ResourcesFinalizer), "the finalizer stays while the managed cluster cleans up")

	h.g.Eventually(func() error {
		got := &workv1.ManifestWork{}
		if err := h.c.Get(context.Background(), client.ObjectKeyFromObject(w), got); err != nil {
			return err
		}
		got.Finalizers = nil
		return h.c.Update(context.Background(), got)
	}, timeout, interval).Should(Succeed())
	h.g.Eventually(func() bool {
		err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: "web"}, argocd.NewApplication())
		return apierrors.IsNotFound(err)
	}, timeout, interval).Should(BeTrue(), "the Application is gone once its work is")
}

// Argo CD finishes an operation before it acts on a deletion: a cascading delete of an Application
// whose managed cluster runs one (stuck in a hook, say) first asks that cluster to terminate it,
// and deletes the work once the operation finished there.
func TestDeleteTerminatesTheRunningOperationFirst(t *testing.T) {
	h := start(t)
	cluster := h.cluster()
	h.app("web", cluster, func(u *unstructured.Unstructured) { u.SetFinalizers([]string{argocd.ResourcesFinalizer}) })
	w := h.work("web", cluster)
	h.report("web", cluster, w.Generation, map[string]string{manifestwork.FeedbackPhase: "Running", manifestwork.FeedbackStartedAt: "2026-11-25T10:00:00Z"})
	// Held: the managed cluster reported its Application the hub's (a pending work carries
	// nothing of the hub's there yet, and is deleted at once).
	h.g.Eventually(func() bool { return manifestwork.Held(h.work("web", cluster)) }, timeout, interval).Should(BeTrue())
	h.g.Eventually(func() string { return statusField(h.getApp("web"), "operationState", "phase") }, timeout, interval).Should(Equal("Running"))

	h.g.Expect(h.c.Delete(context.Background(), h.getApp("web"))).To(Succeed())
	var marked *workv1.ManifestWork
	h.g.Eventually(func() string {
		marked = &workv1.ManifestWork{}
		if err := h.c.Get(context.Background(), client.ObjectKeyFromObject(w), marked); err != nil {
			return err.Error()
		}
		phase, _, _ := unstructured.NestedString(workfixture.Payload(t, marked, 0).Object, "status", "operationState", "phase")
		return phase
	}, timeout, interval).Should(Equal(manifestwork.PhaseTerminating), "the work asks the managed cluster to terminate the operation")
	h.g.Expect(marked.DeletionTimestamp.IsZero()).To(BeTrue())
	h.g.Consistently(func() bool {
		got := &workv1.ManifestWork{}
		return h.c.Get(context.Background(), client.ObjectKeyFromObject(w), got) == nil && got.DeletionTimestamp.IsZero()
	}, 2*time.Second, 100*time.Millisecond).Should(BeTrue(), "kept while the operation runs there")

	// The agent applied it, and the managed cluster's Argo CD terminated the operation.
	h.agentWrites("web", cluster, marked.Generation, map[string]string{manifestwork.FeedbackPhase: "Failed", manifestwork.FeedbackStartedAt: "2026-11-25T10:00:00Z",
		manifestwork.FeedbackTerminateDelivered: "1"})
	h.g.Eventually(func() bool {
		got := &workv1.ManifestWork{}
		err := h.c.Get(context.Background(), client.ObjectKeyFromObject(w), got)
		return apierrors.IsNotFound(err) || err == nil && !got.DeletionTimestamp.IsZero()
	}, timeout, interval).Should(BeTrue(), "deleted once the operation finished")
}

func TestDeleteWithoutFinalizerRemovesTheOrphanedWork(t *testing.T) {
	h := start(t)
	cluster := h.cluster()
	h.app("web", cluster)
	h.work("web", cluster)
	h.g.Expect(h.c.Delete(context.Background(), h.getApp("web"))).To(Succeed())
	h.workGone("web", cluster)
}

func TestRemovingThePullLabelRemovesTheWork(t *testing.T) {
	h := start(t)
	cluster := h.cluster()
	h.app("web", cluster)
	h.work("web", cluster)
	h.updateApp("web", func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{api.PullLabel: "false"}) })
	h.workGone("web", cluster)
}

func TestSweepRemovesWorksWhoseApplicationIsGone(t *testing.T) {
	h := start(t)
	cluster := h.cluster()
	orphan := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{
			Name: manifestwork.WorkName(h.ns, "deleted-while-we-were-down"), Namespace: cluster,
			Labels: map[string]string{api.ManagedByLabel: api.ManagedByValue},
			Annotations: map[string]string{
				api.HubApplicationNamespaceAnnotation: h.ns,
				api.HubApplicationNameAnnotation:      "deleted-while-we-were-down",
			},
		},
	}
	h.create(orphan)
	foreign := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: "not-ours", Namespace: cluster}}
	h.create(foreign)

	h.workGone("deleted-while-we-were-down", cluster)
	h.g.Expect(h.c.Get(context.Background(), client.ObjectKeyFromObject(foreign), &workv1.ManifestWork{})).To(Succeed(), "works of others are left alone")
}

func TestRetargetMovesTheWork(t *testing.T) {
	h := start(t)
	first, second := h.cluster(), h.cluster()
	h.app("web", first)
	h.work("web", first)
	h.updateApp("web", func(u *unstructured.Unstructured) { setCluster(u, second) })
	h.work("web", second)
	h.workGone("web", first)
	h.g.Eventually(func() []string { return h.eventsFor("web") }, timeout, interval).
		Should(ContainElement(ContainSubstring("Retargeted: Moved from cluster " + first + " to cluster " + second)))
}

// Each bad input: a condition and one Warning event a user can act on, no work, nothing else
// affected, and the Application delivered once the input is fixed.
func TestBadInputIsReportedAndNothingElseIsAffected(t *testing.T) {
	tests := map[string]struct {
		mutate  func(h *harness, app *unstructured.Unstructured)
		reason  string
		message string
		fix     func(h *harness, name string)
	}{
		"unknown ManagedCluster": {
			mutate:  func(h *harness, app *unstructured.Unstructured) { setCluster(app, "does-not-exist") },
			reason:  propagation.ReasonClusterNotFound,
			message: "ManagedCluster does-not-exist does not exist on the hub",
		},
		"cluster namespace missing": {
			mutate: func(h *harness, app *unstructured.Unstructured) {
				name := "c-nons-" + strings.ToLower(h.ns[len(h.ns)-5:])
				h.createClusterWithoutNamespace(name)
				setCluster(app, name)
			},
			reason:  propagation.ReasonNamespaceMissing,
			message: "does not exist on the hub yet",
			fix: func(h *harness, name string) {
				h.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterOf(h.getApp(name))}})
			},
		},
		"payload too large": {
			mutate: func(h *harness, app *unstructured.Unstructured) {
				// Inline Helm values: the hub accepts them, a ManifestWork may not carry them.
				_ = unstructured.SetNestedField(app.Object, strings.Repeat("x", manifestwork.MaxManifestsSize), "spec", "source", "helm", "values")
			},
			reason:  propagation.ReasonPayloadTooLarge,
			message: "the limit is 512000",
			fix: func(h *harness, name string) {
				h.updateApp(name, func(u *unstructured.Unstructured) {
					unstructured.RemoveNestedField(u.Object, "spec", "source", "helm")
				})
			},
		},
		"label not a bool": {
			mutate: func(h *harness, app *unstructured.Unstructured) {
				app.SetLabels(map[string]string{api.PullLabel: "yes"})
			},
			reason:  propagation.ReasonInvalidMarkers,
			message: `label apps.open-cluster-management.io/pull-to-ocm-managed-cluster is "yes"`,
			fix: func(h *harness, name string) {
				h.updateApp(name, func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{api.PullLabel: "true"}) })
			},
		},
		"empty cluster annotation": {
			mutate:  func(h *harness, app *unstructured.Unstructured) { setCluster(app, "") },
			reason:  propagation.ReasonInvalidMarkers,
			message: "must name the managed cluster",
		},
		"invalid cluster annotation": {
			mutate:  func(h *harness, app *unstructured.Unstructured) { setCluster(app, "Cluster_1") },
			reason:  propagation.ReasonInvalidMarkers,
			message: `annotation apps.open-cluster-management.io/ocm-managed-cluster is "Cluster_1", not a cluster name`,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			h := start(t)
			good := h.cluster()
			h.app("healthy-neighbour", good)
			bad := h.newApp("bad", good)
			tt.mutate(h, bad)
			h.create(bad)

			h.g.Eventually(func() string { return h.condition("bad") }, timeout, interval).Should(And(HavePrefix(tt.reason+": "), ContainSubstring(tt.message)))
			h.g.Eventually(func() []string { return h.eventsFor("bad") }, timeout, interval).Should(ContainElement(HavePrefix(tt.reason + ": ")))
			h.g.Expect(h.warnings("bad")).To(ConsistOf(tt.reason), "a Warning event, as the README's table of bad input says")
			h.noWorkFor("bad")
			h.work("healthy-neighbour", good)
			h.g.Expect(h.eventsFor("bad")).To(HaveLen(1), "one event for one transition, not one per retry")

			if tt.fix != nil {
				tt.fix(h, "bad")
				h.work("bad", clusterOf(h.getApp("bad")))
				h.g.Eventually(func() string { return h.condition("bad") }, timeout, interval).Should(BeEmpty(), "the condition clears once delivered")
			}
		})
	}
}

func TestNamespaceNotAllowedIsIgnoredWithAnEvent(t *testing.T) {
	h := start(t, func(o *Options, _ string) { o.ArgoCDNamespace = "argocd-elsewhere" })
	cluster := h.cluster()
	h.app("web", cluster)
	h.g.Eventually(func() string { return h.condition("web") }, timeout, interval).
		Should(ContainSubstring(propagation.ReasonNamespaceNotAllowed + ": pull-model Applications are not taken from namespace " + h.ns + "; the operator allows argocd-elsewhere"))
	h.g.Eventually(func() []string { return h.eventsFor("web") }, timeout, interval).Should(ContainElement(HavePrefix(propagation.ReasonNamespaceNotAllowed)))
	h.g.Expect(h.warnings("web")).To(ContainElement(propagation.ReasonNamespaceNotAllowed), "a refusal is a Warning event")
	h.noWorkFor("web")
}

func TestPullNamespacesFlagAllowsListedNamespaces(t *testing.T) {
	team := testenv.Get(t).Namespace(t)
	h := start(t, func(o *Options, _ string) { o.PullNamespaces = []string{"team-x", team} })
	cluster := h.cluster()
	tenant := h.tenantIn(team, cluster)
	h.project("team", team)
	tenant.app("web", cluster, onProject("team"))
	tenant.work("web", cluster)
	h.app("platform", cluster)
	h.g.Eventually(func() string { return h.condition("platform") }, timeout, interval).Should(HavePrefix(propagation.ReasonNamespaceNotAllowed), "the list replaces the default")
}

func TestClusterNotBoundToNamespaceIsRefused(t *testing.T) {
	h := start(t)
	unbound := h.unboundCluster()
	h.app("web", unbound)
	h.g.Eventually(func() string { return h.condition("web") }, timeout, interval).Should(Equal(propagation.ReasonClusterNotBound + ": ManagedCluster " + unbound +
		" is not bound to namespace " + h.ns + ": create a ManagedClusterSetBinding in " + h.ns + " for a set that contains it (a PlacementDecision is not a binding)"))
	h.g.Eventually(func() []string { return h.warnings("web") }, timeout, interval).Should(ContainElement(propagation.ReasonClusterNotBound))
	h.noWorkFor("web")

	// Attack (issue 22, row 3): the tenant writes a PlacementDecision in its own namespace naming
	// the unbound cluster. A decision is not a binding: still refused, still nothing written.
	decision := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Name: "p-decision-1", Namespace: h.ns,
		Labels: map[string]string{clusterv1beta1.PlacementLabel: "p"}}}
	h.create(decision)
	decision.Status.Decisions = []clusterv1beta1.ClusterDecision{{ClusterName: unbound}}
	h.g.Expect(h.c.Status().Update(context.Background(), decision)).To(Succeed())
	h.updateApp("web", func(u *unstructured.Unstructured) {
		labels := u.GetLabels()
		labels["touched"] = "yes"
		u.SetLabels(labels)
	})
	h.g.Consistently(func() string { return h.condition("web") }, 2*time.Second, 100*time.Millisecond).Should(HavePrefix(propagation.ReasonClusterNotBound))
	h.noWorkFor("web")
}

// Attack (issue 22, row 5): the hub itself is never a target, by name or by OCM's label, even when
// a set bound to the namespace contains it.
func TestTheHubIsNeverATarget(t *testing.T) {
	h := start(t)
	byLabel := h.cluster()
	h.labelCluster(byLabel, tenancy.LocalClusterLabel, "true")
	h.app("web", byLabel)
	h.g.Eventually(func() string { return h.condition("web") }, timeout, interval).Should(HavePrefix(propagation.ReasonHubNotATarget + ": ManagedCluster " + byLabel + " is the hub itself"))
	h.noWorkFor("web")

	h.app("local", tenancy.LocalClusterName)
	h.g.Eventually(func() string { return h.condition("local") }, timeout, interval).Should(HavePrefix(propagation.ReasonHubNotATarget))
	h.noWorkFor("local")
}

func setCluster(app *unstructured.Unstructured, cluster string) {
	a := app.GetAnnotations()
	a[api.ClusterAnnotation] = cluster
	app.SetAnnotations(a)
}

func clusterOf(app *unstructured.Unstructured) string {
	return app.GetAnnotations()[api.ClusterAnnotation]
}

// An Application of the same namespace and name on the managed cluster before the hub delivers
// one (made there by hand, or by the cluster's own Argo CD): the hub asks the cluster through its
// claim probe, which only reads, and writes nothing for the Application, so nothing of the other
// is changed or deleted; the hub Application is refused with the reason and shows none of the
// other's status; once the other is gone the hub delivers its own, changes included.
// test/e2e's TestAnApplicationAlreadyOnTheManagedClusterIsLeftAlone runs the same with the real
// work agent.
func TestAnApplicationAlreadyOnTheClusterIsLeftAlone(t *testing.T) {
	h := start(t)
	cluster := h.cluster()
	// The cluster has one: its annotation names no hub Application.
	h.onClusterHas(cluster, h.ns, "web", &testenv.OnCluster{UID: "theirs"})
	h.app("web", cluster, func(u *unstructured.Unstructured) { u.SetFinalizers([]string{argocd.ResourcesFinalizer}) })
	probe := &workv1.ManifestWork{}
	h.g.Eventually(func() error {
		return h.c.Get(context.Background(), types.NamespacedName{Namespace: cluster, Name: manifestwork.ProbeName}, probe)
	}, timeout, interval).Should(Succeed(), "the cluster is asked")
	h.g.Expect(manifestwork.ProbeEntries(probe)).To(ContainElement(manifestwork.ProbeEntry{Namespace: h.ns, Name: "web", Hub: types.NamespacedName{Namespace: h.ns, Name: "web"}}))
	h.g.Expect(probe.Spec.ManifestConfigs[0].UpdateStrategy.Type).To(Equal(workv1.UpdateStrategyTypeReadOnly))

	want := propagation.ReasonManagedAppExists + ": cluster " + cluster + " already has an Application " + h.ns + "/web that this hub did not deliver"
	h.g.Eventually(func() string { return h.condition("web") }, timeout, interval).Should(HavePrefix(want))
	h.g.Eventually(func() []string { return h.eventsFor("web") }, timeout, interval).Should(ContainElement(HavePrefix(propagation.ReasonManagedAppExists+": cluster "+cluster)),
		"events are sent asynchronously")
	h.g.Consistently(func() []string {
		app := h.getApp("web")
		return []string{statusField(app, "health", "status"), statusField(app, "sync", "status"), statusField(app, "sync", "revision")}
	}, time.Second, 100*time.Millisecond).Should(HaveEach(BeElementOf("", "Unknown")), "nothing of the other Application's status: the probe does not ask for it")

	// A change on the hub is not delivered over it: no work is written.
	h.updateApp("web", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "v2", "spec", "source", "targetRevision")
	})
	h.g.Consistently(func() []workv1.ManifestWork { return h.worksOf("web") }, 2*time.Second, 100*time.Millisecond).
		Should(BeEmpty(), "no work while another Application holds the name")
	h.g.Expect(h.condition("web")).To(HavePrefix(want), "the refusal stays through the probe's writes")

	// The other one is deleted there: the agent reports the name free, and the hub delivers.
	h.onClusterHas(cluster, h.ns, "web", nil)
	h.g.Eventually(func() string { return h.condition("web") }, timeout, interval).Should(BeEmpty())
	held := h.work("web", cluster)
	h.g.Expect(manifestwork.Held(held)).To(BeTrue(), "created held, in one write")
	rev, _, _ := unstructured.NestedString(workfixture.Payload(t, held, 0).Object, "spec", "source", "targetRevision")
	h.g.Expect(rev).To(Equal("v2"), "what changed meanwhile is delivered")
	h.report("web", cluster, held.Generation, map[string]string{manifestwork.FeedbackHealth: "Healthy", manifestwork.FeedbackSync: "Synced"})
	h.g.Eventually(func() string { return statusField(h.getApp("web"), "health", "status") }, timeout, interval).Should(Equal("Healthy"))
}
