package doctor

import (
	"context"
	"fmt"
	"strings"

	"github.com/argocd-pull/argocd-pull/internal/hubapis"
)

// check is one entry of the table of checks: what it looks at (for --help, the docs and the
// report), what it needs the cluster to serve, and how it runs. The table is the one list of
// checks: Run runs it, Help renders it for `argocd-pull doctor --help` (and so docs/cli.md).
type check struct {
	id, title string
	// help says what passes, for --help.
	help string
	// needs is a resource ("<plural>.<group>") the cluster must serve, and needsWhat its name for
	// people; without it the check has nothing to look at and is skipped.
	needs, needsWhat string
	hub              func(ctx context.Context, h *hub) []Result
	spoke            func(ctx context.Context, s *spoke) []Result
}

// checks are run in this order: the hub's, then each managed cluster's.
var checks = []check{
	{id: hubapis.OCM.ID, title: hubapis.OCM.Title, hub: checkOCMAPIs,
		help: "OCM APIs served (ManagedCluster, ManagedClusterSet(Binding), Placement, PlacementDecision, ManifestWork)"},
	{id: hubapis.ArgoCD.ID, title: hubapis.ArgoCD.Title, hub: checkArgoCDAPIs,
		help: "Argo CD APIs served (Application, ApplicationSet, AppProject)"},
	{id: hubapis.Pull.ID, title: hubapis.Pull.Title, hub: checkPullAPIs,
		help: "argocd-pull APIs served (MulticlusterApplicationSetReport, GitOpsCluster)"},
	{id: idAppSet, title: titleAppSet, hub: checkApplicationSets,
		needs: "applicationsets.argoproj.io", needsWhat: "ApplicationSets",
		help: `each pull-model ApplicationSet's template: pull label "true", cluster annotation ('{{name}}'), skip-reconcile "true", and a destination naming the cluster (name: '{{name}}'); the documents' in-cluster server is flagged (on the hub it is the hub), and so is a template with the cluster annotation but no pull label`},
	{id: idGenerator, title: titleGenerator, hub: checkPlacementGenerators,
		needs: "applicationsets.argoproj.io", needsWhat: "ApplicationSets",
		help: "the clusterDecisionResource generator's ConfigMap (ocm-placement-generator) exists with the documents' data"},
	{id: idDecisions, title: titleDecisions, hub: checkPlacementDecisions,
		needs: "placementdecisions.cluster.open-cluster-management.io", needsWhat: "PlacementDecisions",
		help: "the generator's PlacementDecisions select clusters"},
	{id: idAppRules, title: titleAppRules, hub: checkApplicationRules,
		needs: "applications.argoproj.io", needsWhat: "Applications",
		help: "every pull-model Application of the --pull-namespaces passes the rules this release's controller delivers by (allowed namespace, bound cluster, where it lands, its AppProject's sourceNamespaces); run it before an upgrade with the controller's --pull-namespaces and --grant-managed-namespaces: an Application refused here is refused, and its work frozen, by the new controller"},
	{id: idSecrets, title: titleSecrets, hub: checkClusterSecrets,
		help: "every targeted cluster has an Argo CD cluster secret in the Argo CD namespace"},
	{id: idNamespaces, title: titleNamespaces, hub: checkClusterNamespaces,
		help: "every targeted cluster has its namespace on the hub"},
	{id: idClusters, title: titleClusters, hub: checkManagedClusters,
		needs: "managedclusters.cluster.open-cluster-management.io", needsWhat: "ManagedClusters",
		help: "every targeted cluster has a ManagedCluster that is Available"},
	{id: idClientConfigs, title: titleClientConfigs, hub: checkClientConfigs,
		needs: "managedclusters.cluster.open-cluster-management.io", needsWhat: "ManagedClusters",
		help: "no ManagedCluster's client config URL names the hub (kubernetes.default.svc, the hub apiserver's addresses, loopback or link-local): a cluster's agent may write its own, and argocd-pull's cluster secrets never carry it; a warning names the cluster"},
	{id: idSetLabels, title: titleSetLabels, hub: checkClusterSetLabels,
		needs: "managedclustersetbindings.cluster.open-cluster-management.io", needsWhat: "ManagedClusterSetBindings",
		help: "no ManagedClusterSet bound in a namespace Applications are taken from (--pull-namespaces) selects clusters by a label other than cluster.open-cluster-management.io/clusterset: a cluster's agent may set any other label on its own ManagedCluster, and so make itself a member; a warning names the set, the namespace and the selector"},
	{id: idClusterAccess, title: titleClusterAccess, hub: checkClusterAccess,
		help: "each cluster whose argocd-pull secret carries OCM's channel (a GitOpsCluster's managedServiceAccountRef): its cluster-proxy and managed-serviceaccount add-ons are Available, its token has not expired, and the cluster, asked through cluster-proxy with exactly the secret's server, token and CA (a SelfSubjectRulesReview in --managed-argocd-namespace and in each of its other namespaces, the first 100 by name), lets the token read what Argo CD's views read and nothing more: any write verb, Secrets, exec, attach, port-forward, a proxy or a token fails; a secret the controller left credential-free warns with its reason; --cluster-proxy-url reaches the user server from where doctor runs"},
	{id: idResourceTree, title: titleResourceTree, hub: checkResourceTree,
		needs: "applications.argoproj.io", needsWhat: "Applications",
		help: "the controller wrote every pull-model Application's resource tree (its events); with --argocd-redis, doctor connects with the argocd-redis Secret's password, and checks that the hub's Argo CD writes the cache version argocd-pull writes and that each pull-model Application has its tree"},
	{id: idCredentials, title: titleCredentials, hub: checkRepositoryCredentials,
		needs: "applications.argoproj.io", needsWhat: "Applications",
		help: "each pull-model Application whose repository has a credential in the Argo CD namespace (argocd repo add, argocd repocreds add) gets it on its cluster: the credential Argo CD would use is opted in (apps.open-cluster-management.io/pull-credentials) and admits the Application (its project, or none for the Argo CD namespace's own Applications); an opted-in Secret the controller refuses is named too. A warning names each Application and credential (never a value)"},
	{id: idAppCRD, title: titleAppCRD, spoke: checkApplicationCRD,
		help: "Argo CD's Application API is served"},
	{id: idArgoCDVersion, title: titleArgoCDVersion, spoke: checkArgoCDVersion,
		needs: "applications.argoproj.io", needsWhat: "Applications",
		help: "the managed cluster's Argo CD is a supported release (by its application controller's image tag) and its Application CRD declares every status field argocd-pull reads"},
	{id: idControllerRBAC, title: titleControllerRBAC, spoke: checkControllerAccess,
		help: "the Argo CD application controller may create deployments, services and configmaps cluster-wide, or in each destination namespace"},
	{id: idWorkAgentRBAC, title: titleWorkAgentRBAC, spoke: checkWorkAgentAccess,
		help: "the OCM work agent may manage Applications in their namespace"},
	{id: idAppNamespace, title: titleAppNamespace, spoke: checkAppNamespaces,
		help: "the Applications' namespace exists (and is where Argo CD runs)"},
}

