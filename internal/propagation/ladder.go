package propagation

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/tenancy"
)

// Reasons a hub Application is not delivered: the reason of its condition and Warning event.
const (
	ReasonInvalidMarkers      = "InvalidPullMarkers"
	ReasonNamespaceNotAllowed = "NamespaceNotAllowed"
	ReasonClusterNotFound     = "ManagedClusterNotFound"
	ReasonHubNotATarget       = "HubIsNotATarget"
	ReasonClusterNotBound     = "ClusterNotBoundToNamespace"
	ReasonNamespaceMissing    = "ClusterNamespaceMissing"
	ReasonProjectNotFound     = "AppProjectNotFound"
	ReasonPayloadTooLarge     = "PayloadTooLarge"
	ReasonWorkWriteFailed     = "ManifestWorkWriteFailed"
)

// Facts are what the propagation controller read about one pull-model hub Application before
// deciding: everything Ladder needs, nothing it fetches itself.
type Facts struct {
	App *unstructured.Unstructured
	// NamespaceAllowed says whether pull-model Applications are taken from the App's namespace;
	// AllowedNamespaces names the allowed ones for the message.
	NamespaceAllowed  bool
	AllowedNamespaces string
	// Cluster is the target ManagedCluster, nil when it does not exist.
	Cluster *clusterv1.ManagedCluster
	// Bindings are the ManagedClusterSets bound to the App's namespace and its PlacementDecisions.
	Bindings tenancy.Bindings
	// ClusterNamespace is true when the cluster's namespace exists on the hub.
	ClusterNamespace bool
	// ArgoCDNamespace is where AppProjects are read; Project is the App's AppProject there, nil
	// when it does not exist (or for the default project, which every Argo CD has).
	ArgoCDNamespace string
	Project         *unstructured.Unstructured
	// Existing is the App's current work on the target cluster, nil when none.
	Existing *workv1.ManifestWork
	// Reported is what the managed cluster reported through Existing; Carried what Existing carries.
	Reported Reported
	Carried  Deliveries
	// NewDeliveryID returns a fresh delivery ID (see PlanDeliveries).
	NewDeliveryID func() string
}

// Refusal says why an Application is not delivered. The managed cluster keeps what it has.
type Refusal struct {
	Reason, Message string
}

// Verdict is the ladder's decision: deliver Work, or refuse.
type Verdict struct {
	Work    *workv1.ManifestWork
	Refusal *Refusal
}

func refuse(reason, format string, args ...any) Verdict {
	return Verdict{Refusal: &Refusal{Reason: reason, Message: fmt.Sprintf(format, args...)}}
}

// Ladder decides, from the facts, whether a pull-model Application is delivered and with which
// ManifestWork. Each rung refuses with a reason a person can act on; the first that fails wins.
// Call it for Applications whose markers Decide accepted as pull-model.
func Ladder(f Facts) (Verdict, error) {
	app := f.App
	target, pull, err := Decide(app)
	switch {
	case err != nil:
		return refuse(ReasonInvalidMarkers, "%s", err.Error()), nil
	case !pull:
		return refuse(ReasonInvalidMarkers, "not a pull-model Application"), nil
	case !f.NamespaceAllowed:
		return refuse(ReasonNamespaceNotAllowed,
			"pull-model Applications are not taken from namespace %s; the operator allows %s (flag --pull-namespaces)",
			app.GetNamespace(), f.AllowedNamespaces), nil
	case tenancy.IsHub(target.Cluster, f.Cluster):
		return refuse(ReasonHubNotATarget, "ManagedCluster %s is the hub itself: pull-model Applications are never delivered to the hub", target.Cluster), nil
	case f.Cluster == nil:
		return refuse(ReasonClusterNotFound, "ManagedCluster %s does not exist on the hub; check the annotation %s", target.Cluster, api.ClusterAnnotation), nil
	}
	if ok, _ := f.Bindings.Allows(f.Cluster); !ok {
		ns := app.GetNamespace()
		return refuse(ReasonClusterNotBound,
			"ManagedCluster %s is not bound to namespace %s: create a ManagedClusterSetBinding in %s for a set that contains it (a PlacementDecision is not a binding)",
			target.Cluster, ns, ns), nil
	}
	if !f.ClusterNamespace {
		return refuse(ReasonNamespaceMissing, "the cluster namespace %s does not exist on the hub yet (is the cluster's registration accepted?)", target.Cluster), nil
	}
	if f.Project == nil && argocd.Project(app) != argocd.DefaultProject {
		return refuse(ReasonProjectNotFound, "AppProject %s not found in the Argo CD namespace %s", argocd.Project(app), f.ArgoCDNamespace), nil
	}
	newID := f.NewDeliveryID
	if newID == nil {
		newID = NewDeliveryID
	}
	deliveries := PlanDeliveries(HubOf(app), f.Carried, f.Reported, newID)
	work, err := DesiredWork(app, f.Project, target, deliveries)
	if errors.Is(err, ErrPayloadTooLarge) {
		return refuse(ReasonPayloadTooLarge, "%s", err.Error()), nil
	}
	if err != nil {
		return Verdict{}, err
	}
	return Verdict{Work: work}, nil
}
