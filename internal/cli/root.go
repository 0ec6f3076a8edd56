// Package cli holds the argocd-pull commands, one file per command.
package cli

import (
	"github.com/spf13/cobra"
)

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
	root.AddCommand(newControllerCommand(), newDoctorCommand(), newPauseCommand(), newResumeCommand(), newSandboxCommand(), newStatusCommand(), newVersionCommand())
	return root
}
