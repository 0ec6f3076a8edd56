package doctor

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/discovery"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/gitops"
	"github.com/argocd-pull/argocd-pull/internal/propagation"
)

// apis is a group of resources a component needs served.
type apis struct {
	id, title string
	resources []string // "resource.group"
	fix       string
}

var (
	ocmAPIs = apis{
		id: "hub-ocm-apis", title: "OCM APIs on the hub",
		resources: []string{
			"managedclusters.cluster.open-cluster-management.io",
			"managedclustersets.cluster.open-cluster-management.io",
			"managedclustersetbindings.cluster.open-cluster-management.io",
			"placements.cluster.open-cluster-management.io",
			"placementdecisions.cluster.open-cluster-management.io",
			"manifestworks.work.open-cluster-management.io",
		},
		fix: "install the OCM hub (clusteradm init, or RHACM's MultiClusterHub): the pull model delivers through ManifestWorks to ManagedClusters a Placement selects",
	}
	argoCDAPIs = apis{
		id: "hub-argocd-apis", title: "Argo CD APIs on the hub",
		resources: []string{
			"applications.argoproj.io",
			"applicationsets.argoproj.io",
			"appprojects.argoproj.io",
		},
		fix: "install Argo CD on the hub (kubectl create namespace argocd; kubectl apply -n argocd -f https://raw.githubusercontent.com/argoproj/argo-cd/stable/manifests/install.yaml), or the OpenShift GitOps operator",
	}
	pullAPIs = apis{
		id: "hub-pull-apis", title: "argocd-pull APIs on the hub",
		resources: []string{
			"multiclusterapplicationsetreports.apps.open-cluster-management.io",
			"gitopsclusters.apps.open-cluster-management.io",
		},
		fix: "install argocd-pull's CRDs: kubectl apply -f config/crd/bases",
	}
)

// servedResources lists the resources an apiserver serves, as "resource.group". API groups
// whose discovery failed (a broken aggregated apiserver) are left out; the rest still counts.
func servedResources(dc discovery.DiscoveryInterface) (map[string]bool, error) {
	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("discovering the served APIs: %w", err)
	}
	served := map[string]bool{}
	for _, l := range lists {
		gv, perr := schema.ParseGroupVersion(l.GroupVersion)
		if perr != nil {
			continue
		}
		for _, r := range l.APIResources {
			if !strings.Contains(r.Name, "/") { // subresources
				served[schema.GroupResource{Group: gv.Group, Resource: r.Name}.String()] = true
			}
		}
	}
	return served, nil
}

// decideAPIs passes when every resource of a is served.
func decideAPIs(a apis, subject string, served map[string]bool) Result {
	var missing []string
	for _, r := range a.resources {
		if !served[r] {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		return Result{ID: a.id, Title: a.title, Subject: subject, Status: StatusFail,
			Message: fmt.Sprintf("not served: %s", strings.Join(missing, ", ")), Fix: a.fix}
	}
	return Result{ID: a.id, Title: a.title, Subject: subject, Status: StatusPass,
		Message: fmt.Sprintf("all %d served", len(a.resources))}
}

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
}

func (h *hub) servedAPIs() (map[string]bool, error) {
	return h.served.get(func() (map[string]bool, error) { return servedResources(h.o.Hub.Discovery) })
}

// unreachable is the result of a check when the hub did not answer discovery: the API checks
// already say why, and every further request would fail the same way.
func (h *hub) unreachable(id, title string) []Result {
	if _, err := h.servedAPIs(); err != nil {
		return []Result{skipped(id, title, "", "the hub did not answer API discovery (see the API checks)")}
	}
	return nil
}

// serves reports whether the hub serves a resource; false when discovery failed.
func (h *hub) serves(resource string) bool {
	served, err := h.servedAPIs()
	return err == nil && served[resource]
}

func checkOCMAPIs(_ context.Context, h *hub) []Result    { return h.apiCheck(ocmAPIs) }
func checkArgoCDAPIs(_ context.Context, h *hub) []Result { return h.apiCheck(argoCDAPIs) }
func checkPullAPIs(_ context.Context, h *hub) []Result   { return h.apiCheck(pullAPIs) }