// runHub runs a hub check, first answering once for every check what makes it pointless to look:
// a hub that did not answer API discovery (a read failure, never a skip), or that does not serve
// what the check needs.
func runHub(ctx context.Context, h *hub, c check) []Result {
	served, err := h.servedAPIs()
	if err != nil {
		return []Result{readFailed(c.id, c.title, "", fmt.Errorf("the hub did not answer API discovery: %w", err))}
	}
	if c.needs != "" && !served[c.needs] {
		return []Result{skipped(c.id, c.title, "", "the hub does not serve "+c.needsWhat)}
	}
	return c.hub(ctx, h)
}

// runSpoke runs a managed-cluster check, with the same guard as runHub.
func runSpoke(ctx context.Context, s *spoke, c check) []Result {
	served, err := s.servedAPIs()
	if err != nil {
		return []Result{readFailed(c.id, c.title, s.cluster.Name, fmt.Errorf("the cluster did not answer API discovery: %w", err))}
	}
	if c.needs != "" && !served[c.needs] {
		return []Result{skipped(c.id, c.title, s.cluster.Name, "the cluster does not serve "+c.needsWhat)}
	}
	return c.spoke(ctx, s)
}

// Help lists the checks for `argocd-pull doctor --help`: the hub's, then the managed clusters'.
func Help() string {
	var b strings.Builder
	section := func(title string, spoke bool) {
		b.WriteString(title + "\n")
		for _, c := range checks {
			if (c.spoke != nil) != spoke {
				continue
			}
			lines := wrap(c.help, 70)
			for i, l := range lines {
				name := ""
				if i == 0 {
					name = c.id
				}
				fmt.Fprintf(&b, "  %-23s  %s\n", name, l)
			}
		}
	}
	section("Hub:", false)
	section("Managed cluster (per --managed-kubeconfig NAME=PATH):", true)
	return strings.TrimRight(b.String(), "\n")
}

// wrap cuts text into lines of at most width characters, at spaces.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return append(lines, line)
}
