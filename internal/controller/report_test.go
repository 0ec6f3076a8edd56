package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

// appSet creates an ApplicationSet in the test namespace.
func (h *harness) appSet(name string) *unstructured.Unstructured {
	h.t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(argocd.ApplicationSetGVK)
	u.SetName(name)
	u.SetNamespace(h.ns)
	u.Object["spec"] = map[string]any{"generators": []any{}, "template": map[string]any{"metadata": map[string]any{}, "spec": map[string]any{
		"project": "default", "destination": map[string]any{}, "source": map[string]any{"repoURL": "x"}}}}
	h.create(u)
	return u
}

func ownedBy(appSet *unstructured.Unstructured) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "argoproj.io/v1alpha1", Kind: "ApplicationSet", Name: appSet.GetName(), UID: appSet.GetUID()}})
	}
}

func (h *harness) getReport(name string) (*v1alpha1.MulticlusterApplicationSetReport, error) {
	r := &v1alpha1.MulticlusterApplicationSetReport{}
	return r, h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: name}, r)
}

// conditionsOf is the types of the conditions the report of the ApplicationSet set lists for the
// cluster entry app ("<namespace>/<name>/<cluster>/<work>"; "": every entry), none when there is
// no report yet.
func (h *harness) conditionsOf(set, app string) []string {
	r, err := h.getReport(set)
	if err != nil {
		return nil
	}
	var types []string
	for _, cc := range r.Statuses.ClusterConditions {
		if app == "" || cc.App == app {
			for _, c := range cc.Conditions {
				types = append(types, c.Type)
			}
		}
	}
	return types
}

func (h *harness) summary(name string) v1alpha1.ReportSummary {
	r, err := h.getReport(name)
	if err != nil {
		return v1alpha1.ReportSummary{}
	}
	return r.Statuses.Summary
}

func feedback(health, sync string) map[string]string {
	return map[string]string{manifestwork.FeedbackHealth: health, manifestwork.FeedbackSync: sync, manifestwork.FeedbackRevision: "53e28ff2"}
}

func TestReportFollowsTheClusters(t *testing.T) {
	h := start(t)
	set := h.appSet("guestbook-allclusters-app-set")
	c1, c2, c3 := h.cluster(), h.cluster(), h.cluster()
	for _, c := range []string{c1, c2, c3} {
		h.app("guestbook-"+c, c, ownedBy(set))
	}
	h.app("not-in-the-set", c1) // counted nowhere
	h.app("push-model", c1, ownedBy(set), func(u *unstructured.Unstructured) { u.SetLabels(nil) })

	// Before any cluster reports: one entry per cluster, Unknown.
	h.g.Eventually(func() string { return h.summary(set.GetName()).Clusters }, timeout, interval).Should(Equal("3"))
	r, err := h.getReport(set.GetName())
	h.g.Expect(err).NotTo(HaveOccurred())
	want := h.ns + ".guestbook-allclusters-app-set" // over 63 characters here: cut
	h.g.Expect(len(want)).To(BeNumerically(">", 63))
	h.g.Expect(r.Labels).To(HaveKeyWithValue(api.HostingApplicationSetLabel, strings.TrimRight(want[:63], "-._")))
	h.g.Expect(r.OwnerReferences).To(ConsistOf(HaveField("UID", set.GetUID())))
	h.g.Expect(r.Statuses.ClusterConditions).To(HaveLen(3))
	for _, cc := range r.Statuses.ClusterConditions {
		h.g.Expect(cc.HealthStatus).To(Equal("Unknown"))
		h.g.Expect(cc.SyncStatus).To(Equal("Unknown"))
	}

	// The documents' example: one cluster failing to sync, two Progressing.
	forbidden := `Failed sync attempt to 53e28ff2: one or more objects failed to apply, reason: services is forbidden`
	failing := feedback("Missing", "OutOfSync")
	failing[manifestwork.FeedbackConditions] = fmt.Sprintf(`[{"type":"SyncError","message":%q}]`, forbidden)
	h.report("guestbook-"+c1, c1, 1, failing)
	progressing := feedback("Progressing", "Synced")
	progressing[manifestwork.FeedbackResources] = `[{"version":"v1","kind":"Service","namespace":"guestbook","name":"guestbook-ui","status":"Synced","health":{"status":"Healthy"}},` +
		`{"group":"apps","version":"v1","kind":"Deployment","namespace":"guestbook","name":"guestbook-ui","status":"Synced","health":{"status":"Progressing"}}]`
	h.report("guestbook-"+c2, c2, 1, progressing)
	h.report("guestbook-"+c3, c3, 1, progressing)
	h.g.Eventually(func() v1alpha1.ReportSummary { return h.summary(set.GetName()) }, timeout, interval).Should(Equal(
		v1alpha1.ReportSummary{Clusters: "3", Healthy: "0", InProgress: "2", NotHealthy: "3", NotSynced: "1", Synced: "2"}))

	r, _ = h.getReport(set.GetName())
	byCluster := map[string]v1alpha1.ClusterCondition{}
	for _, cc := range r.Statuses.ClusterConditions {
		byCluster[cc.Cluster] = cc
	}
	h.g.Expect(byCluster[c1].Conditions).To(ConsistOf(v1alpha1.Condition{Type: "SyncError", Message: forbidden}))
	h.g.Expect(byCluster[c1].App).To(Equal(h.ns + "/guestbook-" + c1 + "/" + c1 + "/" + manifestwork.WorkName(h.ns, "guestbook-"+c1)))
	h.g.Expect(byCluster[c2].SyncRevision).To(Equal("53e28ff2"))
	h.g.Expect(r.Statuses.Resources).To(ConsistOf(
		v1alpha1.ResourceRef{APIVersion: "v1", Kind: "Service", Namespace: "guestbook", Name: "guestbook-ui"},
		v1alpha1.ResourceRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui"},
	))

	// A cluster turns Healthy: the report follows, and writes nothing more once it has.
	h.report("guestbook-"+c2, c2, 1, feedback("Healthy", "Synced"))
	h.g.Eventually(func() string { return h.summary(set.GetName()).Healthy }, timeout, interval).Should(Equal("1"))
	r, _ = h.getReport(set.GetName())
	h.g.Consistently(func() string { got, _ := h.getReport(set.GetName()); return got.ResourceVersion }, 2*time.Second, 100*time.Millisecond).
		Should(Equal(r.ResourceVersion))

	// A cluster leaves the ApplicationSet: it leaves the report.
	h.g.Expect(h.c.Delete(context.Background(), h.getApp("guestbook-"+c3))).To(Succeed())
	h.g.Eventually(func() string { return h.summary(set.GetName()).Clusters }, timeout, interval).Should(Equal("2"))
}

