package manifestwork

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
)

// MaxManifestsSize is the size limit OCM's ManifestWork admission webhook puts on the manifests
// of one work (500 KiB). A larger payload is refused here, with a clear reason, rather than by the
// webhook or etcd.
const MaxManifestsSize = 500 * 1024

// ErrPayloadTooLarge is returned when the Application (and its AppProject) exceed MaxManifestsSize.
var ErrPayloadTooLarge = errors.New("payload too large for a ManifestWork")

// Markers stripped from the payload: they steer the hub and mean nothing on the managed cluster.
var hubOnlyAnnotations = []string{
	api.ClusterAnnotation,
	api.AppNamespaceAnnotation,
	argocd.SkipReconcileAnnotation,
	api.DestinationNameAnnotation,
	api.DestinationServerAnnotation,
	"kubectl.kubernetes.io/last-applied-configuration",
	// Requests travel only as the delivery plan says.
	api.RefreshDeliveredAnnotation,
	// Argo CD's API server writes it on each refresh and never clears it on the hub, where no
	// application controller runs; from 3.5 on it alternates between "normal" and "hard" with the
	// refresh's kind, and copied into the payload each change would be a new work for the cluster.
	// The refresh it comes with is delivered (see PlanDeliveries).
	argocd.HydrateAnnotation,
}

// requestAnnotations are the annotations of the payload Application that carry requests: the hub
// Application's are stripped, and the delivery plan sets them (see applicationPayload).
var requestAnnotations = []string{argocd.RefreshAnnotation, api.SyncDeliveryAnnotation, api.RefreshDeliveryAnnotation, api.TerminateDeliveryAnnotation}

// DesiredWork returns the ManifestWork that carries the hub Application app to target, with the
// sync and refresh requests of deliveries (see PlanDeliveries). project is the hub's AppProject of
// the app, or nil for the default project; it travels in the same work and is orphaned, not
// deleted, with the work (other Applications on the cluster may use it). The work is pending
// (see claim.go): Hold it once the managed cluster reported its Application the hub's.
func DesiredWork(app, project *unstructured.Unstructured, target Target, deliveries Deliveries) (*workv1.ManifestWork, error) {
	payload := applicationPayload(app, target, deliveries)
	manifests := []*unstructured.Unstructured{payload}
	// A new work is pending: it creates the Application only, and orphans it (see claim.go).
	configs := []workv1.ManifestConfigOption{pendingConfig(workv1.ManifestConfigOption{
		ResourceIdentifier: identifierOf(payload, "applications"),
		FeedbackScrapeType: workv1.FeedbackWatchType,
	})}
	orphans := []workv1.OrphaningRule{workv1.OrphaningRule(identifierOf(payload, "applications"))}
	if project != nil {
		p := projectPayload(project, target)
		manifests = append(manifests, p)
		configs = append(configs, workv1.ManifestConfigOption{
			ResourceIdentifier: identifierOf(p, "appprojects"),
			UpdateStrategy:     serverSideApply(),
		})
		orphans = append(orphans, workv1.OrphaningRule(identifierOf(p, "appprojects")))
	}
	deleteOption := &workv1.DeleteOption{
		PropagationPolicy: workv1.DeletePropagationPolicyTypeSelectivelyOrphan,
		SelectivelyOrphan: &workv1.SelectivelyOrphan{OrphaningRules: orphans},
	}

	work := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{
			Name:      WorkName(app.GetNamespace(), app.GetName()),
			Namespace: target.Cluster,
			Labels:    map[string]string{api.ManagedByLabel: api.ManagedByValue},
			Annotations: map[string]string{
				api.HubApplicationNamespaceAnnotation: app.GetNamespace(),
				api.HubApplicationNameAnnotation:      app.GetName(),
			},
		},
		Spec: workv1.ManifestWorkSpec{ManifestConfigs: configs, DeleteOption: deleteOption},
	}
	if appSet, ok := argocd.OwningApplicationSet(app); ok {
		work.Labels[api.ApplicationSetLabel] = "true"
		work.Annotations[api.HostingApplicationSetAnnotation] = app.GetNamespace() + "/" + appSet
	}
	if d := deliveries.String(); d != "" {
		work.Annotations[api.DeliveriesAnnotation] = d
	}

	size := 0
	for _, m := range manifests {
		raw, err := json.Marshal(m.Object)
		if err != nil {
			return nil, fmt.Errorf("encoding %s %s: %w", m.GetKind(), m.GetName(), err)
		}
		size += len(raw)
		work.Spec.Workload.Manifests = append(work.Spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
	}
	if size > MaxManifestsSize {
		return nil, fmt.Errorf("%w: the Application and its AppProject take %d bytes, the limit is %d", ErrPayloadTooLarge, size, MaxManifestsSize)
	}

	hash, err := specHash(work)
	if err != nil {
		return nil, err
	}
	work.Annotations[api.SpecHashAnnotation] = hash
	return work, nil
}

