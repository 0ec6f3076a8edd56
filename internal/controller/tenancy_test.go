package controller

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/propagation"
	"github.com/argocd-pull/argocd-pull/internal/report"
	"github.com/argocd-pull/argocd-pull/internal/resourcetree"
	"github.com/argocd-pull/argocd-pull/internal/tenancy"
	"github.com/argocd-pull/argocd-pull/internal/test/searchtest"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
	"github.com/argocd-pull/argocd-pull/internal/test/workfixture"
)

// The attack suite of issue 22: each test acts as a tenant with rights in its own hub namespace
// only, against the real apiserver and the real manager.

// tenant returns a harness for a new tenant namespace, the cluster bound to it as well. The
// manager must take Applications from it (PullNamespaces "*").
func (h *harness) tenant(cluster string) *harness {
	h.t.Helper()
	return h.tenantIn(testenv.Get(h.t).Namespace(h.t), cluster)
}

// tenantIn is tenant for an existing namespace.
func (h *harness) tenantIn(ns, cluster string) *harness {
	h.t.Helper()
	t := *h
	t.ns = ns
	h.create(&clusterv1beta2.ManagedClusterSetBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "set-" + cluster, Namespace: t.ns},
		Spec:       clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "set-" + cluster},
	})
	h.t.Cleanup(t.removeApplications)
	return &t
}

// project creates an AppProject in the Argo CD namespace whose sourceNamespaces are given.
func (h *harness) project(name string, sourceNamespaces ...any) {
	h.t.Helper()
	p := argocd.NewAppProject()
	p.SetName(name)
	p.SetNamespace(h.ns)
	p.Object["spec"] = map[string]any{"sourceRepos": []any{"*"}, "sourceNamespaces": sourceNamespaces,
		"destinations": []any{map[string]any{"server": "*", "namespace": "*"}}}
	h.create(p)
}

func onProject(name string) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) { u.Object["spec"].(map[string]any)["project"] = name }
}

func landingIn(ns string) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		a := u.GetAnnotations()
		a[api.AppNamespaceAnnotation] = ns
		u.SetAnnotations(a)
	}
}

func allNamespaces(o *Options, _ string) { o.PullNamespaces = []string{"*"} }

// Row 1: a tenant names the managed Argo CD's namespace and the platform's AppProject. Refused
// twice over, nothing written; its own namespace with a project that lists it is delivered, the
// project going where the managed Argo CD reads it.
func TestATenantLandsOnlyInItsOwnNamespace(t *testing.T) {
	h := start(t, allNamespaces)
	cluster := h.cluster()
	team := h.tenant(cluster)
	h.project("platform")
	h.project("team", team.ns)

	team.app("escape", cluster, onProject("platform"), landingIn(h.ns))
	h.g.Eventually(func() string { return team.condition("escape") }, timeout, interval).
		Should(HavePrefix(propagation.ReasonAppNamespace + ": an Application of namespace " + team.ns + " lands in " + team.ns + " on the managed cluster, not in " + h.ns))
	team.noWorkFor("escape")

	team.app("borrow", cluster, onProject("platform"))
	h.g.Eventually(func() string { return team.condition("borrow") }, timeout, interval).
		Should(HavePrefix(propagation.ReasonProjectNotPermitted + ": AppProject platform does not permit Applications of namespace " + team.ns))
	team.noWorkFor("borrow")

	team.app("default", cluster)
	h.g.Eventually(func() string { return team.condition("default") }, timeout, interval).Should(HavePrefix(propagation.ReasonProjectNotFound))
	team.noWorkFor("default")

	team.app("own", cluster, onProject("team"))
	w := team.work("own", cluster)
	h.g.Expect(workfixture.Payload(t, w, 0).GetNamespace()).To(Equal(team.ns), "the Application lands in the tenant's namespace")
	h.g.Expect(workfixture.Payload(t, w, 1).GetKind()).To(Equal("AppProject"))
	h.g.Expect(workfixture.Payload(t, w, 1).GetNamespace()).To(Equal(h.ns), "its project where the managed Argo CD reads projects")
	h.g.Expect(team.condition("own")).To(BeEmpty())

	// The platform's own Applications may name any managed namespace, as the documents' YAML does.
	h.app("platform", cluster, landingIn("kube-system"))
	h.g.Expect(workfixture.Payload(t, h.work("platform", cluster), 0).GetNamespace()).To(Equal("kube-system"))
}

