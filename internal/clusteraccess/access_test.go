package clusteraccess

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

var channel = Channel{URL: "https://cluster-proxy-addon-user.open-cluster-management-addon.svc:9092/", CA: []byte("-----BEGIN CERTIFICATE-----\nCA\n"), Accounts: []string{"argocd-pull"}}

func TestDecideAccess(t *testing.T) {
	good := jwt(t, map[string]any{"sub": account.Username(), "exp": now.Add(time.Hour).Unix()})
	both := map[string]bool{ClusterProxyAddOn: true, ManagedServiceAccountAddOn: true}
	ready := Facts{AddOns: both, Account: &account, Ours: true, TokenSecret: tokenSecret(good)}

	a := DecideAccess(channel, "cluster1", "argocd-pull", ready, now)
	if !a.UsesChannel() || a.Refusal.Refused() || !a.GrantRights || a.CreateAccount {
		t.Fatalf("a cluster with both add-ons and argocd-pull's account and token: %+v; want the channel, its rights granted", a)
	}
	if want := "https://cluster-proxy-addon-user.open-cluster-management-addon.svc:9092/cluster1"; a.Server != want {
		t.Errorf("server %q, want %q: the user server's URL and the cluster's name", a.Server, want)
	}

	if a := DecideAccess(Channel{}, "cluster1", "", ready, now); a != (Access{}) {
		t.Errorf("without managedServiceAccountRef: %+v, want nothing asked (credential-free, no condition)", a)
	}
	for name, c := range map[string]struct {
		ch              Channel
		account         string
		facts           Facts
		reason          string
		create, rights  bool
		messageContains string
	}{
		"no channel in the install":            {Channel{}, "argocd-pull", ready, ReasonChannelNotConfigured, false, false, "--cluster-proxy-url"},
		"an account the install does not name": {channel, "application-manager", ready, ReasonAccountNotAllowed, false, false, "named argocd-pull only"},
		"a tenant's account of that name": {channel, "argocd-pull", Facts{AddOns: both, Account: &account, Ours: false, TokenSecret: tokenSecret(good)},
			ReasonAccountNotOurs, false, false, "not created by argocd-pull"},
		"another GitOpsCluster's account": {channel, "argocd-pull", Facts{AddOns: both, Account: &account, Ours: true, OtherOwner: "openshift-gitops/platform", TokenSecret: tokenSecret(good)},
			ReasonAccountInUse, false, false, "is GitOpsCluster openshift-gitops/platform's"},
		"no cluster-proxy": {channel, "argocd-pull", Facts{AddOns: map[string]bool{ManagedServiceAccountAddOn: true}, Account: &account, Ours: true, TokenSecret: tokenSecret(good)},
			ReasonAddOnMissing, false, true, "no available ManagedClusterAddOn cluster-proxy:"},
		"no add-on at all": {channel, "argocd-pull", Facts{}, ReasonAddOnMissing, false, false, "cluster-proxy, managed-serviceaccount"},
		"cluster-proxy unavailable, no account yet": {channel, "argocd-pull", Facts{AddOns: map[string]bool{ClusterProxyAddOn: false, ManagedServiceAccountAddOn: true}},
			ReasonAddOnMissing, true, false, "cluster-proxy"},
		"no account yet":  {channel, "argocd-pull", Facts{AddOns: both}, ReasonTokenMissing, true, false, "being created"},
		"no token yet":    {channel, "argocd-pull", Facts{AddOns: both, Account: &account, Ours: true}, ReasonTokenMissing, false, true, "no token Secret"},
		"another's token": {channel, "argocd-pull", Facts{AddOns: both, Account: &account, Ours: true, TokenSecret: tokenSecret(jwt(t, map[string]any{"sub": "system:serviceaccount:kube-system:admin", "exp": now.Add(time.Hour).Unix()}))}, ReasonTokenRefused, false, true, "not system:serviceaccount"},
	} {
		t.Run(name, func(t *testing.T) {
			a := DecideAccess(c.ch, "cluster1", c.account, c.facts, now)
			if a.UsesChannel() || a.Server != "" || a.Refusal.Reason != c.reason || !strings.Contains(a.Refusal.Message, c.messageContains) {
				t.Errorf("got %+v; want credential-free, %s saying %q", a, c.reason, c.messageContains)
			}
			if a.CreateAccount != c.create || a.GrantRights != c.rights {
				t.Errorf("create the account %v, grant its rights %v; want %v, %v", a.CreateAccount, a.GrantRights, c.create, c.rights)
			}
		})
	}
}

func TestChannelServerIsTheHubsOnly(t *testing.T) {
	// A ManagedCluster's name is the hub's (its namespace); even an odd one stays in the path.
	if got := channel.Server("a/../../b?x#y"); !strings.HasPrefix(got, "https://cluster-proxy-addon-user.open-cluster-management-addon.svc:9092/") || strings.ContainsAny(got[len("https://"):], "?#") || strings.Count(got, "/") != 3 {
		t.Errorf("Server of an odd name: %q, want one path segment under the user server", got)
	}
}

