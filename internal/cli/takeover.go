package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/internal/propagation"
	"github.com/argocd-pull/argocd-pull/internal/scheme"
	"github.com/argocd-pull/argocd-pull/internal/takeover"
)

type takeoverFlags struct {
	kubeconfig, output string
	dryRun             bool
	rules              policyFlags
	policy             propagation.Policy
}

func newTakeoverCommand() *cobra.Command {
	f := takeoverFlags{}
	cmd := &cobra.Command{
		Use:   "takeover --dry-run",
		Short: "List what the controller does with the ManifestWorks of RHACM's or OCM's pull controller, and what blocks it",
		Long: `List every ManifestWork that RHACM's (multicloud-integrations) or OCM's (argocd-pull-integration,
basic mode) pull controller wrote on the hub, per cluster and Application, and what the controller
does with it when it runs with --adopt-upstream-works: adopt (it writes its own work, then
releases and deletes this one; nothing on the managed cluster is deleted or recreated), adopting
(under way, with the next step), blocked (the Application is refused, with the reason and what to
do; the work is left as it is) or left (no pull-model hub Application is behind it).

The controller does the takeover; this command only reads, with the rules the controller applies:
give it the controller's --argocd-namespace, --pull-namespaces and --grant-managed-namespaces. It
does not check whether the other controller still runs: stop it first (docs/migration.md).`,
		Example: `  # RHACM's hub, Applications in openshift-gitops
  argocd-pull takeover --dry-run -n openshift-gitops

  # As JSON, with a tenant namespace the controller takes Applications from too
  argocd-pull takeover --dry-run -n argocd --pull-namespaces argocd,team-web -o json`,
		Args: cobra.NoArgs,
		PreRunE: func(*cobra.Command, []string) error {
			if !f.dryRun {
				return fmt.Errorf("takeover only lists what the controller does (run it with --adopt-upstream-works to take over): give --dry-run")
			}
			if f.output != "text" && f.output != "json" {
				return fmt.Errorf("--output must be text or json, got %q", f.output)
			}
			var err error
			f.policy, err = f.rules.policy()
			return err
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := scheme.New()
			if err != nil {
				return err
			}
			cfg, ns, err := hubConfig(f.kubeconfig, f.policy.ArgoCDNamespace)
			if err != nil {
				return err
			}
			f.policy.ArgoCDNamespace = ns
			cfg.Timeout = requestTimeout
			c, err := client.New(cfg, client.Options{Scheme: s})
			if err != nil {
				return err
			}
			entries, err := takeover.List(cmd.Context(), c, f.policy)
			if err != nil {
				return err
			}
			return printTakeover(cmd.OutOrStdout(), entries, f.output)
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&f.dryRun, "dry-run", false, "List only (required: the controller takes over, with --adopt-upstream-works)")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "Path to the hub kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster config)")
	f.rules.add(fs)
	fs.StringVarP(&f.output, "output", "o", "text", "Output format: text or json")
	return cmd
}

// printTakeover writes the entries as a table (a summary line last) or as JSON.
func printTakeover(out io.Writer, entries []takeover.Entry, output string) error {
	if output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(entries)
	}
	if len(entries) == 0 {
		_, err := fmt.Fprintln(out, "No ManifestWork of RHACM's or OCM's pull controller on this hub: nothing to take over.")
		return err
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "CLUSTER\tAPPLICATION\tMANIFESTWORK\tWRITER\tPLAN\tDETAIL")
	counts := map[string]int{}
	for _, e := range entries {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", e.Cluster, e.Application, e.Work, e.Writer, e.Plan, e.Detail)
		counts[e.Plan]++
	}
	if err := w.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(out, "\n%d upstream ManifestWorks: %d to adopt, %d adopting, %d blocked, %d left\n", len(entries),
		counts[takeover.PlanAdopt], counts[takeover.PlanAdopting], counts[takeover.PlanBlocked], counts[takeover.PlanLeft])
	return err
}
