package clusteraccess

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The OCM add-ons the channel is made of, by the names of their ManagedClusterAddOns.
const (
	ClusterProxyAddOn          = "cluster-proxy"
	ManagedServiceAccountAddOn = "managed-serviceaccount"
)

// DefaultServiceAccountNamespace is where managed-serviceaccount's agent creates the accounts on a
// cluster when its ManagedClusterAddOn names no install namespace.
const DefaultServiceAccountNamespace = "open-cluster-management-agent-addon"

// Reasons a cluster's secret stays credential-free although its GitOpsCluster asks for the
// channel (besides the token's, in token.go).
const (
	// ReasonChannelNotConfigured: the install names no cluster-proxy user server.
	ReasonChannelNotConfigured = "ChannelNotConfigured"
	// ReasonAccountNotAllowed: the install may not read the tokens of an account of that name.
	ReasonAccountNotAllowed = "AccountNotAllowed"
	// ReasonAddOnMissing: the cluster lacks an add-on of the channel, or it is not available.
	ReasonAddOnMissing = "AddOnMissing"
	// ReasonAccountNotOurs: a ManagedServiceAccount of that name exists that argocd-pull did not
	// create: a tenant's, or another tool's. It is left alone.
	ReasonAccountNotOurs = "AccountNotOurs"
	// ReasonAccountInUse: argocd-pull made the ManagedServiceAccount of that name for another
	// GitOpsCluster. It is left to that one.
	ReasonAccountInUse = "AccountInUse"
)

// AccountOwnerAnnotation on a ManagedServiceAccount argocd-pull made is "<namespace>/<name>" of the
// GitOpsCluster it was made for: the only one whose secrets carry its token.
const AccountOwnerAnnotation = "apps.open-cluster-management.io/cluster-access-gitopscluster"

// Channel is the hub's way to its clusters through cluster-proxy: the URL of its user server
// (https://cluster-proxy-addon-user.<namespace>.svc:9092 in a hub) and the PEM bundle that
// verifies it, as the install names them, and the names of the ManagedServiceAccounts whose
// tokens the install lets argocd-pull read. A Channel with no URL is not set up.
type Channel struct {
	URL      string
	CA       []byte
	Accounts []string
	// Recheck is how often the tokens are read again at most (DefaultRecheck when 0).
	Recheck time.Duration
}

// DefaultRecheck is how often a cluster's token is read again, at most: a rotated token reaches
// its cluster secret within this.
const DefaultRecheck = 5 * time.Minute

// Configured reports whether the install set up the channel.
func (c Channel) Configured() bool { return c.URL != "" }

// Server is a cluster's address on the channel: the user server's URL and the cluster's name,
// both the hub's. Nothing a cluster writes goes into it.
func (c Channel) Server(cluster string) string {
	return strings.TrimSuffix(c.URL, "/") + "/" + url.PathEscape(cluster)
}

// Facts are what the hub knows of one cluster's channel, gathered for DecideAccess.
type Facts struct {
	// AddOns are the cluster's ManagedClusterAddOns of the channel, by name: true when Available.
	AddOns map[string]bool
	// Account is the cluster's ManagedServiceAccount of the GitOpsCluster's name (nil: none);
	// Ours says argocd-pull created it.
	Account *Account
	Ours    bool
	// OtherOwner is the GitOpsCluster argocd-pull made the account for, when that is not the one
	// asking ("": the asking one's, or not recorded).
	OtherOwner string
	// TokenSecret is the Secret of that name in the cluster's namespace (nil: none).
	TokenSecret *corev1.Secret
}

// Access is the decision on one cluster's secret.
type Access struct {
	// CreateAccount: argocd-pull creates the ManagedServiceAccount (there is none yet).
	CreateAccount bool
	// GrantRights: argocd-pull delivers the account's read-only rights to the cluster (the
	// account is argocd-pull's).
	GrantRights bool
	// Token, when its Value is set, goes into the cluster's secret with Server; otherwise the
	// secret stays credential-free and Refusal says why.
	Token   Token
	Server  string
	Refusal Refusal
}

// UsesChannel reports whether the cluster's secret carries the channel's address and token.
func (a Access) UsesChannel() bool { return a.Token.Value != "" }

