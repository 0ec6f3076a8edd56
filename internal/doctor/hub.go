package doctor

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/gitops"
	"github.com/argocd-pull/argocd-pull/internal/hubapis"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

// memo is a value read at most once per run: the checks run one after another and share what
// they read.
type memo[T any] struct {
	done bool
	v    T
	err  error
}

func (m *memo[T]) get(read func() (T, error)) (T, error) {
	if !m.done {
		m.done = true
		m.v, m.err = read()
	}
	return m.v, m.err
}

// hub holds what the hub checks read, each fetched once.
type hub struct {
	o Options

	served    memo[map[string]bool]
	appSets   memo[[]unstructured.Unstructured]
	apps      memo[[]pullApp]
	decisions memo[[]generatorDecisions]
	clusters  memo[[]clusterv1.ManagedCluster]
}

// managedClusters lists the hub's ManagedClusters, once for every check that reads them.
func (h *hub) managedClusters(ctx context.Context) ([]clusterv1.ManagedCluster, error) {
	return h.clusters.get(func() ([]clusterv1.ManagedCluster, error) {
		list := &clusterv1.ManagedClusterList{}
		if err := h.o.Hub.Client.List(ctx, list); err != nil {
			return nil, fmt.Errorf("listing ManagedClusters: %w", err)
		}
		return list.Items, nil
	})
}

func (h *hub) servedAPIs() (map[string]bool, error) {
	return h.served.get(func() (map[string]bool, error) { return hubapis.Served(h.o.Hub.Discovery) })
}

// serves reports whether the hub serves a resource; false when discovery failed.
func (h *hub) serves(resource string) bool {
	served, err := h.servedAPIs()
	return err == nil && served[resource]
}

func checkOCMAPIs(_ context.Context, h *hub) []Result    { return h.apiCheck(hubapis.OCM) }
func checkArgoCDAPIs(_ context.Context, h *hub) []Result { return h.apiCheck(hubapis.ArgoCD) }
func checkPullAPIs(_ context.Context, h *hub) []Result   { return h.apiCheck(hubapis.Pull) }

func (h *hub) apiCheck(a hubapis.Set) []Result {
	served, _ := h.servedAPIs() // the runner answered a discovery error
	return []Result{decideAPIs(a, "", served)}
}

// applicationSets returns the ApplicationSets the checks look at: the one --applicationset
// names, else every ApplicationSet in the Argo CD namespace whose template carries the pull
// label or the cluster annotation.
func (h *hub) applicationSets(ctx context.Context) ([]unstructured.Unstructured, error) {
	return h.appSets.get(func() ([]unstructured.Unstructured, error) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(argocd.ApplicationSetGVK.GroupVersion().WithKind("ApplicationSetList"))
		if err := h.o.Hub.Client.List(ctx, list, client.InNamespace(h.o.ArgoCDNamespace)); err != nil {
			return nil, fmt.Errorf("listing ApplicationSets in %s: %w", h.o.ArgoCDNamespace, err)
		}
		selected := selectApplicationSets(list.Items, h.o.ApplicationSet)
		if h.o.ApplicationSet != "" && len(selected) == 0 {
			return nil, fmt.Errorf("ApplicationSet %s/%s not found", h.o.ArgoCDNamespace, h.o.ApplicationSet)
		}
		return selected, nil
	})
}

const (
	idAppSet    = "applicationset-template"
	titleAppSet = "Pull-model ApplicationSet template"
)

func checkApplicationSets(ctx context.Context, h *hub) []Result {
	appSets, err := h.applicationSets(ctx)
	if err != nil {
		return []Result{readFailed(idAppSet, titleAppSet, "", err)}
	}
	if len(appSets) == 0 {
		return []Result{skipped(idAppSet, titleAppSet, "",
			fmt.Sprintf("no ApplicationSet in %s has a pull-model label or annotation in its template", h.o.ArgoCDNamespace))}
	}
	out := make([]Result, 0, len(appSets))
	for i := range appSets {
		out = append(out, decideApplicationSet(&appSets[i]))
	}
	return out
}

// finding is one problem of a check that looks at several things, with what fixes it.
type finding struct {
	status   Status
	msg, fix string
}

// decisionGenerator is a clusterDecisionResource generator of an ApplicationSet.
type decisionGenerator struct {
	configMapRef string
	// name is a single decision resource named by the generator; else selector picks them.
	name     string
	selector *metav1.LabelSelector
}

const (
	idGenerator    = "placement-generator"
	titleGenerator = "Placement generator ConfigMap"
)