// A namespace the operator grants to a tenant (--grant-managed-namespaces) is one it may land in.
func TestGrantedManagedNamespaces(t *testing.T) {
	var team *harness
	h := start(t, allNamespaces, func(o *Options, _ string) {
		o.ManagedNamespaceGrants = tenancy.Grants{}
	})
	cluster := h.cluster()
	team = h.tenant(cluster)
	h.project("team", team.ns)
	team.app("prod", cluster, onProject("team"), landingIn("prod"))
	h.g.Eventually(func() string { return team.condition("prod") }, timeout, interval).
		Should(ContainSubstring("--grant-managed-namespaces " + team.ns + "=prod"))

	h.stop()
	granted := start(t, allNamespaces, func(o *Options, _ string) {
		o.ArgoCDNamespace = h.ns
		o.ManagedNamespaceGrants = tenancy.Grants{team.ns: {"prod"}}
	})
	granted.g.Eventually(func() string { return team.condition("prod") }, timeout, interval).Should(BeEmpty())
	h.g.Expect(workfixture.Payload(t, team.work("prod", cluster), 0).GetNamespace()).To(Equal("prod"))
}

// Row 2: a second hub Application whose payload lands on the same cluster, namespace and name is
// refused with a condition naming the first; the first's work is never touched.
func TestOneHubApplicationPerManagedApplication(t *testing.T) {
	h := start(t, allNamespaces)
	cluster := h.cluster()
	team := h.tenant(cluster)
	h.project("team", team.ns)

	// The platform delivers "web" into the tenant's namespace; the tenant then names one "web" too.
	h.app("web", cluster, landingIn(team.ns))
	first := h.work("web", cluster)
	team.app("web", cluster, onProject("team"))
	h.g.Eventually(func() string { return team.condition("web") }, timeout, interval).
		Should(Equal(propagation.ReasonAlreadyDelivered + ": Application " + h.ns + "/web already delivers the Application " + team.ns + "/web to cluster " + cluster + "; one hub Application per managed-cluster Application"))
	team.noWorkFor("web")
	h.g.Consistently(func() string {
		return h.work("web", cluster).ResourceVersion
	}, 2*time.Second, 200*time.Millisecond).Should(Equal(first.ResourceVersion), "the first Application's work is left alone")

	// Once the first goes, the second delivers.
	h.g.Expect(h.c.Delete(context.Background(), h.getApp("web"))).To(Succeed())
	h.g.Eventually(func() string { return team.condition("web") }, timeout, interval).Should(BeEmpty())
	team.work("web", cluster)
}

// Two works carrying one managed-cluster Application (both written before either was seen, a
// race): the younger one's Application is refused, and its work deleted only once the older one is
// applied on the cluster, so that the work agent drops the younger one's ownership and never the
// Application itself.
func TestTheYoungerWorkYieldsOnceTheOlderIsApplied(t *testing.T) {
	h := start(t, allNamespaces)
	cluster := h.cluster()
	team := h.tenant(cluster)
	h.project("team", team.ns)
	h.app("web", cluster, landingIn(team.ns))
	first := h.writtenWork("web", cluster) // not applied yet
	// The tenant's Application a second later (creation times have a one-second granularity;
	// within one second the names decide which work is first), when the controller's cache has the
	// first work: otherwise its own reconcile may write the younger work this test writes below.
	time.Sleep(time.Until(first.CreationTimestamp.Add(1100 * time.Millisecond)))
	web := team.app("web", cluster, onProject("team"))
	h.g.Eventually(func() string { return team.condition("web") }, timeout, interval).Should(HavePrefix(propagation.ReasonAlreadyDelivered))
	// The tenant's work, as a reconcile that had not yet seen the first's would have written it.
	younger, err := manifestwork.DesiredWork(web, nil, manifestwork.Target{Cluster: cluster, AppNamespace: team.ns}, manifestwork.Deliveries{})
	h.g.Expect(err).NotTo(HaveOccurred())
	h.create(younger)
	h.g.Consistently(func() []workv1.ManifestWork { return team.worksOf("web") }, 2*time.Second, 200*time.Millisecond).
		Should(HaveLen(1), "kept while the first is not applied: deleting it could delete the managed Application")

	h.report("web", cluster, first.Generation, nil)
	h.g.Eventually(func() []workv1.ManifestWork { return team.worksOf("web") }, timeout, interval).Should(BeEmpty(), "yielded once the first is applied")
	h.g.Expect(h.work("web", cluster).UID).To(Equal(first.UID), "the first's work is untouched")
}

