package doctor

// The hub checks' decisions: pure functions from what was read to a Result, each unit-tested
// in decide_test.go.

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/gitops"
	"github.com/argocd-pull/argocd-pull/internal/hubapis"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/propagation"
	"github.com/argocd-pull/argocd-pull/internal/tenancy"
)

// decideAPIs passes when every resource of a is served.
func decideAPIs(a hubapis.Set, subject string, served map[string]bool) Result {
	if missing := a.Missing(served); len(missing) > 0 {
		return Result{ID: a.ID, Title: a.Title, Subject: subject, Status: StatusFail,
			Message: fmt.Sprintf("not served: %s", strings.Join(missing, ", ")), Fix: a.Fix}
	}
	return Result{ID: a.ID, Title: a.Title, Subject: subject, Status: StatusPass,
		Message: fmt.Sprintf("all %d served", len(a.Resources))}
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

// stampedMarkersRefused is the controller's own verdict (manifestwork.ReadMarkers) on the markers of an
// Application the template generates, each generator parameter ('{{...}}') standing for a valid
// name: nil when it would take the Application.
func stampedMarkersRefused(appset *unstructured.Unstructured, labels, annotations map[string]string) error {
	app := argocd.NewApplication()
	app.SetNamespace(appset.GetNamespace())
	app.SetLabels(labels)
	stamped := make(map[string]string, len(annotations))
	for k, v := range annotations {
		if isTemplated(v) {
			v = "generated"
		}
		stamped[k] = v
	}
	app.SetAnnotations(stamped)
	_, _, err := manifestwork.ReadMarkers(app)
	return err
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

	refused := stampedMarkersRefused(appset, labels, annotations)
	var fs []finding
	switch {
	case cluster == "":
		fs = append(fs, finding{StatusFail,
			fmt.Sprintf("annotation %s is missing: argocd-pull cannot tell which cluster an Application goes to", api.ClusterAnnotation),
			fmt.Sprintf("add to spec.template.metadata.annotations: %s: '{{name}}' (the generator's cluster name)", api.ClusterAnnotation)})
	case refused != nil:
		fs = append(fs, finding{StatusFail,
			fmt.Sprintf("argocd-pull refuses every Application of the template: %v", refused),
			fmt.Sprintf("set %s: '{{name}}' (the generator's cluster name), and %s to a namespace name or leave it out", api.ClusterAnnotation, api.AppNamespaceAnnotation)})
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
	if f, ok := hubDestination(appset, cluster); !ok {
		fs = append(fs, f)
	}
	return combine(idAppSet, titleAppSet, subject,
		fmt.Sprintf("pull label, cluster annotation %s, skip-reconcile and the destination naming the cluster are set", cluster), fs)
}

// namedDestinationFix is how a template names the cluster in its destination.
const namedDestinationFix = "set spec.template.spec.destination to name: '{{name}}' (the cluster annotation's value) and your namespace, without server: on the hub it resolves to the cluster's GitOpsCluster secret, which holds no credentials; argocd-pull delivers the Application to the cluster's own in-cluster destination either way (docs/security.md)"

// hubDestination checks what a template's destination is on the hub, to Argo CD's API server:
// argocd-pull delivers every pull-model Application to its cluster's own in-cluster destination
// whatever it says, but the API server's calls that act on the destination act there. Naming the
// cluster (the hardened form) is ok; the documents' in-cluster server is the hub itself.
func hubDestination(appset *unstructured.Unstructured, cluster string) (finding, bool) {
	server, _, _ := unstructured.NestedString(appset.Object, "spec", "template", "spec", "destination", "server")
	name, _, _ := unstructured.NestedString(appset.Object, "spec", "template", "spec", "destination", "name")
	switch {
	case server == "" && name != "" && name == cluster:
		return finding{}, true
	case server == argocd.LocalServer || (server == "" && name == "in-cluster"):
		return finding{StatusWarn,
			fmt.Sprintf("the destination is the in-cluster server %s, which on the hub is the hub itself to Argo CD's API server: its resource-level verbs are refused on argocd-pull's resource trees (no node has a uid), but three calls act on the destination without that check: the resource events with an empty uid (the hub's events in that namespace with none), ServerSideDiff (refused only while no managed resources are cached) and actions on the Application itself",
				argocd.LocalServer), namedDestinationFix}, false
	}
	dest := server
	if dest == "" {
		dest = "name " + strconv.Quote(name)
	}
	return finding{StatusWarn,
		fmt.Sprintf("the destination is %s, not the cluster the Application goes to (%s): argocd-pull delivers it to that cluster's in-cluster destination anyway, but on the hub Argo CD's API server acts on %s", dest, cluster, dest),
		namedDestinationFix}, false
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

// decideClientConfigs warns of each ManagedCluster whose client config URL names the hub. The
// cluster secrets never carry that URL (gitops.Server), so nothing on the hub follows it; but no
// agent of a healthy cluster writes the hub's address as its own.
func decideClientConfigs(clusters []clusterv1.ManagedCluster, hub gitops.HubNames) Result {
	var named []string
	for _, mc := range clusters {
		for _, c := range mc.Spec.ManagedClusterClientConfigs {
			if why := gitops.HubAddress(c.URL, hub); why != "" {
				named = append(named, fmt.Sprintf("%s (%s: %s)", mc.Name, shortURL(c.URL), why))
				break
			}
		}
	}
	if len(named) == 0 {
		return Result{ID: idClientConfigs, Title: titleClientConfigs, Status: StatusPass,
			Message: fmt.Sprintf("none of %d points at the hub", len(clusters))}
	}
	return Result{ID: idClientConfigs, Title: titleClientConfigs, Status: StatusWarn,
		Message: "client config URLs naming the hub: " + strings.Join(named, "; "),
		Fix:     "the cluster's registration agent wrote these (a cluster may update its own ManagedCluster): argocd-pull's cluster secrets never carry them, but check the klusterlet of each cluster named (its --cluster-name and external server URLs), and whether the cluster is compromised"}
}

// decideClusterSetLabels warns of each ManagedClusterSet that a cluster joins by its own labels
// (tenancy.JoinedByOwnLabels), bound in a namespace Applications are taken from: any cluster may
// label itself into it and receive that namespace's Applications.
func decideClusterSetLabels(p propagation.Policy, bindings []clusterv1beta2.ManagedClusterSetBinding, sets []clusterv1beta2.ManagedClusterSet) Result {
	byName := make(map[string]*clusterv1beta2.ManagedClusterSet, len(sets))
	for i := range sets {
		byName[sets[i].Name] = &sets[i]
	}
	var named []string
	bound := 0
	for _, b := range bindings {
		set := byName[b.Spec.ClusterSet]
		if set == nil || !p.Allows(b.Namespace) {
			continue
		}
		bound++
		if tenancy.JoinedByOwnLabels(set) {
			named = append(named, fmt.Sprintf("%s in %s (%s)", set.Name, b.Namespace, selectorString(set.Spec.ClusterSelector.LabelSelector)))
		}
	}
	if bound == 0 {
		return Result{ID: idSetLabels, Title: titleSetLabels, Status: StatusPass,
			Message: "no ManagedClusterSet is bound in the namespaces Applications are taken from"}
	}
	if len(named) == 0 {
		return Result{ID: idSetLabels, Title: titleSetLabels, Status: StatusPass,
			Message: fmt.Sprintf("none of %d %s in the namespaces Applications are taken from selects clusters by a label they may set", bound, plural(bound, "binding", "bindings"))}
	}
	slices.Sort(named)
	return Result{ID: idSetLabels, Title: titleSetLabels, Status: StatusWarn,
		Message: fmt.Sprintf("%d %s bound where Applications are taken from %s clusters by labels each cluster may set on its own ManagedCluster: %s",
			len(named), plural(len(named), "ManagedClusterSet", "ManagedClusterSets"), plural(len(named), "selects", "select"), listNames(named)),
		Fix: "a cluster's registration agent may update its own ManagedCluster's labels, all but " + clusterv1beta2.ClusterSetLabel +
			" (OCM's webhook asks for managedclustersets/join to change that one), so any cluster may make itself a member and receive the Applications of the namespace named: bind tenants to sets of that label (selectorType ExclusiveClusterSetLabel), or select on it alone"}
}

// shortURL cuts what a cluster wrote to a length a report line holds.
func shortURL(s string) string {
	if len(s) > 100 {
		return s[:100] + "..."
	}
	return s
}