func checkPlacementGenerators(ctx context.Context, h *hub) []Result {
	appSets, err := h.applicationSets(ctx)
	if err != nil {
		return []Result{readFailed(idGenerator, titleGenerator, "", err)}
	}
	if len(appSets) == 0 {
		return []Result{skipped(idGenerator, titleGenerator, "", "no pull-model ApplicationSet to look at")}
	}
	refs := map[string]bool{}
	for i := range appSets {
		for _, g := range decisionGenerators(&appSets[i]) {
			refs[g.configMapRef] = true
		}
	}
	if len(refs) == 0 {
		return []Result{skipped(idGenerator, titleGenerator, "", "no ApplicationSet uses the clusterDecisionResource generator")}
	}
	var out []Result
	for _, ref := range slices.Sorted(maps.Keys(refs)) {
		var cm *corev1.ConfigMap
		if ref != "" {
			cm = &corev1.ConfigMap{}
			err := h.o.Hub.Client.Get(ctx, client.ObjectKey{Namespace: h.o.ArgoCDNamespace, Name: ref}, cm)
			switch {
			case apierrors.IsNotFound(err):
				cm = nil
			case err != nil:
				out = append(out, readFailed(idGenerator, titleGenerator, ref, fmt.Errorf("reading ConfigMap %s/%s: %w", h.o.ArgoCDNamespace, ref, err)))
				continue
			}
		}
		out = append(out, decidePlacementGenerator(h.o.ArgoCDNamespace, ref, cm))
	}
	return out
}

// generatorDecisions are the PlacementDecisions one generator of one ApplicationSet selects.
type generatorDecisions struct {
	appSet    string // namespace/name
	generator decisionGenerator
	decisions []clusterv1beta1.PlacementDecision
	err       error
}

// placementDecisions reads, for every clusterDecisionResource generator of the pull-model
// ApplicationSets, the PlacementDecisions it selects in the Argo CD namespace (where the
// ApplicationSet controller reads them).
func (h *hub) placementDecisions(ctx context.Context) ([]generatorDecisions, error) {
	return h.decisions.get(func() ([]generatorDecisions, error) {
		appSets, err := h.applicationSets(ctx)
		if err != nil {
			return nil, err
		}
		var all []generatorDecisions
		for i := range appSets {
			if !pulls(&appSets[i]) {
				continue
			}
			for _, g := range decisionGenerators(&appSets[i]) {
				gd := generatorDecisions{appSet: appSets[i].GetNamespace() + "/" + appSets[i].GetName(), generator: g}
				gd.decisions, gd.err = h.readDecisions(ctx, g)
				all = append(all, gd)
			}
		}
		return all, nil
	})
}

func (h *hub) readDecisions(ctx context.Context, g decisionGenerator) ([]clusterv1beta1.PlacementDecision, error) {
	if g.name != "" {
		d := clusterv1beta1.PlacementDecision{}
		err := h.o.Hub.Client.Get(ctx, client.ObjectKey{Namespace: h.o.ArgoCDNamespace, Name: g.name}, &d)
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading PlacementDecision %s/%s: %w", h.o.ArgoCDNamespace, g.name, err)
		}
		return []clusterv1beta1.PlacementDecision{d}, nil
	}
	if g.selector == nil {
		return nil, fmt.Errorf("the generator's labelSelector does not parse")
	}
	sel, err := metav1.LabelSelectorAsSelector(g.selector)
	if err != nil {
		return nil, fmt.Errorf("the generator's labelSelector: %w", err)
	}
	list := &clusterv1beta1.PlacementDecisionList{}
	if err := h.o.Hub.Client.List(ctx, list, client.InNamespace(h.o.ArgoCDNamespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing PlacementDecisions in %s: %w", h.o.ArgoCDNamespace, err)
	}
	return list.Items, nil
}

const (
	idDecisions    = "placement-decisions"
	titleDecisions = "Clusters the ApplicationSet's Placement selects"
)

func checkPlacementDecisions(ctx context.Context, h *hub) []Result {
	all, err := h.placementDecisions(ctx)
	if err != nil {
		return []Result{readFailed(idDecisions, titleDecisions, "", err)}
	}
	if len(all) == 0 {
		return []Result{skipped(idDecisions, titleDecisions, "", "no pull-model ApplicationSet uses the clusterDecisionResource generator")}
	}
	out := make([]Result, 0, len(all))
	for _, gd := range all {
		if gd.err != nil {
			out = append(out, readFailed(idDecisions, titleDecisions, gd.appSet, gd.err))
			continue
		}
		out = append(out, decidePlacementDecisions(gd.appSet, gd.generator, gd.decisions))
	}
	return out
}

// pullApp is a pull-model Application on the hub, by where it goes.
type pullApp struct {
	name, namespace string
	cluster         string
	appNamespace    string // on the managed cluster
	destNamespace   string // where its resources go on the managed cluster
	project         string
	repoURLs        []string // what its cluster's Argo CD fetches from (argocd.RepoURLs)
}

