// Package upstreamwork builds ManifestWorks as the upstream pull controllers write them, for the
// tests and the lab scenario that show argocd-pull taking over their fleet: RHACM's propagation
// controller (stolostron/multicloud-integrations, propagation-controller/application) and OCM's
// argocd-pull-integration in basic mode (internal/basic/application). The shapes follow their
// helper.go: name, labels, annotations, payload, feedback rules, update strategy, delete option.
//
// It is a stand-in for the controllers, not for the works: what the tests then do with a work is
// done by the real work agent and the real Argo CD. What the upstream controllers do and this does
// not: they rewrite their work on every Application change (OCM on every update, status too;
// RHACM on changes beyond status), recreate a deleted one on the next such change, write the hub
// Application's status from the feedback (RHACM through its report), delete the works of deleted
// Applications (OCM sweeps every 5 minutes), and remove the hub Application's operation after
// delivering it. The tests that need "the upstream controller still runs" do its rewrite by hand.
package upstreamwork

import (
	"crypto/sha1" //nolint:gosec // RHACM's ApplicationSet hash label is a SHA-1; this reproduces it
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
)

// Writer is an upstream pull controller.
type Writer string

const (
	// RHACM is stolostron/multicloud-integrations' propagation controller.
	RHACM Writer = "rhacm"
	// OCMBasic is open-cluster-management-io/argocd-pull-integration in --mode=basic.
	OCMBasic Writer = "ocm-basic"
)

const inCluster = "https://kubernetes.default.svc"

// Name is the upstream work name of a hub Application: its name and the first 5 characters of
// its UID.
func Name(app *unstructured.Unstructured) string {
	uid := string(app.GetUID())
	if len(uid) > 5 {
		uid = uid[:5]
	}
	return app.GetName() + "-" + uid
}

// Work is the ManifestWork writer would write for the hub Application app (with its UID), and
// for RHACM, project: the app's AppProject on the hub (nil for the default one, which RHACM does
// not carry). appSet is the name of the ApplicationSet that owns app, "" when none.
func Work(writer Writer, app, project *unstructured.Unstructured, appSet string) (*workv1.ManifestWork, error) {
	annotations := app.GetAnnotations()
	cluster := annotations[api.ClusterAnnotation]
	if cluster == "" || app.GetUID() == "" {
		return nil, fmt.Errorf("the Application %s needs the annotation %s and a UID", app.GetName(), api.ClusterAnnotation)
	}
	payloadNS := annotations[api.AppNamespaceAnnotation]
	if payloadNS == "" {
		payloadNS = app.GetNamespace()
	}
	payload, err := application(writer, app, payloadNS, appSet)
	if err != nil {
		return nil, err
	}
	w := &workv1.ManifestWork{}
	w.Name, w.Namespace = Name(app), cluster
	w.Annotations = map[string]string{
		api.HubApplicationNamespaceAnnotation: app.GetNamespace(),
		api.HubApplicationNameAnnotation:      app.GetName(),
	}
	w.Labels = map[string]string{api.PullLabel: "true"}
	if appSet != "" {
		w.Annotations[api.HostingApplicationSetAnnotation] = app.GetNamespace() + "/" + appSet
		switch writer {
		case RHACM: // the labels are replaced: no pull label
			sum := sha1.Sum([]byte(app.GetNamespace() + "/" + appSet)) //nolint:gosec // as RHACM does
			w.Labels = map[string]string{api.ApplicationSetLabel: "true", api.UpstreamAppSetHashLabel: hex.EncodeToString(sum[:])}
		default:
			w.Labels[api.ApplicationSetLabel] = "true"
		}
	}
	ignore := []string{".operation"}
	if writer == RHACM {
		ignore = append(ignore, `.metadata.annotations["argocd.argoproj.io/refresh"]`)
		ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{
			"name":        payloadNS,
			"annotations": map[string]any{"argocd.argoproj.io/sync-options": "Delete=false"},
			"labels":      map[string]any{"argocd.argoproj.io/managed-by": "openshift-gitops"},
		}}
		rules := []workv1.OrphaningRule{{Resource: "namespaces", Name: payloadNS}}
		if err := add(w, ns); err != nil {
			return nil, err
		}
		if project != nil {
			p := map[string]any{"apiVersion": argocd.Group + "/v1alpha1", "kind": "AppProject", "metadata": map[string]any{
				"name": project.GetName(), "namespace": project.GetNamespace(),
				"labels": project.GetLabels(), "annotations": project.GetAnnotations(),
			}, "spec": project.Object["spec"]}
			if err := add(w, p); err != nil {
				return nil, err
			}
			rules = append(rules, workv1.OrphaningRule{Group: argocd.Group, Resource: "appprojects", Namespace: project.GetNamespace(), Name: project.GetName()})
		}
		w.Spec.DeleteOption = &workv1.DeleteOption{
			PropagationPolicy: workv1.DeletePropagationPolicyTypeSelectivelyOrphan,
			SelectivelyOrphan: &workv1.SelectivelyOrphan{OrphaningRules: rules},
		}
	}
	if err := add(w, payload); err != nil {
		return nil, err
	}
	rules := []workv1.FeedbackRule{}
	for _, p := range []workv1.JsonPath{
		{Name: "healthStatus", Path: ".status.health.status"},
		{Name: "syncStatus", Path: ".status.sync.status"},
		{Name: "operationStateStartedAt", Path: ".status.operationState.startedAt"},
		{Name: "operationStatePhase", Path: ".status.operationState.phase"},
		{Name: "syncRevision", Path: ".status.sync.revision"},
	} {
		rules = append(rules, workv1.FeedbackRule{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{p}})
	}
	w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{{
		ResourceIdentifier: workv1.ResourceIdentifier{Group: argocd.Group, Resource: "applications", Namespace: payloadNS, Name: app.GetName()},
		FeedbackRules:      rules,
		UpdateStrategy: &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeServerSideApply, ServerSideApply: &workv1.ServerSideApplyConfig{
			Force:        true,
			IgnoreFields: []workv1.IgnoreField{{Condition: workv1.IgnoreFieldsConditionOnSpokeChange, JSONPaths: ignore}},
		}},
	}}
	return w, nil
}

