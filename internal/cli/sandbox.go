package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/argocd-pull/argocd-pull/internal/sandbox"
)

func newSandboxCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Run a local pull-model lab: a hub and managed clusters with real components, no Docker",
		Long: `Run a local pull-model lab as processes on 127.0.0.1: a hub and managed clusters (a real
kube-apiserver and etcd each), the real OCM work agent and the real Argo CD application controller,
repo-server and redis per managed cluster, the real OCM placement controller, Argo CD ApplicationSet
controller and argocd-pull's controller on the hub, a local Git repository, and the documents'
pull-model ApplicationSet. Binaries come from bin/ ('make demo' builds them once).`,
	}
	dir := ".sandbox"
	cmd.PersistentFlags().StringVar(&dir, "dir", dir, "Directory of the lab: kubeconfigs, logs, data and the list of processes")

	clusters := 2
	wait := 3 * time.Minute
	up := &cobra.Command{
		Use:   "up",
		Short: "Start the lab and return; 'sandbox down' stops it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			self, err := os.Executable()
			if err != nil {
				return fmt.Errorf("locating the argocd-pull binary: %w", err)
			}
			abs, err := filepath.Abs(dir)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Starting a pull-model lab with %d managed clusters in %s\n", clusters, abs)
			lab, err := sandbox.Up(cmd.Context(), sandbox.Options{Dir: abs, Clusters: clusters, Controller: self, Out: out})
			if err != nil {
				return fmt.Errorf("%w\n(logs are in %s; 'argocd-pull sandbox down --dir %s' stops what started)", err, filepath.Join(abs, "logs"), dir)
			}
			fmt.Fprintf(out, "Waiting for the report of ApplicationSet %s/%s to converge\n", sandbox.ArgoNamespace, sandbox.ApplicationSetName)
			if _, err := lab.WaitForReport(cmd.Context(), out, wait); err != nil {
				fmt.Fprintf(out, "  %v\n", err)
			}
			fmt.Fprintf(out, "\nThe lab runs. Use it with kubectl:\n  KUBECONFIG=%s kubectl get managedclusters,manifestworks -A\n", lab.Hub.Kubeconfig)
			for _, c := range lab.Managed {
				fmt.Fprintf(out, "  KUBECONFIG=%s kubectl get applications -A\n", c.Kubeconfig)
			}
			fmt.Fprintf(out, "Follow the report, and check the documents' prerequisites:\n  argocd-pull status %s -n %s --kubeconfig %s --watch\n  argocd-pull doctor -n %s --kubeconfig %s --managed-argocd-namespace %s --managed-argocd-service-account %s",
				sandbox.ApplicationSetName, sandbox.ArgoNamespace, lab.Hub.Kubeconfig,
				sandbox.ArgoNamespace, lab.Hub.Kubeconfig, sandbox.ArgoNamespace, sandbox.ArgoControllerServiceAccount)
			for _, c := range lab.Managed {
				fmt.Fprintf(out, " --managed-kubeconfig %s=%s", c.Name, c.Kubeconfig)
			}
			fmt.Fprintf(out, "\nLogs: %s\nStop it: argocd-pull sandbox down --dir %s\n", filepath.Join(abs, "logs"), dir)
			return nil
		},
	}
	up.Flags().IntVar(&clusters, "clusters", clusters, "Number of managed clusters (cluster1, cluster2, ...)")
	up.Flags().DurationVar(&wait, "wait", wait, "How long to follow the report converging (0: do not wait)")

	down := &cobra.Command{
		Use:   "down",
		Short: "Stop every process the lab started (apiservers before their etcd)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			procs, err := sandbox.Down(dir)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Stopped %d processes of the lab in %s\n", len(procs), dir)
			return nil
		},
	}

	status := &cobra.Command{
		Use:   "status",
		Short: "List the lab's processes and whether they run",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			procs, err := sandbox.Processes(dir)
			if err != nil {
				return err
			}
			if len(procs) == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "No lab in %s\n", dir)
				return nil
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "PROCESS\tPID\tSTATE\tLOG")
			for _, p := range procs {
				state := "stopped"
				if p.Running() {
					state = "running"
				}
				fmt.Fprintf(w, "%s\t%d\t%s\t%s\n", p.Name, p.PID, state, p.Log)
			}
			return w.Flush()
		},
	}
	cmd.AddCommand(up, down, status)
	return cmd
}