func TestReportShowsUnavailableClustersAsStale(t *testing.T) {
	h := start(t)
	set := h.appSet("web")
	c := h.cluster()
	h.app("web-"+c, c, ownedBy(set))
	h.report("web-"+c, c, 1, feedback("Healthy", "Synced"))
	h.g.Eventually(func() string { return h.summary("web").Healthy }, timeout, interval).Should(Equal("1"))

	since := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
	mc := &clusterv1.ManagedCluster{}
	h.g.Expect(h.c.Get(context.Background(), types.NamespacedName{Name: c}, mc)).To(Succeed())
	mc.Status.Conditions = []metav1.Condition{{Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionUnknown,
		Reason: "ManagedClusterLeaseUpdateStopped", Message: "lease not updated", LastTransitionTime: since}}
	h.g.Expect(h.c.Status().Update(context.Background(), mc)).To(Succeed())

	h.g.Eventually(func() []v1alpha1.ClusterCondition {
		r, _ := h.getReport("web")
		return r.Statuses.ClusterConditions
	}, timeout, interval).Should(ConsistOf(And(
		HaveField("HealthStatus", "Unknown"),
		HaveField("SyncRevision", "53e28ff2"),
		HaveField("Conditions", ContainElement(v1alpha1.Condition{Type: "StaleStatus",
			Message: fmt.Sprintf("no status from %s since %s: the ManagedCluster is not available (ManagedClusterLeaseUpdateStopped)", c, since.UTC().Format(time.RFC3339))})),
	)))
	h.g.Expect(h.summary("web").Healthy).To(Equal("0"))
}

func TestReportOfWorkNotAppliedInTimeTurnsStale(t *testing.T) {
	h := start(t, func(o *Options, _ string) { o.StaleAfter = 2 * time.Second })
	set := h.appSet("web")
	c := h.cluster()
	h.app("web-"+c, c, ownedBy(set))
	// No agent applies the work: after the window the report says so without any new event.
	h.g.Eventually(func() []v1alpha1.Condition {
		r, _ := h.getReport("web")
		if len(r.Statuses.ClusterConditions) == 0 {
			return nil
		}
		return r.Statuses.ClusterConditions[0].Conditions
	}, timeout, interval).Should(ContainElement(HaveField("Message", ContainSubstring("its work agent has not applied the ManifestWork"))))
}

func TestReportOfEmptiedAndDeletedApplicationSets(t *testing.T) {
	h := start(t)
	set := h.appSet("web")
	c := h.cluster()
	h.app("web-"+c, c, ownedBy(set))
	h.g.Eventually(func() string { return h.summary("web").Clusters }, timeout, interval).Should(Equal("1"))

	// Zero clusters: a report with zero counts, not a stale one.
	h.g.Expect(h.c.Delete(context.Background(), h.getApp("web-"+c))).To(Succeed())
	h.g.Eventually(func() v1alpha1.ReportSummary { return h.summary("web") }, timeout, interval).Should(Equal(
		v1alpha1.ReportSummary{Clusters: "0", Healthy: "0", InProgress: "0", NotHealthy: "0", NotSynced: "0", Synced: "0"}))

	h.g.Expect(h.c.Delete(context.Background(), set)).To(Succeed())
	h.g.Eventually(func() bool { _, err := h.getReport("web"); return apierrors.IsNotFound(err) }, timeout, interval).Should(BeTrue())
}

