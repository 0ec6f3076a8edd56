package cli

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/argocd-pull/argocd-pull/internal/controller"
	"github.com/argocd-pull/argocd-pull/internal/dashboard"
	"github.com/argocd-pull/argocd-pull/internal/metrics"
	"github.com/argocd-pull/argocd-pull/internal/scheme"
	"github.com/argocd-pull/argocd-pull/internal/tenancy"
)

// Client-side rate limits of the controller's API client. A hub of 1,000 clusters with 10
// ApplicationSets holds 10,000 Applications; these let the controller write their works as fast
// as a 2-core apiserver accepts them (see docs/benchmarks.md) while still bounding a runaway.
const (
	DefaultKubeAPIQPS   = 500
	DefaultKubeAPIBurst = 1000
)

// Leader election, chosen for docs/operating.md's trade-off: a crashed leader's replacement starts
// after the lease duration (Kubernetes' own controllers use the same 15 s and 10 s); a stopping
// leader releases its lease and a standby, trying every retry period with client-go's jitter (up
// to 2.2 times it), takes over in about a second; the leader renews, one Lease write, every retry
// period: two small writes a second.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 500 * time.Millisecond
)

type controllerFlags struct {
	kubeconfig              string
	kubeAPIQPS              float32
	kubeAPIBurst            int
	metricsAddr             string
	probeAddr               string
	pprofAddr               string
	dashboardAddr           string
	leaderElect             bool
	leaderElectionNamespace string
	leaseDuration           time.Duration
	renewDeadline           time.Duration
	retryPeriod             time.Duration
	managedNamespaceGrants  []string
	opts                    controller.Options
	argoCDNamespaceGrants   []string
	redisCompress           string
	clusterProxyCAFile      string
	zap                     zap.Options
}

