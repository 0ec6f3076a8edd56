// Package argocd names the Argo CD objects, labels and annotations argocd-pull reads and writes.
// Argo CD objects are handled as unstructured objects so that the main module never imports Argo
// CD (and its Kubernetes version pins); the accessors here keep field paths in one place.
package argocd

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group is Argo CD's API group.
const Group = "argoproj.io"

var (
	ApplicationGVK    = schema.GroupVersionKind{Group: Group, Version: "v1alpha1", Kind: "Application"}
	ApplicationSetGVK = schema.GroupVersionKind{Group: Group, Version: "v1alpha1", Kind: "ApplicationSet"}
	AppProjectGVK     = schema.GroupVersionKind{Group: Group, Version: "v1alpha1", Kind: "AppProject"}
)

// Pull-model markers, set on the hub Application by the ApplicationSet template.
const (
	// SkipReconcileAnnotation makes the hub's Argo CD ignore the Application.
	SkipReconcileAnnotation = "argocd.argoproj.io/skip-reconcile"
)

const (
	// RefreshAnnotation asks Argo CD to refresh an Application; Argo CD removes it when done.
	RefreshAnnotation = "argocd.argoproj.io/refresh"
	// HydrateAnnotation is what Argo CD's API server writes beside RefreshAnnotation for its source
	// hydrator: "normal", or from 3.5 on "hard" on a hard refresh.
	HydrateAnnotation = "argocd.argoproj.io/hydrate"
	// ResourcesFinalizer makes Argo CD delete an Application's resources before the Application.
	ResourcesFinalizer = "resources-finalizer.argocd.argoproj.io"
	// LocalServer is the in-cluster destination of the managed cluster's own Argo CD.
	LocalServer = "https://kubernetes.default.svc"
	// NamespaceManagedByLabel on a namespace of a managed cluster hands it to an Argo CD instance
	// (value: that instance's namespace), which may then manage resources there.
	NamespaceManagedByLabel = "argocd.argoproj.io/managed-by"
	// DefaultProject is the AppProject every Argo CD has.
	DefaultProject = "default"
)

// Health and sync values.
const (
	HealthHealthy     = "Healthy"
	HealthProgressing = "Progressing"
	HealthUnknown     = "Unknown"
	SyncSynced        = "Synced"
	SyncOutOfSync     = "OutOfSync"
	SyncUnknown       = "Unknown"
)

// NewApplication returns an empty Application for reads.
func NewApplication() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ApplicationGVK)
	return u
}

// NewApplicationList returns an empty Application list for reads.
func NewApplicationList() *unstructured.UnstructuredList {
	u := &unstructured.UnstructuredList{}
	u.SetGroupVersionKind(ApplicationGVK.GroupVersion().WithKind("ApplicationList"))
	return u
}

// NewApplicationSet returns an empty ApplicationSet for reads.
func NewApplicationSet() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ApplicationSetGVK)
	return u
}

// NewAppProject returns an empty AppProject for reads.
func NewAppProject() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(AppProjectGVK)
	return u
}