func TestNoReportForApplicationSetsWithoutPullApplications(t *testing.T) {
	h := start(t)
	push := h.appSet("push-only")
	pull := h.appSet("pull")
	c := h.cluster()
	h.app("push-app", c, ownedBy(push), func(u *unstructured.Unstructured) { u.SetLabels(nil) })
	h.app("pull-app", c, ownedBy(pull))
	h.g.Eventually(func() error { _, err := h.getReport("pull"); return err }, timeout, interval).Should(Succeed())
	h.g.Consistently(func() bool { _, err := h.getReport("push-only"); return apierrors.IsNotFound(err) }, time.Second, 100*time.Millisecond).Should(BeTrue())
}

func TestReportIsRestoredWhenEdited(t *testing.T) {
	h := start(t)
	set := h.appSet("web")
	c := h.cluster()
	h.app("web-"+c, c, ownedBy(set))
	h.g.Eventually(func() string { return h.summary("web").Clusters }, timeout, interval).Should(Equal("1"))
	r, _ := h.getReport("web")
	r.Statuses.Summary.Clusters = "42"
	h.g.Expect(h.c.Update(context.Background(), r)).To(Succeed())
	h.g.Eventually(func() string { return h.summary("web").Clusters }, timeout, interval).Should(Equal("1"))
}

// With --search-url, the report takes deployed resources and error conditions from OCM Search
// where ManifestWork feedback has none.
func TestReportUsesSearchWhenConfigured(t *testing.T) {
	srv, fake := searchAnswering(t, map[string]any{"kind": "Application", "_conditionSyncError": "deployments.apps is forbidden"},
		map[string]any{"kind": "Deployment", "apigroup": "apps", "apiversion": "v1", "name": "guestbook-ui", "namespace": "guestbook"})
	h := start(t, func(o *Options, _ string) {
		o.Search.URL = srv.URL
		o.SearchInterval = 200 * time.Millisecond
	})
	set := h.appSet("web")
	c := h.cluster()
	h.app("web-"+c, c, ownedBy(set))
	h.report("web-"+c, c, 1, feedback("Degraded", "OutOfSync"))

	h.g.Eventually(func() []v1alpha1.ResourceRef {
		r, _ := h.getReport("web")
		return r.Statuses.Resources
	}, timeout, interval).Should(ConsistOf(v1alpha1.ResourceRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "guestbook-ui", Namespace: "guestbook"}))
	r, _ := h.getReport("web")
	h.g.Expect(r.Statuses.ClusterConditions[0].Conditions).To(ContainElement(v1alpha1.Condition{Type: "SyncError", Message: "deployments.apps is forbidden"}))
	h.g.Expect(fake.Requests()).To(BeNumerically(">", 0))
}

// A report is written at most once per its clusters x --report-interval-per-cluster: a change
// right after a write is held, then written, never dropped.
func TestReportWritesArePaced(t *testing.T) {
	h := start(t, func(o *Options, _ string) { o.ReportIntervalPerCluster = 10 * time.Second }) // 2 clusters: 20 s
	set := h.appSet("paced")
	c1, c2 := h.cluster(), h.cluster()
	h.app("paced-"+c1, c1, ownedBy(set))
	h.app("paced-"+c2, c2, ownedBy(set))
	h.g.Eventually(func() string { return h.summary(set.GetName()).Clusters }, timeout, interval).Should(Equal("2"))

	h.report("paced-"+c1, c1, h.work("paced-"+c1, c1).Generation, feedback("Healthy", "Synced"))
	healthy := func() string { return h.summary(set.GetName()).Healthy }
	h.g.Consistently(healthy, 3*time.Second, interval).ShouldNot(Equal("1"), "held: the report was written moments ago")
	h.g.Eventually(healthy, 45*time.Second, interval).Should(Equal("1"), "written once the interval has passed")
}

// An ApplicationSet and its Application with the longest names Kubernetes takes (253 characters;
// it refuses longer ones): the work's name, the report's name and its label are all valid, and
// the report counts the cluster.
func TestTheLongestNamesAreDeliveredAndReported(t *testing.T) {
	h := start(t)
	cluster := h.cluster()
	setName := "guestbook-" + strings.Repeat("s", 243)
	set := h.appSet(setName)
	appName := "guestbook-" + strings.Repeat("a", 243)
	h.app(appName, cluster, ownedBy(set))
	w := h.work(appName, cluster)
	h.g.Expect(validation.IsDNS1123Subdomain(w.Name)).To(BeEmpty())
	h.report(appName, cluster, w.Generation, feedback("Healthy", "Synced"))

	h.g.Eventually(func() v1alpha1.ReportSummary { return h.summary(setName) }, timeout, interval).Should(
		HaveField("Healthy", "1"))
	r, err := h.getReport(setName)
	h.g.Expect(err).NotTo(HaveOccurred())
	label := r.Labels[api.HostingApplicationSetLabel]
	h.g.Expect(validation.IsValidLabelValue(label)).To(BeEmpty(), "label %q", label)
	h.g.Expect(r.Statuses.ClusterConditions).To(ConsistOf(HaveField("Cluster", cluster)))
}
