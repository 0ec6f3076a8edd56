package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/dashboard"
	"github.com/argocd-pull/argocd-pull/internal/scheme"
)

// DefaultDashboardAddress is where the fleet view listens unless told otherwise: the loopback only.
const DefaultDashboardAddress = "127.0.0.1:8090"

type dashboardFlags struct {
	kubeconfig    string
	namespace     string
	allNamespaces bool
	address       string
	argocdURL     string
	staleAfter    time.Duration
}

func newDashboardCommand() *cobra.Command {
	var f dashboardFlags
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Serve the fleet view: every cluster x ApplicationSet on one live page",
		Long: `Serve a read-only web page of the pull-model fleet: one row per managed cluster, one column per
ApplicationSet, each cell coloured by the cluster's sync and health (as its report entry says,
without the report's size bound), marked stale or paused. Column heads count the states and show
a RollingSync rollout's current step. Filter by cluster name, cluster labels (env=prod,tier!=db),
ApplicationSet name and state; a cell opens the cluster's revision, operation, conditions and
deployed resources, and links to the hub Application. The page follows the hub's watches: changes
appear as they happen, without reloading.

The dashboard reads with your kubeconfig and your rights: it needs get, list and watch on
Applications and ApplicationSets in the namespace (all namespaces with -A), on ManifestWorks in all
namespaces and on ManagedClusters. It listens on ` + DefaultDashboardAddress + ` (the loopback only) and
answers only requests addressed to the loopback; everything it serves is embedded in the binary.`,
		Example: `  # The fleet of the Argo CD namespace, on http://127.0.0.1:8090
  argocd-pull dashboard

  # Applications of every namespace, with links into the hub's Argo CD
  argocd-pull dashboard -A --argocd-url https://openshift-gitops-server-openshift-gitops.apps.hub.example.com

  # Another port
  argocd-pull dashboard --address 127.0.0.1:9000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDashboard(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "Path to the hub kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster config)")
	fs.StringVarP(&f.namespace, "namespace", "n", "", "Namespace of the Applications and ApplicationSets (default: the kubeconfig context's namespace, else "+api.DefaultArgoCDNamespace+")")
	fs.BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "Show the Applications of all namespaces")
	fs.StringVar(&f.address, "address", DefaultDashboardAddress, "Address to listen on; a non-loopback address serves anyone who can reach it, with your rights")
	fs.StringVar(&f.argocdURL, "argocd-url", "", "Web address of the hub's Argo CD; cells link their hub Application there")
	fs.DurationVar(&f.staleAfter, "stale-after", 5*time.Minute, "How long a cluster may leave its ManifestWork unapplied before it is shown stale (the controller's --stale-after)")
	return cmd
}

func runDashboard(ctx context.Context, out, errOut io.Writer, f dashboardFlags) error {
	cfg, ns, err := hubConfig(f.kubeconfig, f.namespace)
	if err != nil {
		return err
	}
	var namespaces []string
	if !f.allNamespaces {
		namespaces = []string{ns}
	}
	s, err := scheme.New()
	if err != nil {
		return err
	}
	direct, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return fmt.Errorf("creating client: %w", err)
	}
	if err := dashboard.CheckAccess(ctx, direct, namespaces); err != nil {
		return fmt.Errorf("the fleet view cannot read the hub:\n%w", err)
	}
	listener, err := net.Listen("tcp", f.address)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", f.address, err)
	}
	defer func() { _ = listener.Close() }()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c, err := dashboard.NewCache(cfg, s, namespaces)
	if err != nil {
		return fmt.Errorf("creating the watches: %w", err)
	}
	fleet := dashboard.NewFleet(f.staleAfter)
	synced, err := dashboard.Feed(ctx, c, fleet)
	if err != nil {
		return err
	}
	started := time.Now()
	cacheErr := make(chan error, 1)
	go func() { cacheErr <- c.Start(ctx) }()
	where := "namespace " + ns
	if f.allNamespaces {
		where = "all namespaces"
	}
	_, _ = fmt.Fprintf(out, "Reading the fleet (pull-model Applications of %s, their ManifestWorks, ManagedClusters)...\n", where)
	if !c.WaitForCacheSync(ctx) {
		select {
		case err := <-cacheErr:
			return fmt.Errorf("watching the hub: %w", err)
		default:
			return ctx.Err()
		}
	}
	for !synced() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	apps, works, clusters, appSets := fleet.Counts()
	_, _ = fmt.Fprintf(out, "Read %d Applications, %d ManifestWorks, %d ManagedClusters and %d ApplicationSets in %.1fs.\n",
		apps, works, clusters, appSets, time.Since(started).Seconds())
	_, _ = fmt.Fprintf(out, "Serving the fleet view on http://%s/ (read-only; Ctrl-C stops it)\n", listener.Addr())
	return dashboard.Serve(ctx, listener, fleet, dashboard.ServerOptions{ArgoCDURL: f.argocdURL})
}