// RepoURLs are the repository URLs an Application's Argo CD fetches from: its source's, each of
// its sources', and its source hydrator's dry source's, in that order, without repeats.
func RepoURLs(app *unstructured.Unstructured) []string {
	var out []string
	add := func(source any) {
		m, _ := source.(map[string]any)
		if u, _ := m["repoURL"].(string); u != "" && !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	spec, _ := app.Object["spec"].(map[string]any)
	add(spec["source"])
	sources, _ := spec["sources"].([]any)
	for _, s := range sources {
		add(s)
	}
	hydrator, _ := spec["sourceHydrator"].(map[string]any)
	add(hydrator["drySource"])
	return out
}

// Project is the Application's spec.project ("default" when empty).
func Project(app *unstructured.Unstructured) string {
	p, _, _ := unstructured.NestedString(app.Object, "spec", "project")
	if p == "" {
		return DefaultProject
	}
	return p
}

// RollingSync says whether the ApplicationSet appSet rolls out with RollingSync (its
// progressive sync strategy in steps).
func RollingSync(appSet *unstructured.Unstructured) bool {
	strategy, _, _ := unstructured.NestedString(appSet.Object, "spec", "strategy", "type")
	return strategy == "RollingSync"
}

// The statuses Argo CD's RollingSync gives an Application in an ApplicationSet's
// status.applicationStatus: Waiting until its step comes, Pending once it requested the step's sync
// and until it sees it start, Progressing until the Application reads Healthy and Synced, then
// Healthy.
const (
	StepWaiting     = "Waiting"
	StepPending     = "Pending"
	StepProgressing = "Progressing"
	StepHealthy     = "Healthy"
)

// StepOf is the RollingSync status the ApplicationSet appSet gives its Application app, and since
// when (its lastTransitionTime, to the second; zero when unreadable); "" when it lists none. Argo
// CD 3.4 and later move a Pending Application on only once its operation started, and it was
// compared, in a later second than it became Pending. It reads the process's index of appSet's
// status (see stepIndex): appSet is only read.
func StepOf(appSet *unstructured.Unstructured, app string) (status string, since time.Time) {
	return steps.of(appSet, app)
}

// MovedOn names the Applications the RollingSync ApplicationSet read Pending or Progressing in its
// status before (old) and reads otherwise after (updated), removed ones included.
func MovedOn(old, updated *unstructured.Unstructured) []string {
	stepping := map[string]string{}
	eachStep(old, func(app, status string, _ map[string]any) {
		if status == StepPending || status == StepProgressing {
			stepping[app] = status
		}
	})
	eachStep(updated, func(app, status string, _ map[string]any) {
		if status == StepPending || status == StepProgressing {
			delete(stepping, app)
		}
	})
	return slices.Sorted(maps.Keys(stepping))
}

// eachStep calls f with each entry of appSet's status.applicationStatus (one per Application: its
// name and status), read in place: a copy would cost each caller the set's size.
func eachStep(appSet *unstructured.Unstructured, f func(app, status string, entry map[string]any)) {
	v, _, _ := unstructured.NestedFieldNoCopy(appSet.Object, "status", "applicationStatus")
	entries, _ := v.([]any)
	for _, e := range entries {
		entry, _ := e.(map[string]any)
		app, _ := entry["application"].(string)
		status, _ := entry["status"].(string)
		f(app, status, entry)
	}
}

// AutomatedSync says whether an Application syncs itself: spec.syncPolicy.automated is set and not
// turned off by its enabled field, as Argo CD's SyncPolicy.IsAutomatedSyncEnabled reads it. Argo CD
// 3.4 and later turn it off so under RollingSync (3.2 removed it).
func AutomatedSync(app *unstructured.Unstructured) bool {
	automated, ok, _ := unstructured.NestedMap(app.Object, "spec", "syncPolicy", "automated")
	if !ok || automated == nil {
		return false
	}
	enabled, set := automated["enabled"].(bool)
	return !set || enabled
}

// OwningApplicationSet returns the name of the ApplicationSet that owns the Application, if any.
func OwningApplicationSet(app metav1.Object) (string, bool) {
	for _, ref := range app.GetOwnerReferences() {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err == nil && gv.Group == Group && ref.Kind == ApplicationSetGVK.Kind {
			return ref.Name, true
		}
	}
	return "", false
}

const (
	// CmdParamsConfigMap is Argo CD's ConfigMap of its components' parameters, in its namespace.
	CmdParamsConfigMap = "argocd-cmd-params-cm"
	// GlobalPreservedAnnotationsKey is its key naming, comma-separated, the annotations the
	// ApplicationSet controller keeps on every Application it generates.
	GlobalPreservedAnnotationsKey = "applicationsetcontroller.global.preserved.annotations"
)

// KeepsAnnotation says whether the ApplicationSet controller keeps the annotation key, set by
// someone else, on the Applications of appSet: only those its spec.preservedFields.annotations or
// the controller's global list (globalPreserved, comma-separated) names, and Argo CD's refresh
// annotation, are kept; every other annotation is replaced by the template's at the controller's
// next reconcile of the Application (Argo CD v3.2, applicationset_controller.go).
func KeepsAnnotation(appSet *unstructured.Unstructured, globalPreserved, key string) bool {
	if key == RefreshAnnotation {
		return true
	}
	kept, _, _ := unstructured.NestedStringSlice(appSet.Object, "spec", "preservedFields", "annotations")
	for _, k := range strings.Split(globalPreserved, ",") {
		kept = append(kept, strings.TrimSpace(k))
	}
	return slices.Contains(kept, key)
}

// Label returns the value of one label of an unstructured object. Unlike GetLabels, it does not
// copy the object's labels into a new map: the report reads the markers of every Application of
// an ApplicationSet on each rebuild.
func Label(u *unstructured.Unstructured, key string) (string, bool) {
	return metadataValue(u, "labels", key)
}

// Annotation returns the value of one annotation of an unstructured object, without copying the
// object's annotations (see Label).
func Annotation(u *unstructured.Unstructured, key string) (string, bool) {
	return metadataValue(u, "annotations", key)
}

func metadataValue(u *unstructured.Unstructured, field, key string) (string, bool) {
	m, _, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", field)
	values, _ := m.(map[string]any)
	v, ok := values[key].(string)
	return v, ok
}

// ConditionMessage is the message of the Application's .status.conditions entry of type kind, ""
// when there is none. It reads without copying.
func ConditionMessage(app *unstructured.Unstructured, kind string) string {
	conditions, _, _ := unstructured.NestedFieldNoCopy(app.Object, "status", "conditions")
	list, _ := conditions.([]any)
	for _, c := range list {
		if m, ok := c.(map[string]any); ok && m["type"] == kind {
			msg, _ := m["message"].(string)
			return msg
		}
	}
	return ""
}

// SupportedRange is the Argo CD releases argocd-pull is tested with, on the hub and on the managed
// clusters (docs/compatibility.md): the minors from 3.4 to 3.5.
const SupportedRange = "v3.4 to v3.5"

// Supported says whether a release version (vMAJOR.MINOR.PATCH) is in SupportedRange.
func Supported(version string) bool {
	major, minor, ok := releaseMinor(version)
	return ok && major == 3 && minor >= 4 && minor <= 5
}

// AtLeast says whether a release version (vMAJOR.MINOR.PATCH) is major.minor or later.
func AtLeast(version string, major, minor int) bool {
	ma, mi, ok := releaseMinor(version)
	return ok && (ma > major || ma == major && mi >= minor)
}

func releaseMinor(version string) (major, minor int, ok bool) {
	var patch int
	_, err := fmt.Sscanf(version, "v%d.%d.%d", &major, &minor, &patch)
	return major, minor, err == nil
}
