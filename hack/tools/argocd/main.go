//go:build ignore

// Command argocd runs one Argo CD component, chosen as Argo CD's own binary chooses it (its
// ARGOCD_BINARY_NAME, else the name it is invoked as: a symlink) or by its first argument:
// argocd-application-controller, argocd-repo-server, argocd-applicationset-controller,
// argocd-server, or argocd-git-ask-pass (the repo-server runs git with GIT_ASKPASS=argocd and
// ARGOCD_BINARY_NAME=argocd-git-ask-pass, so that git asks it for a private repository's
// credentials). With none of these it is Argo CD's own CLI, argocd. One binary keeps the build to
// one link of Argo CD.
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
	gitaskpass "github.com/argoproj/argo-cd/v3/cmd/argocd-git-ask-pass/commands"
	reposerver "github.com/argoproj/argo-cd/v3/cmd/argocd-repo-server/commands"
	server "github.com/argoproj/argo-cd/v3/cmd/argocd-server/commands"
	cli "github.com/argoproj/argo-cd/v3/cmd/argocd/commands"
)

var components = map[string]func() *cobra.Command{
	"argocd-application-controller":    appcontroller.NewCommand,
	"argocd-repo-server":               reposerver.NewCommand,
	"argocd-applicationset-controller": appsetcontroller.NewCommand,
	"argocd-server":                    server.NewCommand,
	"argocd-git-ask-pass":              gitaskpass.NewCommand,
}

func main() {
	name, args := filepath.Base(os.Args[0]), os.Args[1:]
	if env := os.Getenv("ARGOCD_BINARY_NAME"); env != "" {
		name = env
	}
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