// pullApplications reads the pull-model Applications in the Argo CD namespace; Applications
// with invalid markers are left out (the propagation controller reports those on them).
func (h *hub) pullApplications(ctx context.Context) ([]pullApp, error) {
	return h.apps.get(func() ([]pullApp, error) {
		req, err := labels.NewRequirement(api.PullLabel, selection.Exists, nil)
		if err != nil {
			return nil, err
		}
		list := argocd.NewApplicationList()
		if err := h.o.Hub.Client.List(ctx, list, client.InNamespace(h.o.ArgoCDNamespace),
			client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*req)}); err != nil {
			return nil, fmt.Errorf("listing pull-model Applications in %s: %w", h.o.ArgoCDNamespace, err)
		}
		var apps []pullApp
		for i := range list.Items {
			app := &list.Items[i]
			target, pull, err := manifestwork.ReadMarkers(app)
			if err != nil || !pull {
				continue
			}
			dest, _, _ := unstructured.NestedString(app.Object, "spec", "destination", "namespace")
			apps = append(apps, pullApp{name: app.GetName(), namespace: app.GetNamespace(),
				cluster: target.Cluster, appNamespace: target.AppNamespace, destNamespace: dest,
				project: argocd.Project(app), repoURLs: argocd.RepoURLs(app)})
		}
		return apps, nil
	})
}

// targetedClusters are the clusters the pull-model ApplicationSets' PlacementDecisions select
// and the clusters existing pull-model Applications name.
func (h *hub) targetedClusters(ctx context.Context) ([]string, error) {
	set := map[string]bool{}
	if h.serves("placementdecisions.cluster.open-cluster-management.io") {
		decisions, err := h.placementDecisions(ctx)
		if err != nil {
			return nil, err
		}
		for _, gd := range decisions {
			for _, c := range decidedClusters(gd.decisions) {
				set[c] = true
			}
		}
	}
	if h.serves("applications.argoproj.io") {
		apps, err := h.pullApplications(ctx)
		if err != nil {
			return nil, err
		}
		for _, a := range apps {
			set[a.cluster] = true
		}
	}
	return slices.Sorted(maps.Keys(set)), nil
}

// namespacesFor returns, for a managed cluster, the namespaces its Applications deploy into
// and the namespaces the Applications themselves live in there: from the pull-model
// Applications that target it, and from the pull-model ApplicationSet templates (values that
// are generator parameters cannot be known and are left out). The Application namespace
// defaults to the hub Application's namespace, as argocd-pull does.
func (h *hub) namespacesFor(ctx context.Context, cluster string) (dest, app []string) {
	destSet, appSet := map[string]bool{}, map[string]bool{}
	apps, _ := h.pullApplications(ctx)
	for _, a := range apps {
		if a.cluster != cluster {
			continue
		}
		if a.destNamespace != "" {
			destSet[a.destNamespace] = true
		}
		appSet[a.appNamespace] = true
	}
	appSets, _ := h.applicationSets(ctx)
	for i := range appSets {
		if !pulls(&appSets[i]) {
			continue
		}
		ns, _, _ := unstructured.NestedString(appSets[i].Object, "spec", "template", "spec", "destination", "namespace")
		if ns != "" && !isTemplated(ns) {
			destSet[ns] = true
		}
		_, annotations := templateMarkers(&appSets[i])
		switch an := annotations[api.AppNamespaceAnnotation]; {
		case an == "":
			appSet[appSets[i].GetNamespace()] = true
		case !isTemplated(an):
			appSet[an] = true
		}
	}
	if len(appSet) == 0 {
		appSet[h.o.ArgoCDNamespace] = true
	}
	return slices.Sorted(maps.Keys(destSet)), slices.Sorted(maps.Keys(appSet))
}

const (
	idSecrets          = "cluster-secrets"
	titleSecrets       = "Argo CD cluster secrets of the targeted clusters"
	idNamespaces       = "cluster-namespaces"
	titleNamespaces    = "Hub namespaces of the targeted clusters"
	idClusters         = "managed-clusters"
	titleClusters      = "ManagedClusters of the targeted clusters are available"
	idClientConfigs    = "cluster-client-configs"
	titleClientConfigs = "No ManagedCluster's client config points at the hub"
	idSetLabels        = "cluster-set-labels"
	titleSetLabels     = "No cluster joins a tenant's ManagedClusterSet by its own labels"
)