// applicationPayload is the Application as the managed cluster's Argo CD must see it.
func applicationPayload(app *unstructured.Unstructured, target Target, deliveries Deliveries) *unstructured.Unstructured {
	out := argocd.NewApplication()
	out.SetName(app.GetName())
	out.SetNamespace(target.AppNamespace)

	labels := maps.Clone(app.GetLabels())
	delete(labels, api.PullLabel)
	annotations := maps.Clone(app.GetAnnotations())
	for _, keys := range [][]string{hubOnlyAnnotations, requestAnnotations} {
		for _, k := range keys {
			delete(annotations, k)
		}
	}
	if appSet, ok := argocd.OwningApplicationSet(app); ok {
		if labels == nil {
			labels = map[string]string{}
		}
		if annotations == nil {
			annotations = map[string]string{}
		}
		labels[api.ApplicationSetLabel] = "true"
		annotations[api.HostingApplicationSetAnnotation] = app.GetNamespace() + "/" + appSet
	}
	if d := deliveries.Sync; d != nil && !d.Done {
		op := deliveries.Operation
		if op == nil {
			hubOp, _ := app.Object["operation"].(map[string]any)
			op = WithDeliveryID(hubOp, d.ID)
			if d.Revision != "" {
				_ = unstructured.SetNestedField(op, d.Revision, "sync", "revision")
			}
		}
		out.Object["operation"] = runtime.DeepCopyJSON(op)
	}
	if d := deliveries.Sync; d != nil {
		annotations = withAnnotation(annotations, api.SyncDeliveryAnnotation, d.ID)
	}
	if d := deliveries.Refresh; d != nil {
		value := deliveries.RefreshValue
		if value == "" {
			value = app.GetAnnotations()[argocd.RefreshAnnotation]
		}
		annotations = withAnnotation(annotations, argocd.RefreshAnnotation, value)
		annotations = withAnnotation(annotations, api.RefreshDeliveryAnnotation, d.ID)
	} else if d := deliveries.Sync; d != nil && !d.Done && d.Revision != "" {
		// A sync pinned to a revision (a RollingSync step's) goes with a refresh: the cluster's
		// Argo CD may not have found that revision yet (its fleet went ahead to it first), and
		// after the sync it compares with the revision it last resolved, not the one it synced.
		// It would report the step's Application OutOfSync at the older revision, and the
		// ApplicationSet controller, seeing a changed revision, would ask for a sync of that one
		// (seen in the lab: a cluster synced revision three, then two again, then three).
		annotations = withAnnotation(annotations, argocd.RefreshAnnotation, "normal")
	}
	// Whatever the hub Application says, the claim names it (see claim.go).
	annotations = withAnnotation(annotations, api.HubApplicationAnnotation, app.GetNamespace()+"/"+app.GetName())
	if len(labels) > 0 {
		// An empty map would be a difference from what the apiserver stores: it drops the
		// empty maps of an embedded object's metadata (see RequestsOnlySince).
		out.SetLabels(labels)
	}
	out.SetAnnotations(annotations)
	out.SetFinalizers(app.GetFinalizers())
	if d := deliveries.Sync; d != nil && d.Terminate > 0 && !d.Done {
		// Only beside its .operation (see planTerminate): alone, it would terminate the next one.
		markTerminate(out.Object, d.Terminate)
	}

	if spec, ok := app.Object["spec"].(map[string]any); ok {
		spec = runtime.DeepCopyJSON(spec)
		spec["destination"] = localDestination(app, spec["destination"])
		out.Object["spec"] = spec
	}
	return out
}

