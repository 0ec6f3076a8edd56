package cli

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/propagation"
	"github.com/argocd-pull/argocd-pull/internal/tenancy"
)

// policyFlags are the controller's rules that doctor and takeover apply as the controller does:
// its --argocd-namespace, --pull-namespaces and --grant-managed-namespaces.
type policyFlags struct {
	argoCDNamespace string
	pullNamespaces  []string
	grants          []string
}

func (p *policyFlags) add(fs *pflag.FlagSet) {
	fs.StringVarP(&p.argoCDNamespace, "argocd-namespace", "n", "", "Namespace of the hub's Argo CD (default: the kubeconfig context's namespace, else "+api.DefaultArgoCDNamespace+")")
	fs.StringSliceVar(&p.pullNamespaces, "pull-namespaces", nil, "As the controller's flag: namespaces pull-model Applications are taken from (default: the Argo CD namespace); the Applications' rules are checked as such a controller applies them")
	fs.StringArrayVar(&p.grants, "grant-managed-namespaces", nil, "As the controller's flag: NS=NS1[,NS2...], managed-cluster namespaces granted to hub namespace NS; repeatable")
}

// policy is the ladder's policy the flags give; its ArgoCDNamespace is "" without the flag (see
// hubConfig, which picks the kubeconfig context's).
func (p *policyFlags) policy() (propagation.Policy, error) {
	grants, err := tenancy.ParseGrants(p.grants)
	if err != nil {
		return propagation.Policy{}, fmt.Errorf("--grant-managed-namespaces: %w", err)
	}
	return propagation.Policy{ArgoCDNamespace: p.argoCDNamespace, PullNamespaces: p.pullNamespaces, ManagedNamespaces: grants}, nil
}
