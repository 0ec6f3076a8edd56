// Command argocd-pull is the hub side of the Argo CD pull model for Open Cluster Management.
package main

import (
	"os"

	// Mozilla's CA roots, used only where the system has none: the image is FROM scratch, and the
	// optional OCM Search client verifies its server against the system roots unless given a CA.
	_ "golang.org/x/crypto/x509roots/fallback"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/argocd-pull/argocd-pull/internal/cli"
)

func main() {
	if err := cli.NewCommandFor(os.Args[0]).ExecuteContext(ctrl.SetupSignalHandler()); err != nil {
		os.Exit(1)
	}
}
