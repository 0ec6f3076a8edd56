// Package cli holds the argocd-pull commands, one file per command.
package cli

import (
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// ownLogger marks a command that sets controller-runtime's logger itself (the controller, from its
// --zap-* flags); every other command gets the root's.
const ownLogger = "argocd-pull/own-logger"

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
		// Every command that builds a controller-runtime client logs through ctrl.Log: without a
		// logger set, controller-runtime prints a stack trace ("log.SetLogger(...) was never
		// called") on the first log call 30 s into the process, as 'sandbox up' reaches. The
		// commands log only what goes wrong (a lost watch, a refused request), to standard error.
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			if cmd.Annotations[ownLogger] == "" {
				ctrl.SetLogger(zap.New(zap.WriteTo(cmd.ErrOrStderr()), zap.Level(zapcore.ErrorLevel)))
			}
		},
	}
	root.AddCommand(newControllerCommand(), newDashboardCommand(), newDoctorCommand(), newPauseCommand(), newResumeCommand(), newSandboxCommand(), newStatusCommand(), newTakeoverCommand(), newVersionCommand())
	return root
}
