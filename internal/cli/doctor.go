package cli

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/doctor"
	"github.com/argocd-pull/argocd-pull/internal/scheme"
)

type doctorFlags struct {
	kubeconfig        string
	managed           []string
	output            string
	workAgent         string
	timeout           time.Duration
	opts              doctor.Options
	managedKubeconfig map[string]string
	// policy are the controller's rules, parsed into opts by validate.
	policy policyFlags
}

func newDoctorCommand() *cobra.Command {
	f := doctorFlags{}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the pull model's prerequisites on the hub and managed clusters, and say how to fix what is missing",
		Long: `Check the prerequisites of the Argo CD pull model that the documents list, on the hub and on the
managed clusters given with --managed-kubeconfig, and explain each failure with its fix.

` + doctor.Help() + `

Targeted clusters are those in the PlacementDecisions of the ApplicationSets' generators and those
named by existing pull-model Applications. Access on managed clusters is asked with
SubjectAccessReviews for the service accounts, so the managed kubeconfig needs to create those.
Nothing is written, and no secret data is shown. The command fails when a check fails; warnings
do not fail it.`,
		Example: `  # The hub of the current kubeconfig, Argo CD in openshift-gitops, and one managed cluster
  argocd-pull doctor -n openshift-gitops --managed-argocd-namespace openshift-gitops \
    --managed-kubeconfig cluster1=$HOME/.kube/cluster1

  # One ApplicationSet, as JSON for a script
  argocd-pull doctor --kubeconfig hub.kubeconfig -n argocd --applicationset guestbook -o json`,
		Args: cobra.NoArgs,
		PreRunE: func(*cobra.Command, []string) error {
			return f.validate()
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDoctor(cmd, &f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "Path to the hub kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster config)")
	fs.StringArrayVar(&f.managed, "managed-kubeconfig", nil, "CLUSTER=PATH: also check the managed cluster CLUSTER (its ManagedCluster name) with the kubeconfig at PATH; repeatable")
	f.policy.add(fs)
	fs.StringVar(&f.opts.ApplicationSet, "applicationset", "", "Check only this ApplicationSet (default: every ApplicationSet with pull-model markers in its template)")
	fs.StringVarP(&f.output, "output", "o", "text", "Output format: text or json")
	fs.StringVar(&f.opts.ManagedArgoCDNamespace, "managed-argocd-namespace", api.DefaultArgoCDNamespace, "Namespace of Argo CD on the managed clusters")
	fs.StringVar(&f.opts.ControllerServiceAccount, "managed-argocd-service-account", doctor.DefaultControllerServiceAccount, "Service account of the Argo CD application controller on the managed clusters")
	fs.StringVar(&f.workAgent, "work-agent-service-account", doctor.DefaultWorkAgentNamespace+"/"+doctor.DefaultWorkAgentServiceAccount, "NAMESPACE/NAME of the OCM work agent's service account on the managed clusters")
	fs.StringVar(&f.opts.ClusterProxyURL, "cluster-proxy-url", "", "cluster-proxy's user server as this machine reaches it (kubectl port-forward -n multicluster-engine svc/cluster-proxy-addon-user 9092, then https://localhost:9092): the cluster-access check asks each cluster there, checking the certificate against the secret's server's name (default: each secret's server)")
	fs.DurationVar(&f.timeout, "timeout", time.Minute, "How long all checks may take")
	fs.StringVar(&f.opts.ArgoCDRedis.Address, "argocd-redis", "", "host:port of the hub Argo CD's redis as this machine reaches it (kubectl port-forward -n openshift-gitops svc/argocd-redis 6379): doctor then checks the connection, the cache version and each pull-model Application's resource tree")
	fs.BoolVar(&f.opts.ArgoCDRedis.TLS, "argocd-redis-use-tls", false, "Connect to --argocd-redis with TLS")
	fs.StringVar(&f.opts.ArgoCDRedis.CAFile, "argocd-redis-ca-certificate", "", "CA bundle that verifies --argocd-redis's certificate")
	fs.StringVar(&f.opts.RedisSecret, "argocd-redis-secret", "argocd-redis", "Secret in --argocd-namespace whose auth key is the redis password")
	fs.StringVar(&f.opts.ArgoCDRedis.KeyPrefix, "argocd-redis-key-prefix", "", "Prefix of the hub Argo CD's redis keys (ARGOCD_REDIS_KEY_PREFIX)")
	return cmd
}

func (f *doctorFlags) validate() error {
	if f.output != "text" && f.output != "json" {
		return fmt.Errorf("--output must be text or json, got %q", f.output)
	}
	ns, name, ok := strings.Cut(f.workAgent, "/")
	if !ok || ns == "" || name == "" {
		return fmt.Errorf("--work-agent-service-account must be NAMESPACE/NAME, got %q", f.workAgent)
	}
	f.opts.WorkAgentNamespace, f.opts.WorkAgentServiceAccount = ns, name
	policy, err := f.policy.policy()
	if err != nil {
		return err
	}
	f.opts.ArgoCDNamespace, f.opts.PullNamespaces, f.opts.ManagedNamespaceGrants = policy.ArgoCDNamespace, policy.PullNamespaces, policy.ManagedNamespaces
	if u := f.opts.ClusterProxyURL; u != "" {
		if p, err := url.Parse(u); err != nil || p.Scheme != "https" || p.Host == "" || p.RawQuery != "" {
			return fmt.Errorf("--cluster-proxy-url must be https://HOST[:PORT][/PATH], got %q", u)
		}
	}
	f.managedKubeconfig = map[string]string{}
	for _, m := range f.managed {
		cluster, path, ok := strings.Cut(m, "=")
		if !ok || path == "" {
			return fmt.Errorf("--managed-kubeconfig must be CLUSTER=PATH, got %q", m)
		}
		if errs := validation.IsDNS1123Label(cluster); len(errs) > 0 {
			return fmt.Errorf("--managed-kubeconfig %q: %q is not a cluster name: %s", m, cluster, strings.Join(errs, "; "))
		}
		if _, dup := f.managedKubeconfig[cluster]; dup {
			return fmt.Errorf("--managed-kubeconfig: cluster %s given twice", cluster)
		}
		f.managedKubeconfig[cluster] = path
	}
	return nil
}

// requestTimeout bounds each request, so that an unreachable cluster fails its checks instead of
// using up --timeout. The client-side limits leave room for the few hundred short requests a run
// makes (client-go's 5/s would make a run with many namespaces wait for its own limiter).
const (
	requestTimeout = 15 * time.Second
	doctorQPS      = 50
	doctorBurst    = 100
)

func runDoctor(cmd *cobra.Command, f *doctorFlags) error {
	s, err := scheme.New()
	if err != nil {
		return err
	}
	cfg, ns, err := hubConfig(f.kubeconfig, f.opts.ArgoCDNamespace)
	if err != nil {
		return err
	}
	cfg.Timeout, cfg.QPS, cfg.Burst = requestTimeout, doctorQPS, doctorBurst
	opts := f.opts
	opts.ArgoCDNamespace = ns
	if opts.Hub, err = doctor.NewCluster("hub", cfg, s); err != nil {
		return err
	}
	for _, m := range f.managed {
		name, _, _ := strings.Cut(m, "=")
		mcfg, err := restConfig(f.managedKubeconfig[name])
		if err != nil {
			return fmt.Errorf("managed cluster %s: %w", name, err)
		}
		mcfg.Timeout, mcfg.QPS, mcfg.Burst = requestTimeout, doctorQPS, doctorBurst
		c, err := doctor.NewCluster(name, mcfg, s)
		if err != nil {
			return err
		}
		opts.Managed = append(opts.Managed, c)
	}

	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	report := doctor.Run(ctx, opts)
	out := cmd.OutOrStdout()
	if f.output == "json" {
		err = doctor.WriteJSON(out, report)
	} else {
		err = doctor.WriteText(out, report, isTerminal(out))
	}
	if err != nil {
		return err
	}
	return report.Err()
}