func TestClusterConfigIsArgoCDs(t *testing.T) {
	var got struct {
		BearerToken     string `json:"bearerToken"`
		TLSClientConfig struct {
			Insecure bool   `json:"insecure"`
			CAData   []byte `json:"caData"`
		} `json:"tlsClientConfig"`
	}
	if err := json.Unmarshal([]byte(ClusterConfig(channel, Token{Value: "a.b.c"})), &got); err != nil {
		t.Fatal(err)
	}
	if got.BearerToken != "a.b.c" || got.TLSClientConfig.Insecure || string(got.TLSClientConfig.CAData) != string(channel.CA) {
		t.Errorf("config %+v: want the token, and the channel's CA verifying the server", got)
	}
}

func TestRecheckAfter(t *testing.T) {
	for _, c := range []struct {
		access Access
		want   time.Duration
	}{
		{Access{}, DefaultRecheck},
		{Access{Refusal: Refusal{Reason: ReasonTokenMissing}}, 10 * time.Second},
		{Access{Refusal: Refusal{Reason: ReasonAddOnMissing}}, DefaultRecheck},
		{Access{Token: Token{Value: "t", Expires: now.Add(24 * time.Hour)}}, DefaultRecheck},
		{Access{Token: Token{Value: "t", Expires: now.Add(4 * time.Minute)}}, 2 * time.Minute},
		{Access{Token: Token{Value: "t", Expires: now.Add(time.Second)}}, time.Second},
	} {
		if got := RecheckAfter(c.access, DefaultRecheck, now); got != c.want {
			t.Errorf("RecheckAfter(%+v) = %s, want %s", c.access, got, c.want)
		}
	}
}

func TestRightsWork(t *testing.T) {
	owned := account
	owned.Owner = "argocd/gitops"
	work, err := RightsWork(owned, []string{"example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if work.Namespace != "cluster1" || work.Name != "argocd-pull-access-argocd-pull" || work.Labels[AccessWorkLabel] != "argocd-pull" ||
		work.Labels[OwnerLabel] != OwnerLabelValue("argocd/gitops") || work.Annotations[AccountOwnerAnnotation] != "argocd/gitops" || len(work.Labels) != 2 {
		t.Errorf("work %s/%s labels %v annotations %v: want the account's name and its owner's", work.Namespace, work.Name, work.Labels, work.Annotations)
	}
	var role rbacv1.ClusterRole
	var binding rbacv1.ClusterRoleBinding
	if len(work.Spec.Workload.Manifests) != 2 {
		t.Fatalf("%d manifests, want the ClusterRole and its binding", len(work.Spec.Workload.Manifests))
	}
	if err := json.Unmarshal(work.Spec.Workload.Manifests[0].Raw, &role); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(work.Spec.Workload.Manifests[1].Raw, &binding); err != nil {
		t.Fatal(err)
	}
	if role.Kind != "ClusterRole" || len(role.Rules) != 2 || !strings.Contains(strings.Join(role.Rules[1].APIGroups, ","), "example.com") {
		t.Errorf("role %+v: want ReadOnlyRules with the Applications' group", role)
	}
	want := rbacv1.Subject{Kind: "ServiceAccount", Name: "argocd-pull", Namespace: "open-cluster-management-agent-addon"}
	if binding.Kind != "ClusterRoleBinding" || binding.RoleRef.Name != role.Name || len(binding.Subjects) != 1 || binding.Subjects[0] != want {
		t.Errorf("binding %+v: want the role bound to %+v only", binding, want)
	}
}

func TestChannelValidate(t *testing.T) {
	if err := channel.Validate(); err != nil {
		t.Errorf("the user server's Service URL: %v", err)
	}
	if err := (Channel{Accounts: []string{"argocd-pull"}}).Validate(); err != nil {
		t.Errorf("no channel: %v", err)
	}
	for _, c := range []Channel{
		{URL: "http://cluster-proxy:9092", CA: channel.CA},
		{URL: "https://user:pw@cluster-proxy:9092", CA: channel.CA},
		{URL: "https://cluster-proxy:9092/?next=x", CA: channel.CA},
		{URL: "https://", CA: channel.CA},
		{URL: channel.URL},
		{Accounts: []string{"Not A Name"}},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: no error, want one", c)
		}
	}
}

func TestUnasked(t *testing.T) {
	a, b, c := Grant{"cluster1", "argocd-pull"}, Grant{"cluster2", "argocd-pull"}, Grant{"cluster1", "other"}
	// The account on cluster2 (the cluster left the placement) and the one of the old name go, once each.
	if got := Unasked([]Grant{a, b, c, b}, []Grant{a}); len(got) != 2 || got[0] != b || got[1] != c {
		t.Errorf("Unasked = %v, want %v and %v once each", got, b, c)
	}
	if got := Unasked([]Grant{a}, []Grant{a, b}); got != nil {
		t.Errorf("a grant still asked for: %v, want none", got)
	}
	// A deleted GitOpsCluster asks for nothing: everything made for it goes.
	if got := Unasked([]Grant{a, b}, nil); len(got) != 2 {
		t.Errorf("a deleted GitOpsCluster's grants: %v, want both", got)
	}
}

func TestOwnerLabelValueIsALabelValue(t *testing.T) {
	long := strings.Repeat("n", 63) + "/" + strings.Repeat("g", 253)
	for _, owner := range []string{"argocd/gc", long} {
		v := OwnerLabelValue(owner)
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			t.Errorf("OwnerLabelValue(%q) = %q: %v", owner, v, errs)
		}
	}
	if OwnerLabelValue("a/b") == OwnerLabelValue("b/a") {
		t.Error("two GitOpsClusters have the same owner label")
	}
}