// The same race the other way round: the work created second is the older one (created within
// the same second, its name sorts first; say a former leader wrote it). The Application whose work
// the controller wrote first must learn of it from the other work's creation, though nothing
// wakes it otherwise (its own work's creation does not: the controller wrote it), and yield.
func TestTheOlderWorkCreatedSecondStillWins(t *testing.T) {
	h := start(t, allNamespaces)
	cluster := h.cluster()
	team := h.tenant(cluster)
	h.project("team", team.ns)
	for attempt := range 5 {
		name := fmt.Sprintf("web%d", attempt)
		// first is the Application the controller delivers; second's work is written by the
		// test. second's work must sort first: swap the platform's and the tenant's roles as the
		// names fall.
		first, second := h, team
		if manifestwork.WorkName(h.ns, name) < manifestwork.WorkName(team.ns, name) {
			first, second = team, h
		}
		mutate := func(x *harness) func(*unstructured.Unstructured) {
			if x == team {
				return onProject("team")
			}
			return landingIn(team.ns)
		}
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 20*time.Millisecond)))
		first.app(name, cluster, mutate(first))
		firstWork := first.work(name, cluster)
		// second's Application first (refused: first's work carries its managed Application),
		// so that its work, written next, is not swept as an orphan.
		app := second.app(name, cluster, mutate(second))
		secondWork, err := manifestwork.DesiredWork(app, nil, manifestwork.Target{Cluster: cluster, AppNamespace: team.ns}, manifestwork.Deliveries{})
		h.g.Expect(err).NotTo(HaveOccurred())
		if err := h.c.Create(context.Background(), secondWork); err != nil {
			t.Logf("attempt %d: writing the second work: %v; again", attempt, err)
			continue
		}
		if !secondWork.CreationTimestamp.Equal(&firstWork.CreationTimestamp) {
			t.Logf("attempt %d: the two works were created in different seconds; again", attempt)
			continue
		}
		h.g.Eventually(func() string { return first.condition(name) }, timeout, interval).Should(HavePrefix(propagation.ReasonAlreadyDelivered),
			"the Application whose work was written first, but is the younger, is refused")
		h.g.Eventually(func() string { return second.condition(name) }, timeout, interval).Should(BeEmpty())
		h.g.Expect(first.worksOf(name)).To(HaveLen(1), "kept while the older is not applied")
		second.report(name, cluster, second.work(name, cluster).Generation, nil)
		h.g.Eventually(func() []workv1.ManifestWork { return first.worksOf(name) }, timeout, interval).Should(BeEmpty(), "yielded once the older is applied")
		h.g.Expect(second.work(name, cluster).UID).To(Equal(secondWork.UID), "the older work is untouched")
		return
	}
	t.Fatal("no attempt created the two works within one second")
}

// Row 6: a tenant names its Application so that its work name is another Application's (found by
// brute force against the short hash of earlier releases; here the victim's work simply has that
// name). The controller never writes or deletes a work whose back-link names another Application.
func TestAWorkOfAnotherApplicationIsNeverTaken(t *testing.T) {
	h := start(t, allNamespaces)
	cluster := h.cluster()
	victims := h.tenant(cluster)
	h.project("victims", victims.ns)
	payroll := victims.newApp("payroll", cluster)
	onProject("victims")(payroll)
	work, err := manifestwork.DesiredWork(payroll, nil, manifestwork.Target{Cluster: cluster, AppNamespace: victims.ns}, manifestwork.Deliveries{})
	h.g.Expect(err).NotTo(HaveOccurred())
	work.Name = manifestwork.WorkName(h.ns, "attacker")
	h.create(work)
	h.create(payroll)
	h.g.Eventually(func() string { return victims.condition("payroll") }, timeout, interval).Should(BeEmpty())
	h.g.Expect(victims.worksOf("payroll")).To(HaveLen(1))

	h.app("attacker", cluster)
	h.g.Eventually(func() string { return h.condition("attacker") }, timeout, interval).
		Should(HavePrefix(propagation.ReasonWorkNameTaken + ": the ManifestWork name " + cluster + "/" + work.Name + " belongs to Application " + victims.ns + "/payroll"))
	h.g.Expect(h.c.Delete(context.Background(), h.getApp("attacker"))).To(Succeed())
	h.g.Consistently(func() []workv1.ManifestWork { return victims.worksOf("payroll") }, 2*time.Second, 200*time.Millisecond).
		Should(ConsistOf(HaveField("UID", work.UID)), "deleting the attacker's Application leaves the victim's work")
	h.g.Expect(workfixture.Payload(t, &victims.worksOf("payroll")[0], 0).GetName()).To(Equal("payroll"), "never written by the attacker")
}