// application is the managed-cluster Application writer puts in its work.
func application(writer Writer, app *unstructured.Unstructured, namespace, appSet string) (map[string]any, error) {
	labels := map[string]any{}
	for k, v := range app.GetLabels() {
		if k != api.PullLabel {
			labels[k] = v
		}
	}
	drop := map[string]bool{api.ClusterAnnotation: true, api.AppNamespaceAnnotation: true, argocd.SkipReconcileAnnotation: true}
	if writer == OCMBasic {
		drop[api.DestinationNameAnnotation], drop[api.DestinationServerAnnotation] = true, true
	}
	annotations := map[string]any{}
	for k, v := range app.GetAnnotations() {
		if !drop[k] {
			annotations[k] = v
		}
	}
	if appSet != "" {
		labels[api.ApplicationSetLabel] = "true"
		annotations[api.HostingApplicationSetAnnotation] = app.GetNamespace() + "/" + appSet
	}
	spec := map[string]any{}
	data, err := json.Marshal(app.Object["spec"])
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, &spec); err != nil {
		return nil, err
	}
	dest, _ := spec["destination"].(map[string]any)
	if dest == nil {
		dest = map[string]any{}
	}
	dest["name"], dest["server"] = "", inCluster
	if writer == OCMBasic {
		a := app.GetAnnotations()
		if n, s := a[api.DestinationNameAnnotation], a[api.DestinationServerAnnotation]; n != "" || s != "" {
			dest["name"], dest["server"] = n, s
		}
	}
	if ns, ok := dest["namespace"].(string); writer == RHACM && ok && ns == "" {
		dest["namespace"] = namespace
	}
	spec["destination"] = dest
	out := map[string]any{
		"apiVersion": argocd.Group + "/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": app.GetName(), "namespace": namespace, "labels": labels, "annotations": annotations},
		"spec":     spec,
	}
	if f := app.GetFinalizers(); len(f) > 0 {
		out["metadata"].(map[string]any)["finalizers"] = toAny(f)
	}
	if op, ok := app.Object["operation"]; ok {
		out["operation"] = op
	}
	return out, nil
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func add(w *workv1.ManifestWork, obj map[string]any) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: data}})
	return nil
}

// Parse reads a Writer from its name.
func Parse(s string) (Writer, error) {
	switch w := Writer(strings.ToLower(s)); w {
	case RHACM, OCMBasic:
		return w, nil
	}
	return "", fmt.Errorf("unknown upstream controller %q: %s or %s", s, RHACM, OCMBasic)
}
