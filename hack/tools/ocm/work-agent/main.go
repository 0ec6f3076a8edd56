// Command work-agent runs only the OCM spoke work agent (upstream `work agent`): it applies the
// ManifestWorks of one cluster namespace on the hub to the managed cluster and reports status
// feedback back.
package main

import (
	"open-cluster-management.io/ocm/pkg/cmd/spoke"

	"github.com/argocd-pull/argocd-pull/hack/tools/ocm/internal/command"
)

func main() { command.Run(spoke.NewWorkAgent(), "work-agent", "agent") }