// Works named by an earlier release (8 hex digits of hash) are kept and updated in place: nothing
// on the cluster is redeployed by the longer names.
func TestWorksOfAnEarlierReleaseKeepTheirName(t *testing.T) {
	h := start(t)
	cluster := h.cluster()
	app := h.newApp("web", cluster)
	target := manifestwork.Target{Cluster: cluster, AppNamespace: h.ns}
	old, err := manifestwork.DesiredWork(app, nil, target, manifestwork.Deliveries{})
	h.g.Expect(err).NotTo(HaveOccurred())
	old.Name = "web-0123abcd"
	old.Annotations[api.SpecHashAnnotation] = "from-an-earlier-release"
	h.create(old)
	h.create(app)
	h.g.Eventually(func() string {
		w := &workv1.ManifestWork{}
		h.g.Expect(h.c.Get(context.Background(), types.NamespacedName{Namespace: cluster, Name: old.Name}, w)).To(Succeed())
		return w.Annotations[api.SpecHashAnnotation]
	}, timeout, interval).ShouldNot(Equal("from-an-earlier-release"), "the old work is brought up to date")
	h.g.Consistently(func() int { return len(h.worksOf("web")) }, 2*time.Second, 200*time.Millisecond).Should(Equal(1), "and no second work is made")
	w := h.worksOf("web")[0]
	h.g.Expect(w.UID).To(Equal(old.UID), "the same work: not recreated")
}

// Row 4: once the binding is gone, nothing the tenant changes reaches the cluster: the work is
// frozen (automated sync off, no request) and stays frozen across hub edits; restoring the binding
// delivers the current Application again. Nothing is deleted.
func TestRevokingABindingFreezesTheWork(t *testing.T) {
	h := start(t)
	cluster := h.cluster()
	h.app("web", cluster, func(u *unstructured.Unstructured) {
		u.Object["spec"].(map[string]any)["syncPolicy"] = map[string]any{"automated": map[string]any{"prune": true}}
	})
	delivered := h.work("web", cluster)

	binding := &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: "set-" + cluster, Namespace: h.ns}}
	h.g.Expect(h.c.Delete(context.Background(), binding)).To(Succeed())
	h.g.Eventually(func() string { return h.condition("web") }, timeout, interval).
		Should(And(HavePrefix(propagation.ReasonClusterNotBound), ContainSubstring("frozen: the managed cluster keeps what it runs, with automated sync off")))
	frozen := h.work("web", cluster)
	h.g.Expect(frozen.UID).To(Equal(delivered.UID), "nothing deleted")
	h.g.Expect(frozen.Annotations).To(HaveKeyWithValue(api.FrozenAnnotation, propagation.ReasonClusterNotBound))
	p := workfixture.Payload(t, frozen, 0)
	_, automated, _ := unstructured.NestedMap(p.Object, "spec", "syncPolicy", "automated")
	h.g.Expect(automated).To(BeFalse(), "no new Git commit is synced")
	h.g.Eventually(func() []string { return h.eventsFor("web") }, timeout, interval).Should(ContainElement(HavePrefix(ReasonFrozen)))

	// The tenant edits its Application (a new revision, a sync request): nothing reaches the work.
	h.updateApp("web", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "evil", "spec", "source", "targetRevision")
		u.Object["operation"] = map[string]any{"sync": map[string]any{}}
	})
	h.g.Consistently(func() string {
		return h.work("web", cluster).ResourceVersion
	}, 2*time.Second, 200*time.Millisecond).Should(Equal(h.work("web", cluster).ResourceVersion))
	rev, _, _ := unstructured.NestedString(workfixture.Payload(t, h.work("web", cluster), 0).Object, "spec", "source", "targetRevision")
	h.g.Expect(rev).To(Equal("main"))

	// Restored: delivered again, as the hub Application now is.
	h.create(&clusterv1beta2.ManagedClusterSetBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "set-" + cluster, Namespace: h.ns},
		Spec:       clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "set-" + cluster},
	})
	h.g.Eventually(func() string {
		rev, _, _ := unstructured.NestedString(workfixture.Payload(t, h.work("web", cluster), 0).Object, "spec", "source", "targetRevision")
		return rev
	}, timeout, interval).Should(Equal("evil"))
	restored := h.work("web", cluster)
	h.g.Expect(restored.Annotations).NotTo(HaveKey(api.FrozenAnnotation))
	_, automated, _ = unstructured.NestedMap(workfixture.Payload(t, restored, 0).Object, "spec", "syncPolicy", "automated")
	h.g.Expect(automated).To(BeTrue())
}

