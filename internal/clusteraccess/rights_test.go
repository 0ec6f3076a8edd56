package clusteraccess

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestReadOnlyRulesTakeOnlyGroupNames(t *testing.T) {
	rules := ReadOnlyRules([]string{"argoproj.io", "", "*", "Bad_Group", "apps", "cert-manager.io", "a..b", "-x.io"})
	if len(rules) != 2 || !slices.Equal(rules[0].APIGroups, []string{""}) || slices.Contains(rules[0].Resources, "secrets") {
		t.Fatalf("the core rule: %+v", rules)
	}
	groups := rules[1].APIGroups
	for _, want := range []string{"argoproj.io", "apps", "cert-manager.io", "batch"} {
		if !slices.Contains(groups, want) {
			t.Errorf("group %s missing from %v", want, groups)
		}
	}
	for _, refused := range []string{"", "*", "Bad_Group", "a..b", "-x.io"} {
		if slices.Contains(groups, refused) {
			t.Errorf("group %q given: %v", refused, groups)
		}
	}
	if !slices.IsSorted(groups) || len(slices.Compact(slices.Clone(groups))) != len(groups) {
		t.Errorf("groups not sorted and unique: %v", groups)
	}
	for _, r := range rules {
		if !slices.Equal(r.Verbs, ReadVerbs) {
			t.Errorf("a rule with verbs %v", r.Verbs)
		}
	}
}

// The rules as a real apiserver's RBAC reads them: bound to a ServiceAccount, they let it read what
// the hub's Argo CD shows and nothing else, whatever the verb or the subresource.
func TestReadOnlyRulesOnARealApiserver(t *testing.T) {
	env := testenv.Get(t)
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	const role = "argocd-pull-read-only-test"
	a := Account{Cluster: "cluster1", Name: "argocd-pull", ServiceAccountNamespace: "open-cluster-management-agent-addon"}
	bindToAccount(t, cs, role, a, ReadOnlyRules([]string{"argoproj.io"}))
	may := func(verb, group, resource, sub string) bool {
		t.Helper()
		r, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: a.Username(), Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + a.ServiceAccountNamespace, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "guestbook", Verb: verb, Group: group, Resource: resource, Subresource: sub},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r.Status.Allowed
	}
	// The apiserver's RBAC authorizer sees the new binding through its informers, a moment later.
	for deadline := time.Now().Add(10 * time.Second); !may("get", "", "pods", "") && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	for _, c := range []struct{ verb, group, resource, sub string }{
		{"get", "", "pods", ""}, {"list", "", "pods", ""}, {"watch", "", "pods", ""}, {"get", "", "pods", "log"},
		{"list", "", "events", ""}, {"get", "", "configmaps", ""}, {"get", "", "services", ""},
		{"list", "apps", "deployments", ""}, {"get", "apps", "replicasets", ""}, {"list", "discovery.k8s.io", "endpointslices", ""},
		{"get", "argoproj.io", "applications", ""}, {"list", "events.k8s.io", "events", ""},
	} {
		if !may(c.verb, c.group, c.resource, c.sub) {
			t.Errorf("%s %s/%s/%s refused: the hub's views read it", c.verb, c.group, c.resource, c.sub)
		}
	}
	var refused []authorizationv1.ResourceAttributes
	for _, verb := range []string{"create", "update", "patch", "delete", "deletecollection", "impersonate", "escalate", "bind"} {
		for _, gr := range [][2]string{{"", "pods"}, {"", "configmaps"}, {"apps", "deployments"}, {"argoproj.io", "applications"}, {"rbac.authorization.k8s.io", "clusterroles"}} {
			refused = append(refused, authorizationv1.ResourceAttributes{Verb: verb, Group: gr[0], Resource: gr[1]})
		}
	}
	for _, verb := range []string{"get", "list", "watch"} {
		refused = append(refused, authorizationv1.ResourceAttributes{Verb: verb, Resource: "secrets"})
	}
	for _, sub := range [][3]string{{"create", "pods", "exec"}, {"get", "pods", "exec"}, {"create", "pods", "attach"}, {"get", "pods", "portforward"},
		{"get", "pods", "proxy"}, {"get", "services", "proxy"}, {"get", "nodes", "proxy"}, {"create", "serviceaccounts", "token"}, {"get", "pods", "ephemeralcontainers"}} {
		refused = append(refused, authorizationv1.ResourceAttributes{Verb: sub[0], Resource: sub[1], Subresource: sub[2]})
	}
	for _, c := range refused {
		if may(c.Verb, c.Group, c.Resource, c.Subresource) {
			t.Errorf("%s %s/%s/%s allowed: the hub's account may only read, and never a Secret, exec or a proxy", c.Verb, c.Group, c.Resource, c.Subresource)
		}
	}
}

// bindToAccount gives a's ServiceAccount rules in a ClusterRole and ClusterRoleBinding named name,
// both removed when the test ends.
func bindToAccount(t *testing.T, cs kubernetes.Interface, name string, a Account, rules []rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{})
		_ = cs.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{})
	})
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: a.Name, Namespace: a.ServiceAccountNamespace}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// The account is given at most MaxGroups groups besides the standard ones, whatever a cluster
// reports, and never a group whose read is more than reading (issue 92, hole 3).
func TestReadOnlyRulesAreBounded(t *testing.T) {
	var groups []string
	for i := range MaxGroups + 50 {
		groups = append(groups, fmt.Sprintf("g%03d.example.com", i))
	}
	groups = append(groups, "subresources.kubevirt.io", "route.openshift.io", "oauth.openshift.io", "apps", "apps")
	rules := ReadOnlyRules(groups)
	given := rules[1].APIGroups
	if len(given) != len(StandardGroups)+MaxGroups {
		t.Errorf("%d groups given, want %d (the standard ones and MaxGroups)", len(given), len(StandardGroups)+MaxGroups)
	}
	for _, g := range []string{"subresources.kubevirt.io", "route.openshift.io", "oauth.openshift.io", fmt.Sprintf("g%03d.example.com", MaxGroups)} {
		if slices.Contains(given, g) {
			t.Errorf("%s given", g)
		}
	}
	if got := BeyondReadOnly(resourceRules(rules)); len(got) != 0 {
		t.Errorf("beyond read-only: %v", got)
	}
}
