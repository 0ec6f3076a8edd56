package cli

import (
	"fmt"
	"net/url"
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
kube-apiserver, etcd and kube-controller-manager each), the real OCM registration and work agents
and the real Argo CD application controller, repo-server and redis per managed cluster, the real
OCM registration and placement controllers, Argo CD ApplicationSet controller and API server (with
its redis and repo-server: the argocd CLI's) and argocd-pull's controller on the hub, a local Git
repository (served over HTTP with a password too, as a private one), and the documents' pull-model
ApplicationSet.
Clusters join as with clusteradm: a bootstrap token, a CSR approved on the hub, the cluster accepted,
a lease kept by the agent. Binaries come from bin/ ('make demo' builds them once).`,
	}
	dir := ".sandbox"
	cmd.PersistentFlags().StringVar(&dir, "dir", dir, "Directory of the lab: kubeconfigs, logs, data and the list of processes")

	clusters := 2
	wait := 3 * time.Minute
	views := true
	image := ""
	var argoVersion, managedArgoVersion string
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
			lab, err := sandbox.Up(cmd.Context(), sandbox.Options{Dir: abs, Clusters: clusters, Controller: self, ControllerImage: image, Out: out,
				ArgoCDVersion: argoVersion, ManagedArgoCDVersion: managedArgoVersion})
			if err != nil {
				return fmt.Errorf("%w\n(logs are in %s; 'argocd-pull sandbox down --dir %s' stops what started)", err, filepath.Join(abs, "logs"), dir)
			}
			fmt.Fprintf(out, "Waiting for the report of ApplicationSet %s/%s to converge\n", sandbox.ArgoNamespace, sandbox.ApplicationSetName)
			if _, err := lab.WaitForReport(cmd.Context(), out, wait); err != nil {
				fmt.Fprintf(out, "  %v\n", err)
			}
			viewsErr := error(nil)
			if views && len(lab.Managed) > 0 {
				fmt.Fprintf(out, "Turning OCM's channel on (managedServiceAccountRef: %s) and creating ApplicationSet %s/%s, the documents' in the hardened form\n",
					sandbox.ChannelAccount, sandbox.ArgoNamespace, sandbox.HardenedApplicationSetName)
				viewsErr = lab.ShowViews(cmd.Context(), max(wait, time.Minute))
			}
			fmt.Fprintf(out, "\nThe lab runs. Use it with kubectl:\n  KUBECONFIG=%s kubectl get managedclusters,manifestworks -A\n", lab.Hub.Kubeconfig)
			for _, c := range lab.Managed {
				fmt.Fprintf(out, "  KUBECONFIG=%s kubectl get applications -A\n", c.Kubeconfig)
			}
			fmt.Fprintf(out, "Follow the report and the fleet, and check the documents' prerequisites:\n  argocd-pull dashboard --kubeconfig %s\n", lab.Hub.Kubeconfig)
			fmt.Fprintf(out, "  argocd-pull status %s --kubeconfig %s --watch\n  argocd-pull doctor --kubeconfig %s --managed-argocd-namespace %s --managed-argocd-service-account %s",
				sandbox.ApplicationSetName, lab.Hub.Kubeconfig, lab.Hub.Kubeconfig, sandbox.ArgoNamespace, sandbox.ArgoControllerServiceAccount)
			for _, c := range lab.Managed {
				fmt.Fprintf(out, " --managed-kubeconfig %s=%s", c.Name, c.Kubeconfig)
			}
			if redis, err := lab.Addr("hub-redis"); err == nil {
				fmt.Fprintf(out, " --argocd-redis %s", redis)
			}
			fmt.Fprintf(out, "\nThe hub's Argo CD API server (the argocd CLI's; user admin):\n  %s login %s --plaintext --username admin --password %s --config %s\n  %s app list --config %s\n",
				lab.ArgoCDCLI, lab.ArgoCD.Addr, lab.ArgoCD.Password, filepath.Join(abs, "argocd.config"), lab.ArgoCDCLI, filepath.Join(abs, "argocd.config"))
			if lab.ArgoCD.NoWebUI == "" {
				fmt.Fprintf(out, "Its web UI (Argo CD %s; user admin, the password above): http://%s\n", lab.HubArgoCDVersion, lab.ArgoCD.Addr)
			} else {
				fmt.Fprintf(out, "No web UI: %s\n", lab.ArgoCD.NoWebUI)
			}
			if views && len(lab.Managed) > 0 {
				app := sandbox.HardenedApplication(lab.Managed[0].Name)
				switch {
				case viewsErr != nil:
					fmt.Fprintf(out, "\nOCM's channel is not up yet (%v): the hub's views of each cluster come once it is\n", viewsErr)
				case lab.ArgoCD.NoWebUI == "":
					fmt.Fprintf(out, "\nClick the Deployment guestbook-ui of %s/%s (the documents' ApplicationSet in the hardened form: its\ndestination names the cluster): its panel, DIFF, EVENTS and LOGS (its Pod runs on %s's node) are\n%s's own, read through OCM's channel, read-only:\n  http://%s/applications/%s/%s?node=%s\n",
						sandbox.ArgoNamespace, app, lab.Managed[0].Name, lab.Managed[0].Name, lab.ArgoCD.Addr, sandbox.ArgoNamespace, app,
						url.QueryEscape("apps/Deployment/"+sandbox.HardenedNamespace+"/guestbook-ui/0"))
				}
				config := filepath.Join(abs, "argocd.config")
				fmt.Fprintf(out, "  %s app get-resource %s/%s --kind Deployment --resource-name guestbook-ui --config %s\n", lab.ArgoCDCLI, sandbox.ArgoNamespace, app, config)
				fmt.Fprintf(out, "  %s app logs %s/%s --kind Deployment --group apps --name guestbook-ui --config %s\n", lab.ArgoCDCLI, sandbox.ArgoNamespace, app, config)
				fmt.Fprintf(out, "The documents' own Applications (%s-guestbook-app) show what the cluster reports, without live\nmanifests: their destination, the in-cluster server, is the hub to Argo CD's API server (argocd-pull doctor says so).\n", lab.Managed[0].Name)
			}
			if len(lab.Managed) > 0 {
				ca, err := filepath.Abs(lab.ClusterProxy.CA)
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "\nOCM's channel from the hub to each cluster (cluster-proxy's user server), with a token the cluster\naccepts, e.g. a ManagedServiceAccount's (its Secret in the cluster's namespace on the hub):\n  kubectl --kubeconfig /dev/null --server %s --certificate-authority %s --token \"$TOKEN\" auth whoami\n",
					lab.ClusterProxy.ClusterURL(lab.Managed[0].Name), ca)
			}
			if password, err := lab.GitPassword(); err == nil {
				fmt.Fprintf(out, "\nThe same Git repository, private (HTTP, user %s): %s. Give its credential to the hub's Argo CD and\nopt it in: each cluster whose Applications use it receives it (docs/install.md#private-repositories):\n",
					sandbox.GitUser, lab.PrivateRepoURL)
				fmt.Fprintf(out, "  %s repo add %s --username %s --password %s --config %s\n", lab.ArgoCDCLI, lab.PrivateRepoURL, sandbox.GitUser, password, filepath.Join(abs, "argocd.config"))
				fmt.Fprintf(out, "  KUBECONFIG=%s kubectl -n %s label secret -l argocd.argoproj.io/secret-type=repository apps.open-cluster-management.io/pull-credentials=true\n",
					lab.Hub.Kubeconfig, sandbox.ArgoNamespace)
			}
			fmt.Fprintf(out, "\nLogs: %s\nStop it: argocd-pull sandbox down --dir %s\n", filepath.Join(abs, "logs"), dir)
			return nil
		},
	}
	up.Flags().IntVar(&clusters, "clusters", clusters, "Number of managed clusters (cluster1, cluster2, ...)")
	up.Flags().StringVar(&image, "controller-image", "", "Run the hub controller from this image with podman (make image), as the chart's Deployment runs it: read-only, non-root, no capabilities; default: this binary as a process")
	up.Flags().DurationVar(&wait, "wait", wait, "How long to follow the report converging (0: do not wait)")
	up.Flags().BoolVar(&views, "views", views, "Turn OCM's channel on and add the documents' ApplicationSet in the hardened form, whose Applications' resources the hub's Argo CD UI shows live from each cluster (false: the documents' setup only)")
	up.Flags().StringVar(&argoVersion, "argocd-version", "", "Argo CD release on the hub, e.g. v3.4.7 (default: $ARGOCD_VERSION, else the one hack/tools/argocd/VERSION pins); built by 'make argocd-assets ARGOCD_VERSION=...'")
	up.Flags().StringVar(&managedArgoVersion, "managed-argocd-version", "", "Argo CD release on the managed clusters, as a fleet in the middle of an upgrade runs (default: $MANAGED_ARGOCD_VERSION, else the hub's)")

	purge := false
	down := &cobra.Command{
		Use:   "down",
		Short: "Stop every process the lab started (apiservers before their etcd); --purge also deletes the lab",
		Long: `Stop every process the lab started, last started first (agents before their apiservers,
apiservers before their etcd). The lab's directory keeps its data, certificates and ports: 'sandbox up'
(or 'make demo') in the same directory brings back the same hub and clusters, at the same addresses,
with the same identity on the managed clusters. --purge also deletes the directory, so that the next
start is a new lab.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			stopDown := sandbox.Down
			if purge {
				stopDown = sandbox.Purge
			}
			procs, err := stopDown(dir)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Stopped %d processes of the lab in %s\n", len(procs), dir)
			if purge {
				fmt.Fprintf(cmd.OutOrStdout(), "Deleted %s: the next start is a new lab\n", dir)
			}
			return nil
		},
	}
	down.Flags().BoolVar(&purge, "purge", false, "Also delete the lab's directory (data, certificates, ports, logs)")

	componentsHelp := `COMPONENT is one of:
  clusterN          every process of managed cluster N (apiserver, etcd, agents, Argo CD): the cluster is gone
  clusterN-agents   its OCM registration and work agents and its konnectivity agent: the hub stops hearing
                    from it and has no way to it, as when it is cut off
  argocd-pull       argocd-pull's controller on the hub
  applicationset-controller   the hub's Argo CD ApplicationSet controller
  hub               every process of the hub
or any process name 'sandbox status' lists.`
	stop := &cobra.Command{
		Use:   "stop COMPONENT",
		Short: "Stop a component of the lab, for failure drills ('sandbox start' starts it again)",
		Long:  "Stop a component of the lab, for failure drills; 'sandbox status' shows it stopped and 'sandbox start' starts it again.\n\n" + componentsHelp,
		Example: `  argocd-pull sandbox stop cluster2-agents   # after 5 of its 5 s leases (25 s and OCM's next check) the hub marks cluster2 unavailable; the report shows it stale
  argocd-pull sandbox start cluster2-agents`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			procs, err := sandbox.StopComponent(dir, args[0])
			if err != nil {
				return err
			}
			for _, p := range procs {
				fmt.Fprintf(cmd.OutOrStdout(), "stopped %s\n", p.Name)
			}
			return nil
		},
	}
	startCmd := &cobra.Command{
		Use:   "start COMPONENT",
		Short: "Start a stopped component of the lab again, as it was first started",
		Long:  "Start a stopped component of the lab again, with the command it was first started with.\n\n" + componentsHelp,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			procs, err := sandbox.StartComponent(cmd.Context(), dir, args[0])
			for _, p := range procs {
				fmt.Fprintf(cmd.OutOrStdout(), "started %s (pid %d)\n", p.Name, p.PID)
			}
			if err == nil && len(procs) == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "%s already runs\n", args[0])
			}
			return err
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
	var gitListen, gitRoot, gitPasswordFile string
	gitServer := &cobra.Command{
		Use:    "git-server",
		Short:  "Serve the lab's Git repositories over HTTP with basic authentication (the lab starts it)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return sandbox.ServeGit(cmd.Context(), gitListen, gitRoot, gitPasswordFile)
		},
	}
	gitServer.Flags().StringVar(&gitListen, "listen", "127.0.0.1:0", "Address to listen on")
	gitServer.Flags().StringVar(&gitRoot, "root", "", "Directory of the repositories")
	gitServer.Flags().StringVar(&gitPasswordFile, "password-file", "", "File holding the password of user "+sandbox.GitUser+", read at each request")
	cmd.AddCommand(up, down, stop, startCmd, status, gitServer)
	return cmd
}