// Row 4, the operator's side: a namespace removed from --pull-namespaces (a typo) freezes its
// works, visibly; putting it back delivers again. Nothing is removed meanwhile.
func TestRemovingAnAllowedNamespaceFreezesItsWorks(t *testing.T) {
	h := start(t, allNamespaces)
	cluster := h.cluster()
	team := h.tenant(cluster)
	h.project("team", team.ns)
	team.app("web", cluster, onProject("team"))
	delivered := team.work("web", cluster)

	h.stop()
	typo := start(t, func(o *Options, _ string) { o.ArgoCDNamespace, o.PullNamespaces = h.ns, []string{"tem-a"} })
	typo.g.Eventually(func() string { return team.condition("web") }, timeout, interval).
		Should(And(HavePrefix(propagation.ReasonNamespaceNotAllowed), ContainSubstring("frozen")))
	h.g.Expect(team.work("web", cluster).UID).To(Equal(delivered.UID))

	typo.stop()
	start(t, allNamespaces, func(o *Options, _ string) { o.ArgoCDNamespace = h.ns })
	h.g.Eventually(func() string { return team.condition("web") }, timeout, interval).Should(BeEmpty())
	h.g.Expect(team.work("web", cluster).Annotations).NotTo(HaveKey(api.FrozenAnnotation))
}

// searchAnswering is a Search stand-in that answers every Application with item and related.
func searchAnswering(t *testing.T, item map[string]any, related ...map[string]any) (*httptest.Server, *searchtest.Fake) {
	fake := &searchtest.Fake{Answer: func(searchtest.Key) (map[string]any, []map[string]any) { return item, related }}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	return srv, fake
}

// Row 8: from a namespace outside --pull-namespaces, a tenant creates an ApplicationSet and an
// owned Application named like another tenant's, aimed at its cluster and namespace. Search is
// asked only about what argocd-pull delivers, and its answers go only into their own report.
func TestSearchIsAskedOnlyAboutDeliveredApplications(t *testing.T) {
	// It answers with a related Secret: what must never reach another tenant.
	srv, fake := searchAnswering(t, map[string]any{"kind": "Application", "_conditionSyncError": "secret payroll-db is forbidden"},
		map[string]any{"kind": "Secret", "apiversion": "v1", "name": "payroll-db", "namespace": "payroll"})
	h := start(t, func(o *Options, _ string) {
		o.Search.URL = srv.URL
		o.SearchInterval = 200 * time.Millisecond
	})
	cluster := h.cluster()
	h.app("payroll", cluster) // the victim, delivered, in no ApplicationSet
	h.work("payroll", cluster)
	own := h.appSet("web") // a delivered ApplicationSet member: Search is asked about it
	h.app("web-"+cluster, cluster, ownedBy(own))
	h.g.Eventually(func() bool {
		return fake.Asked(searchtest.Key{Cluster: cluster, Namespace: h.ns, Name: "web-" + cluster})
	}, timeout, interval).Should(BeTrue())

	attacker := h.tenant(cluster)
	evil := attacker.appSet("evil")
	attacker.app("payroll", cluster, ownedBy(evil), landingIn(h.ns))
	h.g.Eventually(func() string { return attacker.condition("payroll") }, timeout, interval).Should(HavePrefix(propagation.ReasonNamespaceNotAllowed))
	h.g.Consistently(func() bool { return fake.Asked(searchtest.Key{Cluster: cluster, Namespace: h.ns, Name: "payroll"}) }, 2*time.Second, 200*time.Millisecond).Should(BeFalse())
	// The attacker's ApplicationSet has its report (its refused Application listed, with why), and
	// nothing Search said about the victim is in it.
	h.g.Eventually(func() []string { return attacker.conditionsOf("evil", "") }, timeout, interval).Should(ContainElement(report.ConditionNotPropagated))
	r, err := attacker.getReport("evil")
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(r.Statuses.Resources).To(BeEmpty(), "no Search answer in the attacker's report")
	h.g.Expect(r.Statuses.ClusterConditions).To(HaveLen(1))
	for _, c := range r.Statuses.ClusterConditions {
		h.g.Expect(c.Conditions).NotTo(ContainElement(HaveField("Message", ContainSubstring("payroll-db"))))
	}
}

