// Command registration-controller runs only the OCM registration hub controller (upstream
// `registration controller`): it accepts ManagedClusters, approves the renewals of their client
// certificates, creates each cluster's namespace and agent RBAC on the hub, and marks a cluster
// unavailable when its agent stops renewing its lease.
package main

import (
	"github.com/spf13/pflag"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	ocmfeature "open-cluster-management.io/api/feature"
	"open-cluster-management.io/ocm/pkg/cmd/hub"
	"open-cluster-management.io/ocm/pkg/features"

	"github.com/argocd-pull/argocd-pull/hack/tools/ocm/internal/command"
)

func main() {
	// As upstream's main: the hub manager reads these gates, and an unregistered gate panics.
	utilruntime.Must(features.HubMutableFeatureGate.Add(ocmfeature.DefaultHubRegistrationFeatureGates))
	features.HubMutableFeatureGate.AddFlag(pflag.CommandLine)
	command.Run(hub.NewRegistrationController(), "registration-controller", "controller")
}
