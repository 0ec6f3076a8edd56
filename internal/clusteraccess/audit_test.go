package clusteraccess

import (
	"context"
	"slices"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

func resourceRules(rules []rbacv1.PolicyRule) []authorizationv1.ResourceRule {
	var out []authorizationv1.ResourceRule
	for _, r := range rules {
		out = append(out, authorizationv1.ResourceRule{Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames})
	}
	return out
}

func TestBeyondReadOnly(t *testing.T) {
	basicUser := []authorizationv1.ResourceRule{
		{Verbs: []string{"create"}, APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"selfsubjectaccessreviews", "selfsubjectrulesreviews"}},
		{Verbs: []string{"create"}, APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"selfsubjectreviews"}},
	}
	if got := BeyondReadOnly(append(resourceRules(ReadOnlyRules([]string{"argoproj.io"})), basicUser...)); len(got) != 0 {
		t.Errorf("ReadOnlyRules and system:basic-user: %v, want nothing beyond read-only", got)
	}
	for _, c := range []struct {
		rule authorizationv1.ResourceRule
		want []string
	}{
		{authorizationv1.ResourceRule{Verbs: []string{"create", "get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}, []string{"create configmaps"}},
		{authorizationv1.ResourceRule{Verbs: []string{"*"}, APIGroups: []string{"apps"}, Resources: []string{"deployments"}}, []string{"* deployments.apps"}},
		{authorizationv1.ResourceRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}}, []string{"read secrets (secrets)"}},
		{authorizationv1.ResourceRule{Verbs: []string{"list"}, APIGroups: []string{"*"}, Resources: []string{"*"}}, []string{
			"nodes/proxy (*.*)", "pods/attach (*.*)", "pods/exec (*.*)", "pods/portforward (*.*)", "pods/proxy (*.*)", "read every API group (*.*)", "read secrets (*.*)", "serviceaccounts/token (*.*)", "services/proxy (*.*)"}},
		// Beyond the core group: a group whose read is more than reading (issue 92, hole 3).
		{authorizationv1.ResourceRule{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{"subresources.kubevirt.io"}, Resources: []string{"*"}}, []string{
			"read *.subresources.kubevirt.io (a GET opens a virtual machine's console, VNC or port)"}},
		{authorizationv1.ResourceRule{Verbs: []string{"get"}, APIGroups: []string{"route.openshift.io"}, Resources: []string{"routes"}}, []string{
			"read routes.route.openshift.io (Routes hold TLS private keys)"}},
		{authorizationv1.ResourceRule{Verbs: []string{"get"}, APIGroups: []string{"kubevirt.io"}, Resources: []string{"*"}}, nil},
		{authorizationv1.ResourceRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/*"}}, []string{
			"pods/attach (pods/*)", "pods/exec (pods/*)", "pods/portforward (pods/*)", "pods/proxy (pods/*)"}},
		{authorizationv1.ResourceRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"nodes/proxy"}}, []string{"nodes/proxy (nodes/proxy)"}},
		{authorizationv1.ResourceRule{Verbs: []string{"*"}, APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"selfsubjectaccessreviews"}}, []string{"* selfsubjectaccessreviews.authorization.k8s.io"}},
		{authorizationv1.ResourceRule{Verbs: []string{"impersonate"}, APIGroups: []string{""}, Resources: []string{"users"}}, []string{"impersonate users"}},
	} {
		got := BeyondReadOnly(append(slices.Clone(basicUser), c.rule))
		if !slices.Equal(got, c.want) {
			t.Errorf("%+v: %q, want %q", c.rule, got, c.want)
		}
	}
}

func TestAllows(t *testing.T) {
	rules := resourceRules(ReadOnlyRules(nil))
	for _, n := range ViewsNeed {
		if !Allows(rules, n.Verb, n.Group, n.Resource) {
			t.Errorf("ReadOnlyRules do not allow %s %s.%s, which Argo CD's views need", n.Verb, n.Resource, n.Group)
		}
	}
	for _, c := range [][3]string{{"get", "", "secrets"}, {"create", "", "pods"}, {"get", "", "pods/exec"}, {"get", "argoproj.io", "applications"}} {
		if Allows(rules, c[0], c[1], c[2]) {
			t.Errorf("ReadOnlyRules(nil) allow %v", c)
		}
	}
	named := []authorizationv1.ResourceRule{{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{"one"}}}
	if Allows(named, "list", "", "pods") {
		t.Error("a rule for one named Pod allows listing every Pod")
	}
	if !Allows([]authorizationv1.ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*/log"}}}, "get", "", "pods/log") {
		t.Error("*/log does not allow pods/log")
	}
}

func TestParseClusterConfig(t *testing.T) {
	ch := Channel{URL: "https://proxy:9092", CA: []byte("-----BEGIN CERTIFICATE-----\nCA\n")}
	token, ca, err := ParseClusterConfig([]byte(ClusterConfig(ch, Token{Value: "a.b.c"})))
	if err != nil || token != "a.b.c" || string(ca) != string(ch.CA) {
		t.Errorf("ParseClusterConfig(ClusterConfig) = %q, %q, %v", token, ca, err)
	}
	if token, _, err := ParseClusterConfig(nil); token != "" || err != nil {
		t.Errorf("no config: %q, %v", token, err)
	}
	if _, _, err := ParseClusterConfig([]byte("{")); err == nil {
		t.Error("a malformed config: no error")
	}
}

func TestTokenExpiry(t *testing.T) {
	exp := time.Now().Add(time.Hour).Truncate(time.Second)
	got, err := TokenExpiry(jwt(t, map[string]any{"sub": "system:serviceaccount:a:b", "exp": exp.Unix()}))
	if err != nil || !got.Equal(exp) {
		t.Errorf("TokenExpiry = %v, %v, want %v", got, err, exp)
	}
	if got, err := TokenExpiry(jwt(t, map[string]any{"sub": "x"})); err != nil || !got.IsZero() {
		t.Errorf("no exp: %v, %v", got, err)
	}
	if _, err := TokenExpiry("not a token"); err == nil {
		t.Error("not a JWT: no error")
	}
}

// What a real apiserver answers the account itself (a SelfSubjectRulesReview, as doctor asks it
// through cluster-proxy) with ReadOnlyRules bound: nothing beyond read-only, every read Argo CD's
// views need. A ClusterRole more, bound by a cluster's administrator, is named.
func TestBeyondReadOnlyOnARealApiserversAnswer(t *testing.T) {
	env := testenv.Get(t)
	ctx := context.Background()
	admin, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	a := Account{Cluster: "cluster1", Name: "argocd-pull-audit", ServiceAccountNamespace: DefaultServiceAccountNamespace}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: a.Username(), Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + a.ServiceAccountNamespace, "system:authenticated"}}
	self, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// rules waits for the RBAC authorizer's informers to see the bindings: until check passes.
	rules := func(check func([]authorizationv1.ResourceRule) bool) []authorizationv1.ResourceRule {
		t.Helper()
		var got []authorizationv1.ResourceRule
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			r, err := self.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{
				Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "argocd"}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got = r.Status.ResourceRules; check(got) {
				break
			}
		}
		return got
	}
	bindToAccount(t, admin, "argocd-pull-audit-read-only", a, ReadOnlyRules([]string{"argoproj.io"}))
	got := rules(func(r []authorizationv1.ResourceRule) bool { return Allows(r, "list", "", "pods") })
	if beyond := BeyondReadOnly(got); len(beyond) != 0 {
		t.Errorf("the apiserver's answer with ReadOnlyRules bound: %v beyond read-only\n%+v", beyond, got)
	}
	for _, n := range ViewsNeed {
		if !Allows(got, n.Verb, n.Group, n.Resource) {
			t.Errorf("the apiserver's answer does not allow %s %s.%s", n.Verb, n.Resource, n.Group)
		}
	}

	bindToAccount(t, admin, "argocd-pull-audit-more", a, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets", "pods/exec"}, Verbs: []string{"get", "create"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"patch"}},
	})
	got = rules(func(r []authorizationv1.ResourceRule) bool { return Allows(r, "get", "", "secrets") })
	want := []string{"create pods/exec", "create secrets", "patch deployments.apps", "pods/exec (pods/exec)", "read secrets (secrets)"}
	if beyond := BeyondReadOnly(got); !slices.Equal(beyond, want) {
		t.Errorf("with a ClusterRole more bound: %q, want %q", beyond, want)
	}
}