// A tenant may write its own Application's status (Applications have no status subresource):
// resources naming the hub's Argo CD Secret with a uid and parent refs, names Kubernetes would
// refuse, statuses Argo CD never writes, the same resource twice and thousands more. The hub's
// resource tree, which the API server's resource-level verbs look resources up in, still holds
// only checked, uid-less, flat nodes within its caps, under the tenant's own key. (Only a delivered
// Application has a tree: TestNoTreeIsWrittenForAnApplicationArgoCDPullDoesNotDeliver.)
func TestATenantWritingItsApplicationsStatusGetsOnlyADisplayTree(t *testing.T) {
	addr := testenv.Redis(t, "")
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer func() { _ = rdb.Close() }()
	h := start(t, allNamespaces, func(o *Options, _ string) { o.ResourceTree.Address = addr })
	cluster := h.cluster()
	tenant := h.tenant(cluster)
	// Delivered, and its cluster has reported nothing yet: its status is the tenant's alone, as it
	// is in the moment before the status controller writes over it.
	h.project("team", tenant.ns)
	tenant.app("guestbook", cluster, onProject("team"))
	tenant.writtenWork("guestbook", cluster) // its agent has not answered: no status of the cluster's yet

	forged := []any{
		map[string]any{"version": "v1", "kind": "Secret", "namespace": h.ns, "name": "argocd-secret", "uid": "9d2c6f4e-real-uid", "health": map[string]any{"status": "Healthy"},
			"parentRefs": []any{map[string]any{"kind": "Secret", "name": "argocd-secret", "uid": "9d2c6f4e-real-uid"}}},
		map[string]any{"version": "v1", "kind": "Secret", "namespace": h.ns, "name": "argocd-secret"},
		map[string]any{"version": "v1", "kind": "ConfigMap", "namespace": h.ns, "name": "../argocd-cm"},
		map[string]any{"version": "v1", "kind": "ConfigMap", "namespace": h.ns, "name": "argocd-cm", "health": map[string]any{"status": "<img src=x>"}},
	}
	for i := range 3000 {
		forged = append(forged, map[string]any{"version": "v1", "kind": "ConfigMap", "namespace": "guestbook", "name": fmt.Sprintf("cm-%04d", i)})
	}
	tenant.updateApp("guestbook", func(app *unstructured.Unstructured) {
		_ = unstructured.SetNestedSlice(app.Object, forged, "status", "resources")
	})

	key := tenant.ns + "_guestbook"
	h.g.Eventually(func(g Gomega) {
		tree := treeOf(g, rdb, key)
		g.Expect(tree).NotTo(BeNil())
		g.Expect(tree.Nodes).NotTo(BeEmpty())
		g.Expect(tree.Nodes[0]).To(Equal(resourcetree.Node{Ref: resourcetree.Ref{Version: "v1", Kind: "Secret", Namespace: h.ns, Name: "argocd-secret"}, Health: resourcetree.Health{Status: "Healthy"}}),
			"listed, without its uid or parent refs: no verb acts on it")
		g.Expect(tree.Nodes[1].Name).To(Equal("cm-0000"), "the same resource twice, a name with a slash and an unknown health are dropped")
		g.Expect(len(tree.Nodes)).To(BeNumerically("<=", resourcetree.MaxNodes))
	}, timeout, interval).Should(Succeed())
	keys, err := rdb.Keys(context.Background(), "*").Result()
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(keys).To(ConsistOf("app|resources-tree|"+key+"|1.8.3.gz"), "the tenant's own key only")
}
