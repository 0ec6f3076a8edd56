// Command placement runs only the OCM placement controller (upstream `placement controller`): it
// schedules Placements into PlacementDecisions on the hub.
package main

import (
	"open-cluster-management.io/ocm/pkg/cmd/hub"

	"github.com/argocd-pull/argocd-pull/hack/tools/ocm/internal/command"
)

func main() { command.Run(hub.NewPlacementController(), "placement", "controller") }
