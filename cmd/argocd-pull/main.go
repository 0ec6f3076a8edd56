// Command argocd-pull is the hub side of the Argo CD pull model for Open Cluster Management.
package main

import (
	"os"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/argocd-pull/argocd-pull/internal/cli"
)

func main() {
	if err := cli.NewCommandFor(os.Args[0]).ExecuteContext(ctrl.SetupSignalHandler()); err != nil {
		os.Exit(1)
	}
}