// markTerminate asks the managed cluster's Argo CD to terminate the running operation of the
// Application obj, as Argo CD's API server does: the Application CRD has no status subresource,
// and the work agent applies this one field of its status with the manifest. The annotation
// numbers the attempt (see planTerminate).
func markTerminate(obj map[string]any, attempt int) {
	obj["status"] = map[string]any{"operationState": map[string]any{"phase": PhaseTerminating}}
	u := unstructured.Unstructured{Object: obj}
	u.SetAnnotations(withAnnotation(u.GetAnnotations(), api.TerminateDeliveryAnnotation, strconv.Itoa(attempt)))
}

// terminateAttempt is the attempt to terminate the Application manifest obj carries, 0 for none.
func terminateAttempt(obj map[string]any) int {
	phase, _, _ := unstructured.NestedString(obj, "status", "operationState", "phase")
	value, _, _ := unstructured.NestedString(obj, "metadata", "annotations", api.TerminateDeliveryAnnotation)
	attempt, err := strconv.Atoi(value)
	if phase != PhaseTerminating || err != nil {
		return 0
	}
	return attempt
}

func withAnnotation(annotations map[string]string, key, value string) map[string]string {
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[key] = value
	return annotations
}

// PayloadRequests are the .operation (nil when none) and the refresh annotation ("" when none)
// the work's Application manifest carries.
func PayloadRequests(work *workv1.ManifestWork) (operation map[string]any, refresh string) {
	for _, m := range work.Spec.Workload.Manifests {
		var obj map[string]any
		if json.Unmarshal(m.Raw, &obj) != nil || obj["kind"] != argocd.ApplicationGVK.Kind {
			continue
		}
		operation, _ = obj["operation"].(map[string]any)
		refresh, _, _ = unstructured.NestedString(obj, "metadata", "annotations", argocd.RefreshAnnotation)
		return operation, refresh
	}
	return nil, ""
}

// PayloadRepoURLs are the repository URLs of the Application the work carries (argocd.RepoURLs):
// what the managed cluster's Argo CD fetches, paused or not; nil when it carries none.
func PayloadRepoURLs(work *workv1.ManifestWork) []string {
	for _, m := range work.Spec.Workload.Manifests {
		var obj map[string]any
		if json.Unmarshal(m.Raw, &obj) != nil || obj["kind"] != argocd.ApplicationGVK.Kind {
			continue
		}
		return argocd.RepoURLs(&unstructured.Unstructured{Object: obj})
	}
	return nil
}

// localDestination points the Application at the managed cluster itself, keeping its namespace,
// unless the destination-name or destination-server annotation says otherwise.
func localDestination(app *unstructured.Unstructured, current any) map[string]any {
	dest := map[string]any{}
	if cur, ok := current.(map[string]any); ok {
		if ns, ok := cur["namespace"]; ok {
			dest["namespace"] = ns
		}
	}
	annotations := app.GetAnnotations()
	switch {
	case annotations[api.DestinationNameAnnotation] != "":
		dest["name"] = annotations[api.DestinationNameAnnotation]
	case annotations[api.DestinationServerAnnotation] != "":
		dest["server"] = annotations[api.DestinationServerAnnotation]
	default:
		dest["server"] = argocd.LocalServer
	}
	return dest
}

