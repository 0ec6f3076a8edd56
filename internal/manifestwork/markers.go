// Package manifestwork is the contract between the hub and the managed clusters: the markers of a
// pull-model Application (where it goes), the ManifestWork that carries it (its name, payload,
// feedback rules and back-link), the forms a work takes (claimed and held, paused, released,
// frozen, finalized), the sync and refresh requests it delivers once, and how the upstream pull
// controllers' works are recognised and taken over. Pure functions, no side effects. The status
// side (appstatus, report, the dashboard) reads works through it; what the hub decides to write is
// internal/propagation's.
package manifestwork

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
)

// ErrInvalidMarkers wraps every error about the pull-model label and annotations: the user must
// fix the Application (or its ApplicationSet template); retrying does not help.
var ErrInvalidMarkers = errors.New("invalid pull-model markers")

// Target is where a pull-model Application goes.
type Target struct {
	// Cluster is the managed cluster, and so the namespace of the ManifestWork on the hub.
	Cluster string
	// AppNamespace is the namespace of the Application on the managed cluster.
	AppNamespace string
	// ArgoCDNamespace is the managed cluster's Argo CD namespace, where the Application's
	// AppProject goes (Argo CD reads AppProjects nowhere else); the Ladder sets it.
	ArgoCDNamespace string
}

// ReadMarkers reads the pull-model markers of a hub Application. pull is false for Applications that
// are not pull-model ones (no label, or a false one): they must be left alone. A label that is
// not a bool, or a missing or invalid cluster annotation, is an ErrInvalidMarkers.
func ReadMarkers(app *unstructured.Unstructured) (target Target, pull bool, err error) {
	value, ok := argocd.Label(app, api.PullLabel)
	if !ok {
		return Target{}, false, nil
	}
	pull, perr := strconv.ParseBool(value)
	if perr != nil {
		return Target{}, false, fmt.Errorf("%w: label %s is %q, want \"true\" or \"false\"", ErrInvalidMarkers, api.PullLabel, value)
	}
	if !pull {
		return Target{}, false, nil
	}
	cluster, _ := argocd.Annotation(app, api.ClusterAnnotation)
	cluster = strings.TrimSpace(cluster)
	if cluster == "" {
		return Target{}, true, fmt.Errorf("%w: annotation %s must name the managed cluster", ErrInvalidMarkers, api.ClusterAnnotation)
	}
	if errs := validation.IsDNS1123Label(cluster); len(errs) > 0 {
		return Target{}, true, fmt.Errorf("%w: annotation %s is %q, not a cluster name: %s", ErrInvalidMarkers, api.ClusterAnnotation, cluster, strings.Join(errs, "; "))
	}
	appNamespace, _ := argocd.Annotation(app, api.AppNamespaceAnnotation)
	appNamespace = strings.TrimSpace(appNamespace)
	if appNamespace == "" {
		appNamespace = app.GetNamespace()
	}
	if errs := validation.IsDNS1123Label(appNamespace); len(errs) > 0 {
		return Target{}, true, fmt.Errorf("%w: annotation %s is %q, not a namespace name: %s", ErrInvalidMarkers, api.AppNamespaceAnnotation, appNamespace, strings.Join(errs, "; "))
	}
	return Target{Cluster: cluster, AppNamespace: appNamespace}, true, nil
}