// DecideAccess decides how the hub reaches cluster for a GitOpsCluster whose
// spec.managedServiceAccountRef is account ("": it asks for nothing, and the secret is
// credential-free as before). Any refusal leaves the secret credential-free: delivery and status
// go on without the channel.
func DecideAccess(ch Channel, cluster, account string, f Facts, now time.Time) Access {
	if account == "" {
		return Access{}
	}
	name := cluster + "/" + account
	switch {
	case !ch.Configured():
		return Access{Refusal: Refusal{ReasonChannelNotConfigured, fmt.Sprintf(
			"managedServiceAccountRef %s: the install names no cluster-proxy user server (--cluster-proxy-url), so the hub has no way to the clusters: the secrets stay credential-free", account)}}
	case !slices.Contains(ch.Accounts, account):
		return Access{Refusal: Refusal{ReasonAccountNotAllowed, fmt.Sprintf(
			"managedServiceAccountRef %s: the install lets argocd-pull read the tokens of ManagedServiceAccounts named %s only (--managed-serviceaccounts): the secrets stay credential-free", account, strings.Join(ch.Accounts, ", "))}}
	}
	if f.Account != nil && !f.Ours {
		return Access{Refusal: Refusal{ReasonAccountNotOurs, fmt.Sprintf(
			"the ManagedServiceAccount %s was not created by argocd-pull: it is left alone, and %s's secret stays credential-free", name, cluster)}}
	}
	if f.Account != nil && f.OtherOwner != "" {
		return Access{Refusal: Refusal{ReasonAccountInUse, fmt.Sprintf(
			"the ManagedServiceAccount %s is GitOpsCluster %s's: it is left alone, and %s's secret stays credential-free (name another account in managedServiceAccountRef)", name, f.OtherOwner, cluster)}}
	}
	var missing []string
	for _, addOn := range []string{ClusterProxyAddOn, ManagedServiceAccountAddOn} {
		if !f.AddOns[addOn] {
			missing = append(missing, addOn)
		}
	}
	// The account can be made (and its rights delivered) only where managed-serviceaccount runs.
	a := Access{CreateAccount: f.Account == nil && f.AddOns[ManagedServiceAccountAddOn], GrantRights: f.Account != nil}
	if len(missing) > 0 {
		a.Refusal = Refusal{ReasonAddOnMissing, fmt.Sprintf(
			"%s has no available ManagedClusterAddOn %s: its secret stays credential-free", cluster, strings.Join(missing, ", "))}
		return a
	}
	if f.Account == nil {
		a.Refusal = Refusal{ReasonTokenMissing, fmt.Sprintf("the ManagedServiceAccount %s is being created: its token follows", name)}
		return a
	}
	a.Token, a.Refusal = DecideToken(f.TokenSecret, *f.Account, now)
	if a.UsesChannel() {
		a.Server = ch.Server(cluster)
	}
	return a
}

// clusterConfig is the "config" of an Argo CD cluster secret, as Argo CD reads it
// (ClusterConfig): a bearer token, and the CA that verifies the server ([]byte: base64 in JSON).
type clusterConfig struct {
	BearerToken     string          `json:"bearerToken"`
	TLSClientConfig tlsClientConfig `json:"tlsClientConfig"`
}

type tlsClientConfig struct {
	Insecure bool   `json:"insecure"`
	CAData   []byte `json:"caData,omitempty"`
}

// ClusterConfig is the "config" of the cluster secret of an Access that uses the channel.
func ClusterConfig(ch Channel, token Token) string {
	raw, _ := json.Marshal(clusterConfig{BearerToken: token.Value, TLSClientConfig: tlsClientConfig{CAData: ch.CA}}) // strings and bytes only: no error
	return string(raw)
}

// RecheckAfter is when to read a cluster's token again, at most every: its Secret is not
// watched (argocd-pull may read it by name only), and managed-serviceaccount rotates it before it
// expires. A token on its way (the account was just made) is looked for sooner.
func RecheckAfter(a Access, every time.Duration, now time.Time) time.Duration {
	switch {
	case a.Refusal.Reason == ReasonTokenMissing:
		return min(every, 10*time.Second)
	case !a.UsesChannel():
		return every
	}
	return min(every, max(a.Token.Expires.Sub(now)/2, time.Second))
}

// Validate reports a channel the controller cannot use: a URL that is not https with a host and
// no query, no CA to verify it, or an account name that is not a ServiceAccount's.
func (c Channel) Validate() error {
	for _, a := range c.Accounts {
		if errs := validation.IsDNS1123Subdomain(a); len(errs) > 0 {
			return fmt.Errorf("--managed-serviceaccounts: %q is not a ManagedServiceAccount name: %s", a, strings.Join(errs, "; "))
		}
	}
	if !c.Configured() {
		return nil
	}
	u, err := url.Parse(c.URL)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("--cluster-proxy-url %q: want cluster-proxy's user server as https://host:port, such as https://cluster-proxy-addon-user.open-cluster-management-addon.svc:9092", c.URL)
	}
	if len(c.CA) == 0 {
		return fmt.Errorf("--cluster-proxy-url needs --cluster-proxy-ca-file, the CA that verifies cluster-proxy's user server (Argo CD verifies it with that CA)")
	}
	return nil
}

// Grant is one account argocd-pull made on one cluster: its ManagedServiceAccount and the work of
// its rights, both in the cluster's namespace.
type Grant struct{ Cluster, Account string }

// Unasked are the grants of made (what argocd-pull made for one GitOpsCluster) that it no longer
// asks for: those not in asked (the account it names, on each cluster it selects; nothing once it
// is deleted). Their account and rights go, and the cluster's token with them. Each once.
func Unasked(made, asked []Grant) []Grant {
	var out []Grant
	for _, g := range made {
		if !slices.Contains(asked, g) && !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}
