//go:build ignore

// Command argocd runs one Argo CD component, chosen by its first argument or by the name it is
// invoked as (a symlink): argocd-application-controller, argocd-repo-server,
// argocd-applicationset-controller or argocd-server. With none of these it is Argo CD's own CLI,
// argocd. One binary keeps the build to one link of Argo CD.
//
// build.sh builds it in a module of its own, made from the Argo CD release's go.mod; the ignore
// constraint keeps it out of argocd-pull's module (go build and go mod tidy alike), and build.sh
// drops it from its copy.
package main

import (
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	appcontroller "github.com/argoproj/argo-cd/v3/cmd/argocd-application-controller/commands"
	appsetcontroller "github.com/argoproj/argo-cd/v3/cmd/argocd-applicationset-controller/commands"
	reposerver "github.com/argoproj/argo-cd/v3/cmd/argocd-repo-server/commands"
	server "github.com/argoproj/argo-cd/v3/cmd/argocd-server/commands"
	cli "github.com/argoproj/argo-cd/v3/cmd/argocd/commands"
)

var components = map[string]func() *cobra.Command{
	"argocd-application-controller":    appcontroller.NewCommand,
	"argocd-repo-server":               reposerver.NewCommand,
	"argocd-applicationset-controller": appsetcontroller.NewCommand,
	"argocd-server":                    server.NewCommand,
}

func main() {
	name, args := filepath.Base(os.Args[0]), os.Args[1:]
	newCommand, ok := components[name]
	if !ok && len(args) > 0 {
		newCommand, ok = components[args[0]]
		if ok {
			args = args[1:]
		}
	}
	if !ok {
		newCommand = cli.NewCommand
	}
	cmd := newCommand()
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		os.Exit(1)
	}
}
