// Package cli holds the argocd-pull commands, one file per command.
package cli

import (
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// PluginBinary is the name under which kubectl finds argocd-pull as its plugin: 'kubectl
// argocd-pull status' runs kubectl-argocd_pull (kubectl maps a dash in the command to an
// underscore in the file name).
const PluginBinary = "kubectl-argocd_pull"

// NewCommandFor returns the root command as invoked by the binary path binary: as a kubectl plugin
// when its name is PluginBinary, so that help and usage say 'kubectl argocd-pull'.
func NewCommandFor(binary string) *cobra.Command {
	root := NewRootCommand()
	if strings.TrimSuffix(filepath.Base(binary), ".exe") == PluginBinary {
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl argocd-pull"}
	}
	return root
}

// NewRootCommand returns the argocd-pull command with all its subcommands.
func NewRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "argocd-pull",
		Short: "Hub side of the Argo CD pull model for Open Cluster Management",
		Long: `argocd-pull delivers Argo CD Applications to OCM managed clusters without the hub holding
cluster credentials: each pull-model Application is wrapped into a ManifestWork, the managed
cluster's work agent creates it there, its own Argo CD syncs it, and status flows back to the hub
Application and to one MulticlusterApplicationSetReport per ApplicationSet.`,
		SilenceUsage: true,
	}
	root.AddCommand(newControllerCommand(), newDashboardCommand(), newDoctorCommand(), newPauseCommand(), newResumeCommand(), newSandboxCommand(), newStatusCommand(), newTakeoverCommand(), newVersionCommand())
	return root
}