func newControllerCommand() *cobra.Command {
	f := controllerFlags{opts: controller.DefaultOptions(), zap: zap.Options{Development: false}}
	cmd := &cobra.Command{
		Use:         "controller",
		Annotations: map[string]string{ownLogger: "true"}, // from its --zap-* flags
		Short:       "Run the hub controllers",
		Long: `Run the hub controllers against the cluster of the current kubeconfig (or in-cluster config).

The manager serves Prometheus metrics and health probes (/healthz, /readyz) and can run with
leader election for high availability.

On a hub that does not serve the Argo CD, OCM or argocd-pull APIs yet (a controller rolled out
before them), it waits: its log and /readyz say what is missing and how to install it, /healthz
answers, and the controllers start, without a restart, once every API is served.

In a container with a memory limit, the Go runtime aims to stay under 90% of it (unless
GOMEMLIMIT is set): it collects garbage harder near the limit instead of being killed by it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runController(cmd, f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "Path to the hub kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster config)")
	fs.Float32Var(&f.kubeAPIQPS, "kube-api-qps", DefaultKubeAPIQPS, "Requests per second the controller may send the hub apiserver (client-side limit; -1 disables it and leaves flow control to the apiserver)")
	fs.IntVar(&f.kubeAPIBurst, "kube-api-burst", DefaultKubeAPIBurst, "Requests the controller may send the hub apiserver in a burst above --kube-api-qps")
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", "Address the metrics endpoint binds to; \"0\" disables it")
	fs.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "Address the health and readiness probes bind to")
	fs.StringVar(&f.pprofAddr, "pprof-bind-address", "", "Address Go's profiling endpoints (/debug/pprof) bind to, such as 127.0.0.1:6060; empty (the default) disables them")
	fs.StringVar(&f.dashboardAddr, "dashboard-bind-address", "", "Address the fleet view (the page of argocd-pull dashboard, read from the controller's cache with its rights) binds to: a loopback address, such as 127.0.0.1:8090 (any other is refused at start), and it answers callers on the loopback only, whatever Host they send; reach it with kubectl port-forward. Empty (the default) disables it")
	fs.BoolVar(&f.leaderElect, "leader-elect", false, "Elect a leader so that only one replica reconciles at a time")
	fs.StringVar(&f.leaderElectionNamespace, "leader-election-namespace", "", "Namespace of the leader election lease (default: the pod's namespace)")
	fs.DurationVar(&f.leaseDuration, "leader-election-lease-duration", DefaultLeaseDuration, "How long standbys wait after the leader's last renewal before one takes over: the gap after a leader crashes (a leader that stops releases its lease at once)")
	fs.DurationVar(&f.renewDeadline, "leader-election-renew-deadline", DefaultRenewDeadline, "How long the leader tries to renew its lease before it gives up leading and exits; shorter than the lease duration, so that two replicas never lead at once")
	fs.DurationVar(&f.retryPeriod, "leader-election-retry-period", DefaultRetryPeriod, "How often the leader renews its lease (one Lease write each time) and standbys try to take it: a stopping leader hands over within about twice this")
	fs.StringVar(&f.opts.ArgoCDNamespace, "argocd-namespace", f.opts.ArgoCDNamespace, "Namespace of the hub's Argo CD")
	fs.StringSliceVar(&f.opts.PullNamespaces, "pull-namespaces", nil, "Namespaces pull-model Applications are taken from (default: the Argo CD namespace)")
	fs.StringArrayVar(&f.managedNamespaceGrants, "grant-managed-namespaces", nil, "NS=NS1[,NS2...]: Applications of hub namespace NS may also land in these managed-cluster namespaces (by default an Application of a namespace other than the Argo CD namespace lands only in its own); repeatable")
	fs.BoolVar(&f.opts.AdoptUpstreamWorks, "adopt-upstream-works", false, "Take over the Applications that RHACM's or OCM's (basic mode) pull controller delivers, without redeploying them: argocd-pull's work takes the managed-cluster Application, then the upstream ManifestWork is released and deleted. Stop the upstream controller first (docs/migration.md). Off (the default), those Applications are refused (condition UpstreamManifestWork) and their works left as they are")
	fs.IntVar(&f.opts.MaxConcurrentReconciles, "concurrency", f.opts.MaxConcurrentReconciles, "Concurrent reconciles per controller")
	fs.DurationVar(&f.opts.StaleAfter, "stale-after", f.opts.StaleAfter, "How long a cluster may leave its ManifestWork unapplied before the report shows it as stale")
	fs.StringSliceVar(&f.opts.GitOpsNamespaces, "gitops-namespaces", nil, "More Argo CD namespaces, besides --argocd-namespace, that GitOpsClusters may write cluster secrets into; the install must give argocd-pull its Role in each (Helm value gitopsNamespaces)")
	fs.StringArrayVar(&f.argoCDNamespaceGrants, "grant-argocd-namespaces", nil, "T=X[,Y]: GitOpsClusters in hub namespace T may also write into Argo CD namespaces X and Y (each --argocd-namespace or in --gitops-namespaces); repeatable. Without a grant a GitOpsCluster writes only into its own namespace")
	fs.DurationVar(&f.opts.RollingSyncUnconfirmedHold, "rollingsync-unconfirmed-hold", f.opts.RollingSyncUnconfirmedHold, "How long one managed cluster alone can hold its RollingSync siblings OutOfSync on the hub with a revision no other cluster reports (the barrier that keeps a later step from running first when one cluster finds a commit first). A cluster writes its own status, so its word alone is bounded: after this, until another cluster reports a revision it reported first, its revisions hold nobody. Keep it above the managed Argo CDs' reconciliation period (timeout.reconciliation, 180s, plus its jitter)")
	fs.DurationVar(&f.opts.SecretGracePeriod, "secret-grace-period", f.opts.SecretGracePeriod, "How long the cluster secret of a cluster that left a GitOpsCluster's placement is kept")
	fs.StringVar(&f.opts.ApplicationSetServiceAccount, "applicationset-service-account", f.opts.ApplicationSetServiceAccount, "Service account of the ApplicationSet controller in the Argo CD namespace, granted read access to PlacementDecisions")
	fs.StringVar(&f.opts.Search.URL, "search-url", "", "OCM Search V2 API base URL; adds deployed resources and error conditions from Search to the reports (default: off)")
	fs.StringVar(&f.opts.Search.TokenFile, "search-token-file", "", "File holding the bearer token for Search (read on every query)")
	fs.StringVar(&f.opts.Search.CAFile, "search-ca-file", "", "CA bundle that verifies the Search server (default: system roots)")
	fs.BoolVar(&f.opts.Search.InsecureSkipVerify, "search-insecure-skip-tls-verify", false, "Do not verify the Search server's certificate (labs only)")
	fs.DurationVar(&f.opts.SearchInterval, "search-interval", f.opts.SearchInterval, "How often Search is polled")
	fs.DurationVar(&f.opts.ReportCoalesce, "report-coalesce", f.opts.ReportCoalesce, "How long events of one ApplicationSet are gathered into one report update")
	fs.DurationVar(&f.opts.ReportIntervalPerCluster, "report-interval-per-cluster", f.opts.ReportIntervalPerCluster, "Paces large reports: a report of N clusters is written at most once per N times this (1ms: once a second at 1,000 clusters); 0 disables pacing")
	fs.IntVar(&f.opts.ReportEntriesPerSecond, "report-entries-per-second", f.opts.ReportEntriesPerSecond, "Bounds the cluster entries all report writes carry together each second, the apiserver's cost of reports (about 0.15 ms of its CPU per entry). 1000: ten reports of 1,000 clusters each written every 10 s, one alone every second, ten of 100 clusters every second; 0 disables the bound")
	fs.StringVar(&f.opts.Channel.URL, "cluster-proxy-url", "", "cluster-proxy's user server, the hub's way to each cluster (OCM's cluster-proxy add-on), such as https://cluster-proxy-addon-user.open-cluster-management-addon.svc:9092: a GitOpsCluster with spec.managedServiceAccountRef then puts <url>/<cluster> and the ManagedServiceAccount's token into each cluster's secret, for the hub's Argo CD to read the cluster's live objects (docs/cluster-access.md). Empty (the default): every cluster secret is credential-free")
	fs.StringVar(&f.clusterProxyCAFile, "cluster-proxy-ca-file", "", "PEM CA bundle that verifies cluster-proxy's user server; it goes into the cluster secrets (read at start)")
	fs.StringSliceVar(&f.opts.Channel.Accounts, "managed-serviceaccounts", f.opts.Channel.Accounts, "The ManagedServiceAccount names GitOpsClusters may name in spec.managedServiceAccountRef; the install's RBAC must let argocd-pull get the token Secrets of these names (Helm value clusterAccess.managedServiceAccounts)")
	fs.StringVar(&f.opts.ArgoCDServer.URL, "argocd-server", "", "The hub Argo CD API server's URL (https://argocd-server.argocd.svc): for an Application on its cluster's channel, argocd-pull asks it for the Application's manifests at the revisions the cluster compared, the Git side of DIFF and argocd app diff, as its own Argo CD account (docs/argocd-clients.md). Empty (the default): the resource panel shows live manifests only, and argocd app diff errs")
	fs.StringVar(&f.opts.ArgoCDServer.TokenFile, "argocd-server-token-file", "", "File holding the API token of argocd-pull's Argo CD account, which needs only 'applications, get' (read at each request: a rotated token is used)")
	fs.StringVar(&f.opts.ArgoCDServer.CAFile, "argocd-server-ca-certificate", "", "CA bundle that verifies --argocd-server's certificate (default: system roots)")
	fs.BoolVar(&f.opts.ArgoCDServer.InsecureSkipVerify, "argocd-server-insecure", false, "Do not verify --argocd-server's certificate (Argo CD's self-signed default; labs only)")
	fs.DurationVar(&f.opts.ClusterProbeInterval, "cluster-probe-interval", f.opts.ClusterProbeInterval, "How often each cluster whose own resource tree the hub holds (an Application on its cluster's channel) is asked whether it still answers: one GET /api through cluster-proxy with its secret's token, and a second one 5 s later when the first was not answered. A token the cluster revoked while no new one could come (its managed-serviceaccount agent down), or a channel gone down, turns the cluster's trees to the display tree within this, instead of at their next read; 0 probes never")
	addResourceTreeFlags(fs, &f)
	goflags := flag.NewFlagSet("zap", flag.ContinueOnError)
	f.zap.BindFlags(goflags)
	fs.AddGoFlagSet(goflags)
	return cmd
}

// runController runs the manager until the command's context ends (SIGTERM/SIGINT in main).
func runController(cmd *cobra.Command, f controllerFlags) error {
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&f.zap)))
	log := ctrl.Log.WithName("setup")

	cfg, err := restConfig(f.kubeconfig)
	if err != nil {
		return err
	}
	if f.kubeAPIQPS > 0 && f.kubeAPIBurst < 1 {
		return fmt.Errorf("--kube-api-burst must be at least 1 when --kube-api-qps is positive, got %d", f.kubeAPIBurst)
	}
	cfg.QPS, cfg.Burst = f.kubeAPIQPS, f.kubeAPIBurst
	s, err := scheme.New()
	if err != nil {
		return err
	}
	if f.opts.ManagedNamespaceGrants, err = tenancy.ParseGrants(f.managedNamespaceGrants); err != nil {
		return fmt.Errorf("--grant-managed-namespaces: %w", err)
	}
	if f.opts.ArgoCDNamespaceGrants, err = tenancy.ParseGrants(f.argoCDNamespaceGrants); err != nil {
		return fmt.Errorf("--grant-argocd-namespaces: %w", err)
	}
	if err := f.resourceTree(); err != nil {
		return err
	}
	if f.clusterProxyCAFile != "" {
		if f.opts.Channel.CA, err = os.ReadFile(f.clusterProxyCAFile); err != nil {
			return fmt.Errorf("--cluster-proxy-ca-file: %w", err)
		}
	}
	if f.dashboardAddr != "" {
		if err := dashboard.CheckLoopbackBind(f.dashboardAddr); err != nil {
			return fmt.Errorf("--dashboard-bind-address: %w", err)
		}
	}
	if err := f.opts.Validate(); err != nil {
		return err
	}
	if f.retryPeriod <= 0 || f.retryPeriod >= f.renewDeadline || f.renewDeadline >= f.leaseDuration {
		return fmt.Errorf("leader election needs 0 < --leader-election-retry-period (%s) < --leader-election-renew-deadline (%s) < --leader-election-lease-duration (%s)",
			f.retryPeriod, f.renewDeadline, f.leaseDuration)
	}
	if err := waitForHubAPIs(cmd.Context(), cfg, f.probeAddr, log); err != nil {
		return err
	}
	if cmd.Context().Err() != nil {
		return nil // stopped while waiting
	}
	mopts := controller.ManagerOptions(s, f.opts)
	mopts.Metrics = metricsserver.Options{BindAddress: f.metricsAddr}
	mopts.HealthProbeBindAddress = f.probeAddr
	mopts.PprofBindAddress = f.pprofAddr
	mopts.LeaderElection = f.leaderElect
	mopts.LeaderElectionID = "argocd-pull.apps.open-cluster-management.io"
	mopts.LeaderElectionNamespace = f.leaderElectionNamespace
	// The binary exits as soon as the manager returns, so releasing the lease then is safe: a
	// rolling restart hands over in about a retry period instead of a lease duration.
	mopts.LeaderElectionReleaseOnCancel = true
	mopts.LeaseDuration, mopts.RenewDeadline, mopts.RetryPeriod = &f.leaseDuration, &f.renewDeadline, &f.retryPeriod
	mgr, err := ctrl.NewManager(metrics.CountAPIRequests(cfg), mopts)
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if err := controller.Setup(mgr, f.opts); err != nil {
		return fmt.Errorf("setting up controllers: %w", err)
	}
	if f.dashboardAddr != "" {
		if err := addDashboard(cmd.Context(), mgr, f.dashboardAddr, f.opts.StaleAfter); err != nil {
			return err
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding health check: %w", err)
	}
	hubReady, err := hubReachable(cfg)
	if err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("hub-apiserver", hubReady); err != nil {
		return fmt.Errorf("adding ready check: %w", err)
	}
	if limit := setMemoryLimit(); limit != "" {
		log.Info("Go memory limit set from the container's", "limit", limit)
	}
	log.Info("Starting manager", "version", Version(), "argocdNamespace", f.opts.ArgoCDNamespace, "argocdNamespaces", f.opts.ArgoCDNamespaces())
	return mgr.Start(cmd.Context())
}

// addDashboard serves the fleet view from the manager's cache on every replica (it only reads).
func addDashboard(ctx context.Context, mgr ctrl.Manager, addr string, staleAfter time.Duration) error {
	fleet := dashboard.NewFleet(staleAfter)
	if _, err := dashboard.Feed(ctx, mgr.GetCache(), fleet); err != nil {
		return fmt.Errorf("setting up the fleet view: %w", err)
	}
	listener, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--dashboard-bind-address: %w", err)
	}
	return mgr.Add(everyReplica(func(ctx context.Context) error {
		ctrl.Log.WithName("dashboard").Info("Serving the fleet view", "address", listener.Addr().String())
		return dashboard.Serve(ctx, listener, fleet, dashboard.ServerOptions{LoopbackCallersOnly: true})
	}))
}

// everyReplica is a runnable that runs whether or not this replica leads.
type everyReplica func(context.Context) error

func (r everyReplica) Start(ctx context.Context) error { return r(ctx) }
func (everyReplica) NeedLeaderElection() bool          { return false }
