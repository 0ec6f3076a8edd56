package doctor

// The decision of the cluster-access check: a pure function from what was read of one cluster's
// channel (its secret, its add-ons, the cluster's answer through cluster-proxy) to a Result.

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/argocd-pull/argocd-pull/internal/clusteraccess"
)

const (
	idClusterAccess    = "cluster-access"
	titleClusterAccess = "OCM's channel to each cluster (managedServiceAccountRef)"
)

// channelFacts are what doctor read of one cluster whose argocd-pull cluster secret carries OCM's
// channel, or says why it does not.
type channelFacts struct {
	Cluster string
	// Refused is the secret's cluster-access-refused annotation: the controller left it
	// credential-free, and why.
	Refused string
	// Server is the secret's server; Reached is the address doctor asked (--cluster-proxy-url).
	Server, Reached string
	// Expiry is the token's (zero: none in its claims); TokenErr says it could not be read.
	Expiry   time.Time
	TokenErr error
	// AddOns are the cluster's ManagedClusterAddOns of the channel: true when Available.
	AddOns   map[string]bool
	AddOnErr error
	// Rules and Incomplete are the cluster's answer to a SelfSubjectRulesReview asked with the
	// secret's token through cluster-proxy, in Namespace; ProbeErr is why there is none.
	Namespace  string
	Rules      []authorizationv1.ResourceRule
	Incomplete bool
	ProbeErr   error
	// Others are the answers for the cluster's other namespaces (a RoleBinding in one gives rights
	// the Argo CD namespace's answer does not show); Unreviewed counts those not asked (beyond
	// maxReviewedNamespaces, or after NamespacesErr).
	Others        map[string][]authorizationv1.ResourceRule
	Unreviewed    int
	NamespacesErr error
}