// targets returns the targeted clusters, or the result to give instead when there are none or
// they cannot be read.
func (h *hub) targets(ctx context.Context, id, title string) ([]string, *Result) {
	clusters, err := h.targetedClusters(ctx)
	if err != nil {
		r := readFailed(id, title, "", err)
		return nil, &r
	}
	if len(clusters) == 0 {
		r := skipped(id, title, "", fmt.Sprintf("no targeted cluster: no PlacementDecision of a pull-model ApplicationSet names one, and no pull-model Application in %s", h.o.ArgoCDNamespace))
		return nil, &r
	}
	return clusters, nil
}

func checkClusterSecrets(ctx context.Context, h *hub) []Result {
	clusters, res := h.targets(ctx, idSecrets, titleSecrets)
	if res != nil {
		return []Result{*res}
	}
	secrets := &corev1.SecretList{}
	if err := h.o.Hub.Client.List(ctx, secrets, client.InNamespace(h.o.ArgoCDNamespace),
		client.MatchingLabels{gitops.SecretTypeLabel: "cluster"}); err != nil {
		return []Result{readFailed(idSecrets, titleSecrets, "", fmt.Errorf("listing cluster secrets in %s: %w", h.o.ArgoCDNamespace, err))}
	}
	// Only the cluster name is read from a secret; nothing else of it is kept or shown.
	names := map[string]bool{}
	for _, s := range secrets.Items {
		names[string(s.Data["name"])] = true
	}
	return []Result{decideClusterSecrets(h.o.ArgoCDNamespace, clusters, names)}
}

func checkClusterNamespaces(ctx context.Context, h *hub) []Result {
	clusters, res := h.targets(ctx, idNamespaces, titleNamespaces)
	if res != nil {
		return []Result{*res}
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NamespaceList"))
	if err := h.o.Hub.Client.List(ctx, list); err != nil {
		return []Result{readFailed(idNamespaces, titleNamespaces, "", fmt.Errorf("listing namespaces: %w", err))}
	}
	existing := map[string]bool{}
	for _, ns := range list.Items {
		if ns.DeletionTimestamp == nil {
			existing[ns.Name] = true
		}
	}
	return []Result{decideClusterNamespaces(clusters, existing)}
}

func checkManagedClusters(ctx context.Context, h *hub) []Result {
	clusters, res := h.targets(ctx, idClusters, titleClusters)
	if res != nil {
		return []Result{*res}
	}
	list, err := h.managedClusters(ctx)
	if err != nil {
		return []Result{readFailed(idClusters, titleClusters, "", err)}
	}
	byName := map[string]*clusterv1.ManagedCluster{}
	for i := range list {
		byName[list[i].Name] = &list[i]
	}
	return []Result{decideManagedClusters(clusters, byName)}
}

// checkClientConfigs reads every ManagedCluster's client config URLs (each cluster's agent may
// write its own) and the hub's addresses: its apiserver's URL, and the IPs of the kubernetes
// Service and its endpoints, where doctor may read them.
func checkClientConfigs(ctx context.Context, h *hub) []Result {
	list, err := h.managedClusters(ctx)
	if err != nil {
		return []Result{readFailed(idClientConfigs, titleClientConfigs, "", err)}
	}
	var addresses []string
	svc := &corev1.Service{}
	if err := h.o.Hub.Client.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: "kubernetes"}, svc); err == nil {
		addresses = append(addresses, svc.Spec.ClusterIPs...)
	}
	endpoints := &discoveryv1.EndpointSliceList{}
	if err := h.o.Hub.Client.List(ctx, endpoints, client.InNamespace(metav1.NamespaceDefault), client.MatchingLabels{discoveryv1.LabelServiceName: "kubernetes"}); err == nil {
		for _, s := range endpoints.Items {
			for _, e := range s.Endpoints {
				addresses = append(addresses, e.Addresses...)
			}
		}
	}
	return []Result{decideClientConfigs(list, gitops.NewHubNames(h.o.Hub.URL, addresses...))}
}

// checkClusterSetLabels reads every ManagedClusterSetBinding and ManagedClusterSet: the bindings of
// the namespaces Applications are taken from say which clusters those namespaces reach.
func checkClusterSetLabels(ctx context.Context, h *hub) []Result {
	bindings := &clusterv1beta2.ManagedClusterSetBindingList{}
	if err := h.o.Hub.Client.List(ctx, bindings); err != nil {
		return []Result{readFailed(idSetLabels, titleSetLabels, "", fmt.Errorf("listing ManagedClusterSetBindings: %w", err))}
	}
	sets := &clusterv1beta2.ManagedClusterSetList{}
	if err := h.o.Hub.Client.List(ctx, sets); err != nil {
		return []Result{readFailed(idSetLabels, titleSetLabels, "", fmt.Errorf("listing ManagedClusterSets: %w", err))}
	}
	return []Result{decideClusterSetLabels(h.o.policy(), bindings.Items, sets.Items)}
}
