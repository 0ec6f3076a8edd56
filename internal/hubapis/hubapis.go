// Package hubapis names the APIs the hub must serve for argocd-pull to work (OCM's, Argo CD's and
// its own), and reads which ones it serves. The controller waits for them before it starts; the
// doctor checks them.
package hubapis

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// Set is a group of resources one component installs on the hub.
type Set struct {
	// ID and Title name the set (the doctor's check).
	ID, Title string
	// Resources are "resource.group".
	Resources []string
	// Fix says how to install them.
	Fix string
}

var (
	// OCM is what the OCM hub serves: the pull model delivers through ManifestWorks to
	// ManagedClusters a Placement selects.
	OCM = Set{
		ID: "hub-ocm-apis", Title: "OCM APIs on the hub",
		Resources: []string{
			"managedclusters.cluster.open-cluster-management.io",
			"managedclustersets.cluster.open-cluster-management.io",
			"managedclustersetbindings.cluster.open-cluster-management.io",
			"placements.cluster.open-cluster-management.io",
			"placementdecisions.cluster.open-cluster-management.io",
			"manifestworks.work.open-cluster-management.io",
		},
		Fix: "install the OCM hub (clusteradm init, or RHACM's MultiClusterHub): the pull model delivers through ManifestWorks to ManagedClusters a Placement selects",
	}
	// ArgoCD is what the hub's Argo CD serves.
	ArgoCD = Set{
		ID: "hub-argocd-apis", Title: "Argo CD APIs on the hub",
		Resources: []string{
			"applications.argoproj.io",
			"applicationsets.argoproj.io",
			"appprojects.argoproj.io",
		},
		Fix: "install Argo CD on the hub (kubectl create namespace argocd; kubectl apply -n argocd --server-side --force-conflicts -f https://raw.githubusercontent.com/argoproj/argo-cd/stable/manifests/install.yaml), or the OpenShift GitOps operator",
	}
	// Pull is argocd-pull's own CRDs.
	Pull = Set{
		ID: "hub-pull-apis", Title: "argocd-pull APIs on the hub",
		Resources: []string{
			"multiclusterapplicationsetreports.apps.open-cluster-management.io",
			"gitopsclusters.apps.open-cluster-management.io",
			"resourceviewholders.apps.open-cluster-management.io",
		},
		Fix: "install argocd-pull's CRDs: kubectl apply -f config/crd/bases (the Helm chart installs them)",
	}
	// All are the sets the controller needs.
	All = []Set{OCM, ArgoCD, Pull}
)

// Missing returns the resources of s that served lacks.
func (s Set) Missing(served map[string]bool) []string {
	var missing []string
	for _, r := range s.Resources {
		if !served[r] {
			missing = append(missing, r)
		}
	}
	return missing
}

// Waiting says what of sets the hub does not serve yet and how to install it, one clause per set;
// "" when it serves them all.
func Waiting(sets []Set, served map[string]bool) string {
	var clauses []string
	for _, s := range sets {
		if missing := s.Missing(served); len(missing) > 0 {
			clauses = append(clauses, fmt.Sprintf("%s not served: %s (%s)", s.Title, strings.Join(missing, ", "), s.Fix))
		}
	}
	return strings.Join(clauses, "; ")
}

// Served lists the resources an apiserver serves, as "resource.group". API groups whose
// discovery failed (a broken aggregated apiserver) are left out; the rest still counts.
func Served(dc discovery.DiscoveryInterface) (map[string]bool, error) {
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