func (h *hub) apiCheck(a apis) []Result {
	served, err := h.servedAPIs()
	if err != nil {
		return []Result{readFailed(a.id, a.title, "", err)}
	}
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

// selectApplicationSets picks the ApplicationSet called name, or when name is empty those whose
// template says they are meant for the pull model.
func selectApplicationSets(all []unstructured.Unstructured, name string) []unstructured.Unstructured {
	var out []unstructured.Unstructured
	for _, a := range all {
		if name != "" {
			if a.GetName() == name {
				out = append(out, a)
			}
			continue
		}
		labels, annotations := templateMarkers(&a)
		_, hasPull := labels[api.PullLabel]
		if hasPull || annotations[api.ClusterAnnotation] != "" {
			out = append(out, a)
		}
	}
	return out
}

// templateMarkers returns the labels and annotations of an ApplicationSet's Application template.
func templateMarkers(appset *unstructured.Unstructured) (labels, annotations map[string]string) {
	labels, _, _ = unstructured.NestedStringMap(appset.Object, "spec", "template", "metadata", "labels")
	annotations, _, _ = unstructured.NestedStringMap(appset.Object, "spec", "template", "metadata", "annotations")
	return labels, annotations
}

// pulls reports whether the template's pull label parses as true.
func pulls(appset *unstructured.Unstructured) bool {
	labels, _ := templateMarkers(appset)
	ok, err := strconv.ParseBool(labels[api.PullLabel])
	return err == nil && ok
}

func isTemplated(s string) bool { return strings.Contains(s, "{{") }

const (
	idAppSet    = "applicationset-template"
	titleAppSet = "Pull-model ApplicationSet template"
)

func checkApplicationSets(ctx context.Context, h *hub) []Result {
	if r := h.unreachable(idAppSet, titleAppSet); r != nil {
		return r
	}
	if !h.serves("applicationsets.argoproj.io") {
		return []Result{skipped(idAppSet, titleAppSet, "", "the hub does not serve ApplicationSets")}
	}
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

// combine folds findings into one result; no findings is a pass with passMsg.
func combine(id, title, subject, passMsg string, fs []finding) Result {
	if len(fs) == 0 {
		return Result{ID: id, Title: title, Subject: subject, Status: StatusPass, Message: passMsg}
	}
	var statuses []Status
	var msgs, fixes []string
	for _, f := range fs {
		statuses = append(statuses, f.status)
		msgs = append(msgs, f.msg)
		if f.fix != "" {
			fixes = append(fixes, f.fix)
		}
	}
	return Result{ID: id, Title: title, Subject: subject, Status: worst(statuses...),
		Message: strings.Join(msgs, "; "), Fix: strings.Join(fixes, "\n")}
}

// decideApplicationSet checks the template of a pull-model ApplicationSet against the
// documents: the pull label set to true, the cluster annotation (a generator parameter such as
// '{{name}}'), skip-reconcile so that the hub's own Argo CD leaves the Applications alone, and
// the local destination. A template with the cluster annotation but no pull label is flagged:
// it is pushed by the hub's Argo CD, or with skip-reconcile delivered by nobody.
func decideApplicationSet(appset *unstructured.Unstructured) Result {
	subject := appset.GetNamespace() + "/" + appset.GetName()
	labels, annotations := templateMarkers(appset)
	cluster := strings.TrimSpace(annotations[api.ClusterAnnotation])
	skip, _ := strconv.ParseBool(annotations[argocd.SkipReconcileAnnotation])
	addLabel := fmt.Sprintf("add to spec.template.metadata.labels: %s: \"true\"", api.PullLabel)

	value, hasPull := labels[api.PullLabel]
	pull, err := strconv.ParseBool(value)
	switch {
	case hasPull && err != nil:
		return combine(idAppSet, titleAppSet, subject, "", []finding{{StatusFail,
			fmt.Sprintf("label %s is %q, not true or false", api.PullLabel, value), addLabel}})
	case !pull && cluster != "" && skip:
		return combine(idAppSet, titleAppSet, subject, "", []finding{{StatusFail,
			fmt.Sprintf("the template has the cluster annotation and skip-reconcile but not the label %s: \"true\": neither the hub's Argo CD nor argocd-pull delivers its Applications", api.PullLabel),
			addLabel}})
	case !pull && cluster != "":
		return combine(idAppSet, titleAppSet, subject, "", []finding{{StatusWarn,
			fmt.Sprintf("the template has the cluster annotation but not the label %s: \"true\": the hub's Argo CD pushes its Applications instead of the managed clusters pulling them", api.PullLabel),
			addLabel + ", and the annotation " + argocd.SkipReconcileAnnotation + ": \"true\" (or remove " + api.ClusterAnnotation + " to stay with the push model)"}})
	case !pull:
		return combine(idAppSet, titleAppSet, subject, "", []finding{{StatusFail,
			fmt.Sprintf("the template has no label %s: \"true\": its Applications are pushed by the hub's Argo CD, not pulled", api.PullLabel),
			addLabel + ", and the annotations " + api.ClusterAnnotation + ": '{{name}}' and " + argocd.SkipReconcileAnnotation + ": \"true\""}})
	}

	var fs []finding
	switch {
	case cluster == "":
		fs = append(fs, finding{StatusFail,
			fmt.Sprintf("annotation %s is missing: argocd-pull cannot tell which cluster an Application goes to", api.ClusterAnnotation),
			fmt.Sprintf("add to spec.template.metadata.annotations: %s: '{{name}}' (the generator's cluster name)", api.ClusterAnnotation)})
	case !isTemplated(cluster):
		fs = append(fs, finding{StatusWarn,
			fmt.Sprintf("annotation %s is the fixed name %q: every Application the ApplicationSet generates goes to that one cluster", api.ClusterAnnotation, cluster),
			fmt.Sprintf("set %s: '{{name}}' (the generator's cluster name)", api.ClusterAnnotation)})
	}
	if !skip {
		fs = append(fs, finding{StatusFail,
			fmt.Sprintf("annotation %s: \"true\" is missing: the hub's own Argo CD also syncs the generated Applications", argocd.SkipReconcileAnnotation),
			fmt.Sprintf("add to spec.template.metadata.annotations: %s: \"true\" (needs Argo CD 2.7+ / OpenShift GitOps 1.9+ on the hub)", argocd.SkipReconcileAnnotation)})
	}
	server, _, _ := unstructured.NestedString(appset.Object, "spec", "template", "spec", "destination", "server")
	name, _, _ := unstructured.NestedString(appset.Object, "spec", "template", "spec", "destination", "name")
	override := annotations[api.DestinationServerAnnotation] != "" || annotations[api.DestinationNameAnnotation] != ""
	local := server == argocd.LocalServer || (server == "" && name == "in-cluster")
	if !override && !local {
		dest := server
		if dest == "" {
			dest = "name " + strconv.Quote(name)
		}
		fs = append(fs, finding{StatusWarn,
			fmt.Sprintf("the destination is %s, not the local server %s: argocd-pull points the Application at the managed cluster's local server anyway, but the hub's AppProject rules see this one", dest, argocd.LocalServer),
			fmt.Sprintf("set spec.template.spec.destination.server: %s, as the documents do (or say where the managed cluster's Argo CD deploys with the annotation %s or %s)", argocd.LocalServer, api.DestinationServerAnnotation, api.DestinationNameAnnotation)})
	}
	return combine(idAppSet, titleAppSet, subject,
		fmt.Sprintf("pull label, cluster annotation %s, skip-reconcile and the local destination are set", cluster), fs)
}

// decisionGenerator is a clusterDecisionResource generator of an ApplicationSet.
type decisionGenerator struct {
	configMapRef string
	// name is a single decision resource named by the generator; else selector picks them.
	name     string
	selector *metav1.LabelSelector
}

// decisionGenerators finds the clusterDecisionResource generators of an ApplicationSet, also
// inside matrix and merge generators.
func decisionGenerators(appset *unstructured.Unstructured) []decisionGenerator {
	gens, _, _ := unstructured.NestedSlice(appset.Object, "spec", "generators")
	return walkGenerators(gens)
}

func walkGenerators(gens []any) []decisionGenerator {
	var out []decisionGenerator
	for _, g := range gens {
		m, ok := g.(map[string]any)
		if !ok {
			continue
		}
		if cdr, ok := m["clusterDecisionResource"].(map[string]any); ok {
			d := decisionGenerator{selector: &metav1.LabelSelector{}}
			d.configMapRef, _ = cdr["configMapRef"].(string)
			d.name, _ = cdr["name"].(string)
			if raw, ok := cdr["labelSelector"].(map[string]any); ok {
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, d.selector); err != nil {
					d.selector = nil
				}
			}
			out = append(out, d)
		}
		for _, k := range []string{"matrix", "merge"} {
			if nested, ok := m[k].(map[string]any); ok {
				if gs, ok := nested["generators"].([]any); ok {
					out = append(out, walkGenerators(gs)...)
				}
			}
		}
	}
	return out
}

const (
	idGenerator    = "placement-generator"
	titleGenerator = "Placement generator ConfigMap"
)

func checkPlacementGenerators(ctx context.Context, h *hub) []Result {
	if r := h.unreachable(idGenerator, titleGenerator); r != nil {
		return r
	}
	appSets, err := h.applicationSets(ctx)
	if err != nil || len(appSets) == 0 {
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

// decidePlacementGenerator checks the ConfigMap a clusterDecisionResource generator names (cm is
// nil when it does not exist) against the one the documents give.
func decidePlacementGenerator(namespace, ref string, cm *corev1.ConfigMap) Result {
	want := gitops.PlacementGenerator(namespace)
	wantYAML := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  apiVersion: %s\n  kind: %s\n  statusListKey: %s\n  matchKey: %s",
		gitops.PlacementGeneratorName, namespace, want.Data["apiVersion"], want.Data["kind"], want.Data["statusListKey"], want.Data["matchKey"])
	if ref == "" {
		return Result{ID: idGenerator, Title: titleGenerator, Status: StatusFail,
			Message: "a clusterDecisionResource generator has no configMapRef",
			Fix:     fmt.Sprintf("set configMapRef: %s in the generator, and create the ConfigMap (a GitOpsCluster creates it):\n%s", gitops.PlacementGeneratorName, wantYAML)}
	}
	if cm == nil {
		return Result{ID: idGenerator, Title: titleGenerator, Subject: ref, Status: StatusFail,
			Message: fmt.Sprintf("ConfigMap %s/%s does not exist: the ApplicationSet controller cannot read PlacementDecisions", namespace, ref),
			Fix:     "create a GitOpsCluster in the Argo CD namespace (argocd-pull then creates the ConfigMap), or apply:\n" + strings.Replace(wantYAML, gitops.PlacementGeneratorName, ref, 1)}
	}
	var wrong []string
	for _, k := range slices.Sorted(maps.Keys(want.Data)) {
		if got := cm.Data[k]; got != want.Data[k] {
			wrong = append(wrong, fmt.Sprintf("%s is %q, want %q", k, got, want.Data[k]))
		}
	}
	if len(wrong) > 0 {
		return Result{ID: idGenerator, Title: titleGenerator, Subject: ref, Status: StatusFail,
			Message: fmt.Sprintf("ConfigMap %s/%s: %s", namespace, ref, strings.Join(wrong, ", ")),
			Fix:     "set its data as the documents do:\n" + strings.Replace(wantYAML, gitops.PlacementGeneratorName, ref, 1)}
	}
	return Result{ID: idGenerator, Title: titleGenerator, Subject: ref, Status: StatusPass,
		Message: fmt.Sprintf("ConfigMap %s/%s reads PlacementDecisions by clusterName", namespace, ref)}
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
	if r := h.unreachable(idDecisions, titleDecisions); r != nil {
		return r
	}
	if !h.serves("placementdecisions.cluster.open-cluster-management.io") {
		return []Result{skipped(idDecisions, titleDecisions, "", "the hub does not serve PlacementDecisions")}
	}
	all, err := h.placementDecisions(ctx)
	if err != nil || len(all) == 0 {
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

// decidePlacementDecisions warns when a generator selects no PlacementDecision, or decisions
// that name no cluster: the ApplicationSet then generates nothing.
func decidePlacementDecisions(appSet string, g decisionGenerator, decisions []clusterv1beta1.PlacementDecision) Result {
	what := "PlacementDecision " + g.name
	placement := g.name
	if g.name == "" {
		what = "PlacementDecisions labelled " + selectorString(g.selector)
		placement = "of that name"
		if g.selector != nil {
			if p := g.selector.MatchLabels[clusterv1beta1.PlacementLabel]; p != "" {
				placement = p
			}
		}
	}
	clusters := decidedClusters(decisions)
	switch {
	case len(decisions) == 0:
		return Result{ID: idDecisions, Title: titleDecisions, Subject: appSet, Status: StatusWarn,
			Message: fmt.Sprintf("no %s in the Argo CD namespace: the ApplicationSet generates no Application", what),
			Fix: fmt.Sprintf("create the Placement %s in the Argo CD namespace, with a ManagedClusterSetBinding there for the cluster sets it selects from; "+
				"the OCM placement controller then writes its PlacementDecisions", placement)}
	case len(clusters) == 0:
		return Result{ID: idDecisions, Title: titleDecisions, Subject: appSet, Status: StatusWarn,
			Message: fmt.Sprintf("the %s select no cluster", what),
			Fix:     "check the Placement's predicates and that the cluster sets it selects from are bound to the Argo CD namespace (kubectl describe placement)"}
	}
	return Result{ID: idDecisions, Title: titleDecisions, Subject: appSet, Status: StatusPass,
		Message: fmt.Sprintf("%d %s: %s", len(clusters), plural(len(clusters), "cluster", "clusters"), listNames(clusters))}
}

func selectorString(s *metav1.LabelSelector) string {
	if s == nil {
		return "(invalid selector)"
	}
	return metav1.FormatLabelSelector(s)
}

func decidedClusters(decisions []clusterv1beta1.PlacementDecision) []string {
	set := map[string]bool{}
	for _, d := range decisions {
		for _, cd := range d.Status.Decisions {
			if cd.ClusterName != "" {
				set[cd.ClusterName] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// pullApp is a pull-model Application on the hub, by where it goes.
type pullApp struct {
	name, namespace string
	cluster         string
	appNamespace    string // on the managed cluster
	destNamespace   string // where its resources go on the managed cluster
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
			target, pull, err := propagation.Decide(app)
			if err != nil || !pull {
				continue
			}
			dest, _, _ := unstructured.NestedString(app.Object, "spec", "destination", "namespace")
			apps = append(apps, pullApp{name: app.GetName(), namespace: app.GetNamespace(),
				cluster: target.Cluster, appNamespace: target.AppNamespace, destNamespace: dest})
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
	idSecrets       = "cluster-secrets"
	titleSecrets    = "Argo CD cluster secrets of the targeted clusters"
	idNamespaces    = "cluster-namespaces"
	titleNamespaces = "Hub namespaces of the targeted clusters"
	idClusters      = "managed-clusters"
	titleClusters   = "ManagedClusters of the targeted clusters are available"
)

// targets returns the targeted clusters, or the result to give instead when there are none or
// they cannot be read.
func (h *hub) targets(ctx context.Context, id, title string) ([]string, *Result) {
	if r := h.unreachable(id, title); r != nil {
		return nil, &r[0]
	}
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

// decideClusterSecrets fails when a targeted cluster has no Argo CD cluster secret (label
// argocd.argoproj.io/secret-type: cluster, data.name the cluster) in the Argo CD namespace:
// without it the ApplicationSet generates no Application for the cluster.
func decideClusterSecrets(namespace string, clusters []string, secretNames map[string]bool) Result {
	var missing []string
	for _, c := range clusters {
		if !secretNames[c] {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return Result{ID: idSecrets, Title: titleSecrets, Status: StatusFail,
			Message: fmt.Sprintf("%d of %d clusters have no cluster secret in %s: %s", len(missing), len(clusters), namespace, listNames(missing)),
			Fix: fmt.Sprintf("create a GitOpsCluster in %s whose placementRef selects these clusters (argocd-pull writes a credential-free secret per cluster), or per cluster:\n"+
				"apiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\n  namespace: %s\n  labels:\n    %s: cluster\ntype: Opaque\nstringData:\n  name: %s\n  server: https://%s-control-plane:6443  # the cluster's API URL; in the pull model nothing connects to it",
				namespace, gitops.SecretName(missing[0]), namespace, gitops.SecretTypeLabel, missing[0], missing[0])}
	}
	return Result{ID: idSecrets, Title: titleSecrets, Status: StatusPass,
		Message: fmt.Sprintf("all %d have one in %s", len(clusters), namespace)}
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

// decideClusterNamespaces fails when a targeted cluster has no namespace on the hub: that is
// where its ManifestWorks go.
func decideClusterNamespaces(clusters []string, existing map[string]bool) Result {
	var missing []string
	for _, c := range clusters {
		if !existing[c] {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return Result{ID: idNamespaces, Title: titleNamespaces, Status: StatusFail,
			Message: fmt.Sprintf("%d of %d clusters have no namespace on the hub (their ManifestWorks go there): %s", len(missing), len(clusters), listNames(missing)),
			Fix:     fmt.Sprintf("accept the clusters' registration on the hub (clusteradm accept --clusters %s): the hub creates a namespace for each accepted cluster", strings.Join(missing, ","))}
	}
	return Result{ID: idNamespaces, Title: titleNamespaces, Status: StatusPass,
		Message: fmt.Sprintf("all %d have one", len(clusters))}
}

func checkManagedClusters(ctx context.Context, h *hub) []Result {
	clusters, res := h.targets(ctx, idClusters, titleClusters)
	if res != nil {
		return []Result{*res}
	}
	if !h.serves("managedclusters.cluster.open-cluster-management.io") {
		return []Result{skipped(idClusters, titleClusters, "", "the hub does not serve ManagedClusters")}
	}
	list := &clusterv1.ManagedClusterList{}
	if err := h.o.Hub.Client.List(ctx, list); err != nil {
		return []Result{readFailed(idClusters, titleClusters, "", fmt.Errorf("listing ManagedClusters: %w", err))}
	}
	byName := map[string]*clusterv1.ManagedCluster{}
	for i := range list.Items {
		byName[list.Items[i].Name] = &list.Items[i]
	}
	return []Result{decideManagedClusters(clusters, byName)}
}

// decideManagedClusters fails when a targeted cluster has no ManagedCluster, or one that is not
// Available: its work agent is not there to pull the Application.
func decideManagedClusters(clusters []string, byName map[string]*clusterv1.ManagedCluster) Result {
	var missing, unavailable []string
	for _, c := range clusters {
		mc, ok := byName[c]
		switch {
		case !ok:
			missing = append(missing, c)
		case !apimeta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable):
			unavailable = append(unavailable, c)
		}
	}
	var fs []finding
	if len(missing) > 0 {
		fs = append(fs, finding{StatusFail,
			fmt.Sprintf("no ManagedCluster for %s", listNames(missing)),
			"register the clusters with OCM (clusteradm join on the cluster, clusteradm accept on the hub), or fix the cluster names the Placement or the Applications' annotation " + api.ClusterAnnotation + " give"})
	}
	if len(unavailable) > 0 {
		fs = append(fs, finding{StatusFail,
			fmt.Sprintf("not Available (%s is not True): %s", clusterv1.ManagedClusterConditionAvailable, listNames(unavailable)),
			"the clusters' agents stopped reporting: check the klusterlet in open-cluster-management-agent on each cluster (kubectl get managedcluster shows since when)"})
	}
	return combine(idClusters, titleClusters, "", fmt.Sprintf("all %d exist and are Available", len(clusters)), fs)
}