// decideClusterAccess judges one cluster's channel. It fails when the hub's Argo CD cannot use it
// (an add-on down, the token expired or refused, the tunnel down) and when the cluster lets the
// token do more than read (any write verb, Secrets' contents, exec and the like); it warns when
// the controller left the secret credential-free, and when a read Argo CD's views make is refused.
func decideClusterAccess(f channelFacts, now time.Time) Result {
	var fs []finding
	if f.Refused != "" {
		reason, msg, _ := strings.Cut(f.Refused, ": ")
		return combine(idClusterAccess, titleClusterAccess, f.Cluster, "", []finding{{StatusWarn,
			"the secret is credential-free (" + reason + "): " + msg,
			"docs/cluster-access.md, 'When a cluster's secret stays credential-free', says what each reason needs; the GitOpsCluster's ClusterAccess condition names the clusters"}})
	}
	switch {
	case f.AddOnErr != nil:
		fs = append(fs, finding{StatusFail, fmt.Sprintf("reading its ManagedClusterAddOns: %v", f.AddOnErr), ""})
	default:
		for _, a := range []string{clusteraccess.ClusterProxyAddOn, clusteraccess.ManagedServiceAccountAddOn} {
			if !f.AddOns[a] {
				fs = append(fs, finding{StatusFail, "its ManagedClusterAddOn " + a + " is not Available",
					"check the add-on's agent on " + f.Cluster + " (kubectl get managedclusteraddon -n " + f.Cluster + " " + a + " -o yaml)"})
			}
		}
	}
	expires := ""
	switch {
	case f.TokenErr != nil:
		fs = append(fs, finding{StatusFail, fmt.Sprintf("the secret's token: %v", f.TokenErr), "the controller rewrites the secret: check its log for " + f.Cluster})
	case !f.Expiry.IsZero() && !now.Before(f.Expiry):
		fs = append(fs, finding{StatusFail, fmt.Sprintf("the token expired %s ago", now.Sub(f.Expiry).Round(time.Second)),
			"managed-serviceaccount's agent on " + f.Cluster + " stopped rotating it, or the controller stopped reading it: check both"})
	case !f.Expiry.IsZero():
		expires = fmt.Sprintf(", token expires in %s", f.Expiry.Sub(now).Round(time.Minute))
	}
	where := "through cluster-proxy at " + f.Reached
	switch {
	case f.ProbeErr != nil:
		fs = append(fs, finding{StatusFail, fmt.Sprintf("asking %s what the token may do %s: %v", f.Cluster, where, f.ProbeErr),
			"check the cluster's cluster-proxy agent and that the token is its account's; doctor reaches the user server from where it runs: port-forward it and pass --cluster-proxy-url"})
	default:
		for _, b := range beyondReadOnly(f) {
			fs = append(fs, finding{StatusFail, fmt.Sprintf("in %s the token may %s: more than read-only", b.where, b.what),
				"on " + f.Cluster + ", remove what binds the account to more than its ClusterRole argocd-pull:read-only:<account> (kubectl get clusterrolebindings,rolebindings -A -o wide | grep <account>)"})
		}
		if f.NamespacesErr != nil {
			fs = append(fs, finding{StatusWarn, fmt.Sprintf("asking what the token may do in the cluster's other namespaces: %v: a RoleBinding there could give it more than read-only", f.NamespacesErr),
				"kubectl get rolebindings -A -o wide | grep <account> on " + f.Cluster})
		}
		var missing []string
		for _, n := range clusteraccess.ViewsNeed {
			if !clusteraccess.Allows(f.Rules, n.Verb, n.Group, n.Resource) {
				missing = append(missing, n.Verb+" "+strings.TrimSuffix(n.Resource+"."+n.Group, "."))
			}
		}
		if len(missing) > 0 {
			fs = append(fs, finding{StatusWarn, fmt.Sprintf("in namespace %s the token may not %s, which Argo CD's views read", f.Namespace, strings.Join(missing, ", ")),
				"the account's rights come in the ManifestWork argocd-pull-access-<account> in " + f.Cluster + ": check that it is applied"})
		}
		if f.Incomplete && len(fs) == 0 {
			fs = append(fs, finding{StatusWarn, "the cluster's answer is incomplete (an authorizer besides RBAC): the rights above are RBAC's only", ""})
		}
	}
	asked := fmt.Sprintf(" in %d namespaces", 1+len(f.Others))
	if f.Unreviewed > 0 && f.NamespacesErr == nil {
		asked += fmt.Sprintf(" (%d more not asked: at most %d besides %s)", f.Unreviewed, maxReviewedNamespaces, f.Namespace)
	}
	return combine(idClusterAccess, titleClusterAccess, f.Cluster,
		"reached "+where+" with the secret's token, read-only"+asked+expires, fs)
}

// beyond is what the token may do past read-only (what), in one or more namespaces (where).
type beyond struct{ where, what string }

// beyondReadOnly groups the namespaces asked, the Argo CD one first, by what the token may do in
// them past read-only (a ClusterRoleBinding shows in all of them alike, a RoleBinding in one).
func beyondReadOnly(f channelFacts) []beyond {
	byWhat := map[string][]string{}
	var order []string
	add := func(ns string, rules []authorizationv1.ResourceRule) {
		b := clusteraccess.BeyondReadOnly(rules)
		if len(b) == 0 {
			return
		}
		what := limitList(b, 8)
		if _, ok := byWhat[what]; !ok {
			order = append(order, what)
		}
		byWhat[what] = append(byWhat[what], ns)
	}
	add(f.Namespace, f.Rules)
	others := slices.Sorted(maps.Keys(f.Others))
	for _, ns := range others {
		add(ns, f.Others[ns])
	}
	out := make([]beyond, 0, len(order))
	for _, what := range order {
		where := "namespace " + byWhat[what][0]
		if n := byWhat[what]; len(n) > 1 {
			where = "namespaces " + limitList(n, 5)
		}
		out = append(out, beyond{where, what})
	}
	return out
}

// limitList joins at most n items, and says how many more there are.
func limitList(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(" and %d more", len(items)-n)
}
