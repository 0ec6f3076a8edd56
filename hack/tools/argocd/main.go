// Command argocd runs one Argo CD component, chosen by the name it is invoked as (a symlink) or
// by its first argument: argocd-application-controller, argocd-repo-server or
// argocd-applicationset-controller. One binary keeps the build to one link of Argo CD.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	appcontroller "github.com/argoproj/argo-cd/v3/cmd/argocd-application-controller/commands"
	appsetcontroller "github.com/argoproj/argo-cd/v3/cmd/argocd-applicationset-controller/commands"
	reposerver "github.com/argoproj/argo-cd/v3/cmd/argocd-repo-server/commands"
)

var components = map[string]func() *cobra.Command{
	"argocd-application-controller":    appcontroller.NewCommand,
	"argocd-repo-server":               reposerver.NewCommand,
	"argocd-applicationset-controller": appsetcontroller.NewCommand,
}

func main() {
	name := filepath.Base(os.Args[0])
	args := os.Args[1:]
	if _, ok := components[name]; !ok && len(args) > 0 {
		name, args = args[0], args[1:]
	}
	newCommand, ok := components[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "usage: argocd {argocd-application-controller|argocd-repo-server|argocd-applicationset-controller} [flags]\n")
		os.Exit(2)
	}
	cmd := newCommand()
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		os.Exit(1)
	}
}