func projectPayload(project *unstructured.Unstructured, target Target) *unstructured.Unstructured {
	out := argocd.NewAppProject()
	out.SetName(project.GetName())
	ns := target.ArgoCDNamespace
	if ns == "" {
		ns = target.AppNamespace
	}
	out.SetNamespace(ns)
	out.SetLabels(project.GetLabels())
	annotations := maps.Clone(project.GetAnnotations())
	delete(annotations, "kubectl.kubernetes.io/last-applied-configuration")
	out.SetAnnotations(annotations)
	if spec, ok := project.Object["spec"].(map[string]any); ok {
		out.Object["spec"] = runtime.DeepCopyJSON(spec)
	}
	return out
}

func identifierOf(obj *unstructured.Unstructured, resource string) workv1.ResourceIdentifier {
	return workv1.ResourceIdentifier{Group: argocd.Group, Resource: resource, Name: obj.GetName(), Namespace: obj.GetNamespace()}
}

// applicationStrategy is how a held work applies its Application (see Hold).
func applicationStrategy() *workv1.UpdateStrategy {
	return serverSideApply(workv1.IgnoreField{
		// The managed Argo CD clears these when it has acted on them. The OCM agent implements
		// OnSpokeChange by hashing the whole manifest: spoke changes survive until the manifest
		// changes, and every new request changes it (its delivery ID). See delivery.go.
		Condition: workv1.IgnoreFieldsConditionOnSpokeChange,
		JSONPaths: []string{operationJSONPath, refreshAnnotationJSONPath},
	})
}

func serverSideApply(ignore ...workv1.IgnoreField) *workv1.UpdateStrategy {
	return &workv1.UpdateStrategy{
		Type: workv1.UpdateStrategyTypeServerSideApply,
		ServerSideApply: &workv1.ServerSideApplyConfig{
			// The hub is the source of truth for what it sends; the managed Argo CD owns status.
			Force:        true,
			FieldManager: workv1.DefaultFieldManager,
			IgnoreFields: ignore,
		},
	}
}

func specHash(work *workv1.ManifestWork) (string, error) {
	data, err := json.Marshal(struct {
		Labels      map[string]string
		Annotations map[string]string
		Spec        workv1.ManifestWorkSpec
	}{work.Labels, work.Annotations, work.Spec})
	if err != nil {
		return "", fmt.Errorf("hashing ManifestWork %s: %w", work.Name, err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16]), nil
}

// UpToDate reports whether the existing work already carries what desired carries.
func UpToDate(existing, desired *workv1.ManifestWork) bool {
	return existing.Annotations[api.SpecHashAnnotation] == desired.Annotations[api.SpecHashAnnotation]
}

// ManagedKey is "cluster/namespace/name" of the managed-cluster Application named name delivered
// to target, as ManagedApplication reads it from a work.
func ManagedKey(target Target, name string) string {
	return target.Cluster + "/" + target.AppNamespace + "/" + name
}

// ManagedApplication is "cluster/namespace/name" of the Application a work carries: the
// managed-cluster Application only one hub Application may deliver. ok is false for a work that
// carries none.
func ManagedApplication(work *workv1.ManifestWork) (key string, ok bool) {
	for _, m := range work.Spec.Workload.Manifests {
		var head struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if json.Unmarshal(m.Raw, &head) == nil && head.Kind == argocd.ApplicationGVK.Kind {
			return work.Namespace + "/" + head.Metadata.Namespace + "/" + head.Metadata.Name, true
		}
	}
	return "", false
}

// StampWritten records on work that the hub writes it now (api.WrittenAtAnnotation, RFC 3339):
// what a cluster that has not applied it since is measured against.
func StampWritten(work *workv1.ManifestWork, now time.Time) {
	if work.Annotations == nil {
		work.Annotations = map[string]string{}
	}
	work.Annotations[api.WrittenAtAnnotation] = now.UTC().Format(time.RFC3339)
}

// WrittenAt is when the hub last wrote work (see StampWritten); false when it does not say.
func WrittenAt(work *workv1.ManifestWork) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339, work.Annotations[api.WrittenAtAnnotation])
	return t, err == nil
}
