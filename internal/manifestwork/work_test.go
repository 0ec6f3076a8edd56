package manifestwork

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/client-go/util/jsonpath"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/test/workfixture"
)

// pullApp is the fixture's pull-model Application (workfixture.PullApp).
func pullApp(mutate ...func(*unstructured.Unstructured)) *unstructured.Unstructured {
	return workfixture.PullApp(mutate...)
}

func setAnnotation(k, v string) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		a := u.GetAnnotations()
		a[k] = v
		u.SetAnnotations(a)
	}
}

func setLabel(k, v string) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		l := u.GetLabels()
		l[k] = v
		u.SetLabels(l)
	}
}

func TestReadMarkers(t *testing.T) {
	tests := map[string]struct {
		app     *unstructured.Unstructured
		want    Target
		pull    bool
		wantErr string
	}{
		"pull app, app namespace defaults to the hub namespace": {
			app: pullApp(), want: Target{Cluster: "cluster1", AppNamespace: "argocd"}, pull: true,
		},
		"app namespace annotation": {
			app:  pullApp(setAnnotation(api.AppNamespaceAnnotation, "openshift-gitops")),
			want: Target{Cluster: "cluster1", AppNamespace: "openshift-gitops"}, pull: true,
		},
		"label parsed as bool: True": {app: pullApp(setLabel(api.PullLabel, "True")), want: Target{Cluster: "cluster1", AppNamespace: "argocd"}, pull: true},
		"label parsed as bool: 1":    {app: pullApp(setLabel(api.PullLabel, "1")), want: Target{Cluster: "cluster1", AppNamespace: "argocd"}, pull: true},
		"label false is push model":  {app: pullApp(setLabel(api.PullLabel, "false"))},
		"no label is push model": {app: pullApp(func(u *unstructured.Unstructured) {
			u.SetLabels(map[string]string{"team": "web"})
		})},
		"label not a bool":   {app: pullApp(setLabel(api.PullLabel, "yes-please")), wantErr: `label apps.open-cluster-management.io/pull-to-ocm-managed-cluster is "yes-please"`},
		"empty cluster":      {app: pullApp(setAnnotation(api.ClusterAnnotation, " ")), pull: true, wantErr: "must name the managed cluster"},
		"missing cluster":    {app: pullApp(func(u *unstructured.Unstructured) { u.SetAnnotations(nil) }), pull: true, wantErr: "must name the managed cluster"},
		"invalid cluster":    {app: pullApp(setAnnotation(api.ClusterAnnotation, "Cluster_1")), pull: true, wantErr: `is "Cluster_1", not a cluster name`},
		"invalid app namesp": {app: pullApp(setAnnotation(api.AppNamespaceAnnotation, "a/b")), pull: true, wantErr: "not a namespace name"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got, pull, err := ReadMarkers(tt.app)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(errors.Is(err, ErrInvalidMarkers)).To(BeTrue())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pull).To(Equal(tt.pull))
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestWorkName(t *testing.T) {
	tests := map[string]struct {
		namespace, name string
		prefix          string
	}{
		"short":                         {"argocd", "guestbook-cluster1", "guestbook-cluster1-"},
		"253 characters":                {"argocd", strings.Repeat("x", 253), strings.Repeat("x", 236) + "-"},
		"truncation ending in a dot":    {"argocd", strings.Repeat("a", 235) + ".b", strings.Repeat("a", 235) + "-"},
		"truncation ending in a hyphen": {"argocd", strings.Repeat("a", 235) + "-bbbb", strings.Repeat("a", 235) + "-"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got := WorkName(tt.namespace, tt.name)
			g.Expect(got).To(HavePrefix(tt.prefix))
			g.Expect(len(got)).To(BeNumerically("<=", 253))
			g.Expect(validation.IsDNS1123Subdomain(got)).To(BeEmpty())
			g.Expect(WorkName(tt.namespace, tt.name)).To(Equal(got), "stable")
		})
	}
	NewWithT(t).Expect(WorkName("team-a", "app")).NotTo(Equal(WorkName("team-b", "app")), "same name, other namespace")
}

func TestDesiredWorkPayload(t *testing.T) {
	g := NewWithT(t)
	app := pullApp(func(u *unstructured.Unstructured) {
		u.Object["operation"] = map[string]any{"sync": map[string]any{"revision": "abc"}}
		a := u.GetAnnotations()
		a[argocd.RefreshAnnotation] = "hard"
		u.SetAnnotations(a)
	})
	work, err := DesiredWork(app, nil, Target{Cluster: "cluster1", AppNamespace: "openshift-gitops"},
		Deliveries{Sync: &Delivery{ID: "s1", Hash: "h"}, Refresh: &Delivery{ID: "r1", Hash: "h"}})
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(work.Namespace).To(Equal("cluster1"))
	g.Expect(work.Name).To(Equal(WorkName("argocd", "guestbook-cluster1")))
	g.Expect(work.Labels).To(HaveKeyWithValue(api.ManagedByLabel, api.ManagedByValue))
	g.Expect(work.Annotations).To(HaveKeyWithValue(api.HubApplicationNamespaceAnnotation, "argocd"))
	g.Expect(work.Annotations).To(HaveKeyWithValue(api.HubApplicationNameAnnotation, "guestbook-cluster1"))
	g.Expect(work.Spec.Workload.Manifests).To(HaveLen(1))
	g.Expect(work.Spec.DeleteOption.SelectivelyOrphan.OrphaningRules).To(ConsistOf(workv1.OrphaningRule{Group: "argoproj.io", Resource: "applications", Name: "guestbook-cluster1", Namespace: "openshift-gitops"}),
		"a new work orphans its Application until the managed cluster reported whose it is")

	p := workfixture.Payload(t, work, 0)
	g.Expect(p.GetKind()).To(Equal("Application"))
	g.Expect(p.GetNamespace()).To(Equal("openshift-gitops"))
	g.Expect(p.GetLabels()).To(Equal(map[string]string{"team": "web"}))
	g.Expect(p.GetAnnotations()).To(Equal(map[string]string{"note": "kept", argocd.RefreshAnnotation: "hard",
		api.SyncDeliveryAnnotation: "s1", api.RefreshDeliveryAnnotation: "r1", api.HubApplicationAnnotation: "argocd/guestbook-cluster1"}))
	g.Expect(p.GetFinalizers()).To(Equal([]string{argocd.ResourcesFinalizer}))
	g.Expect(p.GetResourceVersion()).To(BeEmpty())
	g.Expect(string(p.GetUID())).To(BeEmpty())
	g.Expect(p.Object).NotTo(HaveKey("status"))
	g.Expect(p.Object["operation"]).To(Equal(map[string]any{"sync": map[string]any{"revision": "abc"},
		"info": []any{map[string]any{"name": api.DeliveryInfoName, "value": "s1"}}}))
	g.Expect(ParseDeliveries(work.Annotations[api.DeliveriesAnnotation])).To(Equal(Deliveries{Sync: &Delivery{ID: "s1", Hash: "h"}, Refresh: &Delivery{ID: "r1", Hash: "h"}}))

	// Without a delivery plan, requests on the hub do not travel.
	bare, err := DesiredWork(app, nil, Target{Cluster: "cluster1", AppNamespace: "openshift-gitops"}, Deliveries{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(workfixture.Payload(t, bare, 0).Object).NotTo(HaveKey("operation"))
	g.Expect(workfixture.Payload(t, bare, 0).GetAnnotations()).To(Equal(map[string]string{"note": "kept", api.HubApplicationAnnotation: "argocd/guestbook-cluster1"}))
	g.Expect(bare.Annotations).NotTo(HaveKey(api.DeliveriesAnnotation))
	spec := p.Object["spec"].(map[string]any)
	g.Expect(spec["destination"]).To(Equal(map[string]any{"server": argocd.LocalServer, "namespace": "guestbook"}))
	g.Expect(spec["source"]).To(Equal(app.Object["spec"].(map[string]any)["source"]))
	g.Expect(app.Object["spec"].(map[string]any)["destination"]).To(HaveKeyWithValue("server", "https://cluster1-control-plane:6443"), "the hub app is not modified")

	cfg := work.Spec.ManifestConfigs[0]
	g.Expect(cfg.ResourceIdentifier).To(Equal(workv1.ResourceIdentifier{Group: "argoproj.io", Resource: "applications", Name: "guestbook-cluster1", Namespace: "openshift-gitops"}))
	g.Expect(cfg.FeedbackScrapeType).To(Equal(workv1.FeedbackWatchType))
	feedbackOf := func(w *workv1.ManifestWork) map[string]string {
		paths := map[string]string{}
		for _, jp := range w.Spec.ManifestConfigs[0].FeedbackRules[0].JsonPaths {
			paths[jp.Name] = jp.Path
		}
		return paths
	}
	// Pending, it asks only whose the Application is (see claim.go); held, what it reports.
	g.Expect(feedbackOf(work)).To(Equal(map[string]string{
		FeedbackHubApplication: `.metadata.annotations.apps\.open-cluster-management\.io/hub-application`,
		FeedbackManagedUID:     ".metadata.uid",
	}))
	paths := feedbackOf(mustHold(t, work))
	g.Expect(paths).To(HaveKeyWithValue(FeedbackHealth, ".status.health.status"))
	g.Expect(paths).To(HaveKeyWithValue(FeedbackSync, ".status.sync.status"))
	g.Expect(paths).To(HaveKeyWithValue(FeedbackRevision, ".status.sync.revision"))
	g.Expect(paths).To(HaveKeyWithValue(FeedbackPhase, ".status.operationState.phase"))
	g.Expect(paths).To(HaveKeyWithValue(FeedbackStartedAt, ".status.operationState.startedAt"))
	g.Expect(paths).To(HaveKeyWithValue(FeedbackMessage, ".status.operationState.message"))
	g.Expect(paths).To(HaveKeyWithValue(FeedbackResources, ".status.resources"))
	g.Expect(paths).To(HaveKeyWithValue(FeedbackConditions, ".status.conditions"))
	g.Expect(paths).To(HaveKeyWithValue(FeedbackReconciledAt, ".status.reconciledAt"), "a work carrying a sync request asks when its Argo CD last compared")
	g.Expect(feedbackNames(mustHold(t, bare))).NotTo(ContainElement(FeedbackReconciledAt), "a work at rest does not ask for what every periodic reconciliation rewrites")
	refreshOnly, err := DesiredWork(app, nil, Target{Cluster: "cluster1", AppNamespace: "openshift-gitops"}, Deliveries{Refresh: &Delivery{ID: "r1", Hash: "h"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(feedbackNames(mustHold(t, refreshOnly))).To(ContainElement(FeedbackReconciledAt), "a work carrying a refresh asks when its Argo CD compared: the hub shows it with the answer (argocd app get --refresh)")
	g.Expect(feedbackNames(mustHold(t, refreshOnly))).To(ContainElement(FeedbackRefreshPending))
	g.Expect(cfg.UpdateStrategy.Type).To(Equal(workv1.UpdateStrategyTypeReadOnly), "a new work changes nothing that was there before")
	g.Expect(Held(work)).To(BeFalse())

	// Held: server-side apply, the Application deleted with the work, no more claim feedback.
	held, err := Hold(work)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(Held(held)).To(BeTrue())
	g.Expect(held.Spec.DeleteOption).To(BeNil(), "the Application itself is deleted with the work")
	cfg = held.Spec.ManifestConfigs[0]
	g.Expect(cfg.UpdateStrategy.Type).To(Equal(workv1.UpdateStrategyTypeServerSideApply))
	g.Expect(cfg.UpdateStrategy.ServerSideApply.IgnoreFields).To(ConsistOf(workv1.IgnoreField{
		Condition: workv1.IgnoreFieldsConditionOnSpokeChange,
		JSONPaths: []string{operationJSONPath, refreshAnnotationJSONPath},
	}))
	g.Expect(feedbackNames(held)).NotTo(ContainElements(FeedbackHubApplication, FeedbackManagedUID))
	g.Expect(feedbackNames(work)).To(ContainElements(FeedbackHubApplication, FeedbackManagedUID), "Hold leaves its argument alone")
	g.Expect(UpToDate(work, held)).To(BeFalse(), "holding is a write")
	again, err := Hold(held)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(UpToDate(held, again)).To(BeTrue(), "holding a held work changes nothing")
}

// mustHold is Hold(work), for a test.
func mustHold(t *testing.T, work *workv1.ManifestWork) *workv1.ManifestWork {
	t.Helper()
	held, err := Hold(work)
	if err != nil {
		t.Fatal(err)
	}
	return held
}

// feedbackNames are the names of the feedback values the work's Application asks for.
func feedbackNames(work *workv1.ManifestWork) []string {
	var names []string
	for _, jp := range work.Spec.ManifestConfigs[0].FeedbackRules[0].JsonPaths {
		names = append(names, jp.Name)
	}
	return names
}

func TestDesiredWorkDestination(t *testing.T) {
	tests := map[string]struct {
		app  *unstructured.Unstructured
		want map[string]any
	}{
		"local by default": {pullApp(), map[string]any{"server": argocd.LocalServer, "namespace": "guestbook"}},
		"name override":    {pullApp(setAnnotation(api.DestinationNameAnnotation, "in-cluster")), map[string]any{"name": "in-cluster", "namespace": "guestbook"}},
		"server override":  {pullApp(setAnnotation(api.DestinationServerAnnotation, "https://10.0.0.1:6443")), map[string]any{"server": "https://10.0.0.1:6443", "namespace": "guestbook"}},
		"hub destination by name is replaced": {pullApp(func(u *unstructured.Unstructured) {
			u.Object["spec"].(map[string]any)["destination"] = map[string]any{"name": "cluster1"}
		}), map[string]any{"server": argocd.LocalServer}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			work, err := DesiredWork(tt.app, nil, Target{Cluster: "cluster1", AppNamespace: "argocd"}, Deliveries{})
			g.Expect(err).NotTo(HaveOccurred())
			p := workfixture.Payload(t, work, 0)
			g.Expect(p.Object["spec"].(map[string]any)["destination"]).To(Equal(tt.want))
			g.Expect(p.GetAnnotations()).NotTo(HaveKey(api.DestinationNameAnnotation))
			g.Expect(p.GetAnnotations()).NotTo(HaveKey(api.DestinationServerAnnotation))
		})
	}
}

func TestDesiredWorkApplicationSetMarkers(t *testing.T) {
	g := NewWithT(t)
	app := pullApp(func(u *unstructured.Unstructured) {
		u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "argoproj.io/v1alpha1", Kind: "ApplicationSet", Name: "guestbook-allclusters-app-set", UID: "u"}})
	})
	work, err := DesiredWork(app, nil, Target{Cluster: "cluster1", AppNamespace: "argocd"}, Deliveries{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(work.Labels).To(HaveKeyWithValue(api.ApplicationSetLabel, "true"))
	g.Expect(work.Annotations).To(HaveKeyWithValue(api.HostingApplicationSetAnnotation, "argocd/guestbook-allclusters-app-set"))
	p := workfixture.Payload(t, work, 0)
	g.Expect(p.GetLabels()).To(HaveKeyWithValue(api.ApplicationSetLabel, "true"))
	g.Expect(p.GetAnnotations()).To(HaveKeyWithValue(api.HostingApplicationSetAnnotation, "argocd/guestbook-allclusters-app-set"))
	g.Expect(p.GetOwnerReferences()).To(BeEmpty())
}

func TestDesiredWorkCarriesAndOrphansTheAppProject(t *testing.T) {
	g := NewWithT(t)
	project := argocd.NewAppProject()
	project.SetName("team-web")
	project.SetNamespace("argocd")
	project.SetResourceVersion("7")
	project.Object["spec"] = map[string]any{"destinations": []any{map[string]any{"server": "*", "namespace": "*"}}}
	project.Object["status"] = map[string]any{"jwtTokensByRole": map[string]any{}}

	work, err := DesiredWork(pullApp(), project, Target{Cluster: "cluster1", AppNamespace: "argocd"}, Deliveries{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(work.Spec.Workload.Manifests).To(HaveLen(2))
	p := workfixture.Payload(t, work, 1)
	g.Expect(p.GetKind()).To(Equal("AppProject"))
	g.Expect(p.GetName()).To(Equal("team-web"))
	g.Expect(p.GetResourceVersion()).To(BeEmpty())
	g.Expect(p.Object).NotTo(HaveKey("status"))
	g.Expect(p.Object["spec"]).To(Equal(project.Object["spec"]))
	held, err := Hold(work)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(held.Spec.DeleteOption).To(Equal(&workv1.DeleteOption{
		PropagationPolicy: workv1.DeletePropagationPolicyTypeSelectivelyOrphan,
		SelectivelyOrphan: &workv1.SelectivelyOrphan{OrphaningRules: []workv1.OrphaningRule{{Group: "argoproj.io", Resource: "appprojects", Name: "team-web", Namespace: "argocd"}}},
	}))
	g.Expect(work.Spec.DeleteOption.SelectivelyOrphan.OrphaningRules).To(HaveLen(2), "pending: the Application is orphaned too")
}

func TestDesiredWorkRefusesOversizedPayload(t *testing.T) {
	g := NewWithT(t)
	app := pullApp(setAnnotation("big", strings.Repeat("x", MaxManifestsSize)))
	_, err := DesiredWork(app, nil, Target{Cluster: "cluster1", AppNamespace: "argocd"}, Deliveries{})
	g.Expect(errors.Is(err, ErrPayloadTooLarge)).To(BeTrue())
	g.Expect(err).To(MatchError(ContainSubstring("the limit is 512000")))
}

func TestSpecHashChangesOnlyWithContent(t *testing.T) {
	g := NewWithT(t)
	target := Target{Cluster: "cluster1", AppNamespace: "argocd"}
	a, err := DesiredWork(pullApp(), nil, target, Deliveries{})
	g.Expect(err).NotTo(HaveOccurred())
	b, err := DesiredWork(pullApp(func(u *unstructured.Unstructured) {
		u.SetResourceVersion("99")
		u.Object["status"] = map[string]any{"health": map[string]any{"status": "Degraded"}}
	}), nil, target, Deliveries{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(UpToDate(a, b)).To(BeTrue(), "status and server-set metadata do not change the work")

	// Argo CD 3.5's API server writes hydrate: hard on argocd app get --hard-refresh, normal on a
	// refresh; the hub keeps it (no application controller there removes it).
	for _, hydrate := range []string{"normal", "hard"} {
		h, err := DesiredWork(pullApp(setAnnotation(argocd.HydrateAnnotation, hydrate)), nil, target, Deliveries{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(UpToDate(a, h)).To(BeTrue(), "the refresh's hydrate %s annotation does not change the work", hydrate)
	}

	c, err := DesiredWork(pullApp(func(u *unstructured.Unstructured) {
		u.Object["spec"].(map[string]any)["source"].(map[string]any)["targetRevision"] = "v2"
	}), nil, target, Deliveries{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(UpToDate(a, c)).To(BeFalse())
}

// The work agent reads feedback with client-go's JSONPath: every path must find its value.
func TestFeedbackPathsFindTheirValues(t *testing.T) {
	app := map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{
			api.SyncDeliveryAnnotation: "s1", api.RefreshDeliveryAnnotation: "r1", argocd.RefreshAnnotation: "hard"}},
		"operation": map[string]any{"info": []any{map[string]any{"name": "Reason", "value": "x"}, map[string]any{"name": api.DeliveryInfoName, "value": "s1"}}},
		"status":    map[string]any{"operationState": map[string]any{"operation": map[string]any{"info": []any{map[string]any{"name": api.DeliveryInfoName, "value": "s0"}}}}},
	}
	want := map[string]string{FeedbackSyncDelivered: "s1", FeedbackSyncHeld: "s1", FeedbackSyncStarted: "s0", FeedbackRefreshDelivered: "r1", FeedbackRefreshPending: "hard"}
	for _, p := range feedbackPaths {
		w, ok := want[p.Name]
		if !ok {
			continue
		}
		j := jsonpath.New(p.Name).AllowMissingKeys(true)
		if err := j.Parse("{" + p.Path + "}"); err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		results, err := j.FindResults(app)
		if err != nil || len(results) == 0 || len(results[0]) != 1 {
			t.Fatalf("%s (%s): found %v, %v", p.Name, p.Path, results, err)
		}
		if got := results[0][0].Interface(); got != w {
			t.Errorf("%s = %v, want %s", p.Name, got, w)
		}
	}
}
