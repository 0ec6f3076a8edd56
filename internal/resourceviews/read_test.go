package resourceviews

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/argocd-pull/argocd-pull/internal/clusteraccess"
	"github.com/argocd-pull/argocd-pull/internal/resourcetree"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// cluster holds a Deployment's objects on a real apiserver as a cluster's controllers would have
// made them (envtest runs none: the owners are set by hand), and reads as the hub's read-only
// account (clusteraccess.ReadOnlyRules, impersonated as managed-serviceaccount's token would be).
type cluster struct {
	ns     string
	admin  kubernetes.Interface
	reader *rest.Config
	listed []any
}

func newCluster(t *testing.T, pods int) cluster {
	t.Helper()
	env := testenv.Get(t)
	ctx := context.Background()
	admin, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t)
	labels := map[string]string{"app": "web"}
	dep, err := admin.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](int32(pods)), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := admin.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-5d8f", Labels: labels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: dep.UID, Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](int32(pods)), Selector: dep.Spec.Selector, Template: dep.Spec.Template}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range pods {
		if _, err := admin.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-5d8f-%d", i), Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}}},
			Spec: dep.Spec.Template.Spec}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := admin.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	a := clusteraccess.Account{Cluster: "cluster1", Name: "argocd-pull-views-" + ns, ServiceAccountNamespace: clusteraccess.DefaultServiceAccountNamespace}
	name := "argocd-pull-views-" + ns
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: clusteraccess.ReadOnlyRules(nil)}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: a.Name, Namespace: a.ServiceAccountNamespace}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{})
		_ = admin.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{})
	})
	reader := rest.CopyConfig(env.Config)
	reader.Impersonate = rest.ImpersonationConfig{UserName: a.Username(), Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + a.ServiceAccountNamespace, "system:authenticated"}}
	resource := func(group, kind, name, health string) map[string]any {
		return map[string]any{"group": group, "version": "v1", "kind": kind, "namespace": ns, "name": name, "health": map[string]any{"status": health}}
	}
	return cluster{ns: ns, admin: admin, reader: reader, listed: []any{
		resource("apps", "Deployment", "web", "Progressing"),
		resource("", "Service", "web", "Healthy"),
		resource("", "ConfigMap", "gone", "Missing"),
		resource("", "Secret", "web-token", "Healthy"), // the account may not read Secrets
	}}
}

// read reads the cluster with lim once the RBAC authorizer sees all of the account's rights (its
// informers lag behind the binding): first until a read with the default limits skips only the
// Secret, which the account may never read.
func (c cluster) read(t *testing.T, lim Limits) (Facts, Reads) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, reads, err := Read(context.Background(), c.reader, c.listed, DefaultLimits, nil)
		if err == nil && reads.Skipped == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("reading the cluster as its read-only account: %+v, %v", reads, err)
		}
	}
	f, reads, err := Read(context.Background(), c.reader, c.listed, lim, nil)
	if err != nil {
		t.Fatalf("reading the cluster as its read-only account: %v", err)
	}
	return f, reads
}

func TestReadGivesTheClustersTreeAsTheReadOnlyAccount(t *testing.T) {
	c := newCluster(t, 2)
	f, reads := c.read(t, DefaultLimits)
	b := Tree(f)
	var got []string
	for _, n := range b.Tree.Nodes {
		parent := ""
		if len(n.ParentRefs) > 0 {
			parent = " <- " + n.ParentRefs[0].Kind + "/" + n.ParentRefs[0].Name
		}
		got = append(got, fmt.Sprintf("%s/%s uid=%t %s%s", n.Kind, n.Name, n.UID != "", n.Health.Status, parent))
	}
	want := []string{
		"Deployment/web uid=true Progressing",
		"Service/web uid=true Healthy",
		"ConfigMap/gone uid=false Missing",
		"Secret/web-token uid=false Healthy",
		"ReplicaSet/web-5d8f uid=true Progressing <- Deployment/web",
		"Pod/web-5d8f-0 uid=true Progressing <- ReplicaSet/web-5d8f",
		"Pod/web-5d8f-1 uid=true Progressing <- ReplicaSet/web-5d8f",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("tree:\n%s\nwant (the Pods Pending, as with no kubelet; the Secret unread):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if reads.Requests != 5 || reads.Skipped != 1 {
		t.Errorf("%+v; want 3 GETs and 2 lists, the Secret skipped without a request (the account may never read it)", reads)
	}

	// The listed resources are read whole: their live states, for the managed resources.
	dep := f.Objects[resourcetree.Ref{Group: "apps", Kind: "Deployment", Namespace: c.ns, Name: "web"}]
	if dep == nil {
		t.Fatal("the listed Deployment was not read whole")
	}
	if replicas, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas"); replicas != 2 {
		t.Errorf("the live Deployment: %v; want it whole, with its 2 replicas", dep)
	}
	secret := resourcetree.Ref{Kind: "Secret", Namespace: c.ns, Name: "web-token"}
	gone := resourcetree.Ref{Kind: "ConfigMap", Namespace: c.ns, Name: "gone"}
	if len(f.Objects) != 2 || !f.Unread[secret] || len(f.Unread) != 1 || f.Objects[gone] != nil {
		t.Errorf("objects %v, unread %v; want the Deployment and the Service live, the Secret unread, the ConfigMap in neither (missing)", f.Objects, f.Unread)
	}
}

func TestReadIsBounded(t *testing.T) {
	c := newCluster(t, 5)
	f, reads := c.read(t, Limits{Gets: 1, Namespaces: 1, List: 2, Body: DefaultLimits.Body})
	if len(f.Live) != 1 || reads.Requests != 3 {
		t.Errorf("%d live, %+v: want 1 GET and one page of each list", len(f.Live), reads)
	}
	pods := 0
	for _, o := range f.Children {
		if o.Kind == "Pod" {
			pods++
		}
	}
	if pods != 2 || reads.Skipped < 4 {
		t.Errorf("%d Pods, %+v; want one page of 2, the rest said skipped (3 listed resources, more Pods)", pods, reads)
	}

	_, _, err := Read(context.Background(), c.reader, c.listed, Limits{Gets: 10, Namespaces: 1, List: 500, Body: 2000}, nil)
	if err == nil || !strings.Contains(err.Error(), "larger than the limit") {
		t.Errorf("an answer over 2,000 bytes: %v, want it refused", err)
	}
}

// A token the cluster refuses (expired, revoked) is the error: the caller keeps the display tree.
func TestReadWithARefusedToken(t *testing.T) {
	c := newCluster(t, 1)
	refused := &rest.Config{Host: c.reader.Host, BearerToken: "not-a-token", TLSClientConfig: rest.TLSClientConfig{CAData: c.reader.CAData}}
	_, _, err := Read(context.Background(), refused, c.listed, DefaultLimits, nil)
	if err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Errorf("a refused token: %v, want Unauthorized", err)
	}
}

// The probe: the read-only account's token is answered, a refused one is the cluster's 401, and an
// answer larger than a list of API versions is refused.
func TestProbe(t *testing.T) {
	c := newCluster(t, 0)
	ctx := context.Background()
	if err := Probe(ctx, c.reader); err != nil {
		t.Errorf("the read-only account's token: %v, want an answer", err)
	}
	refused := &rest.Config{Host: c.reader.Host, BearerToken: "not-a-token", TLSClientConfig: rest.TLSClientConfig{CAData: c.reader.CAData}}
	if err := Probe(ctx, refused); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Errorf("a refused token: %v, want Unauthorized", err)
	}
	large := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"kind":"APIVersions","versions":["` + strings.Repeat("v", probeBody) + `"]}`))
	}))
	defer large.Close()
	if err := Probe(ctx, &rest.Config{Host: large.URL, BearerToken: "t"}); err == nil || !strings.Contains(err.Error(), "larger than the limit") {
		t.Errorf("an answer over %d bytes: %v, want it refused", probeBody, err)
	}
}

// A resource the Application's project does not permit is never asked for: no request, no live
// state, no uid, counted with the first reason; its namespace is not listed for children either.
func TestReadAsksNothingTheProjectDoesNotPermit(t *testing.T) {
	c := newCluster(t, 2)
	c.read(t, DefaultLimits) // the account's rights seen
	refuseDeployments := func(id resourcetree.Ref) string {
		if id.Kind == "Deployment" {
			return "not permitted"
		}
		return ""
	}
	f, reads, err := Read(context.Background(), c.reader, c.listed, DefaultLimits, refuseDeployments)
	if err != nil {
		t.Fatal(err)
	}
	if reads.Requests != 2 { // the Service and the missing ConfigMap; no Deployment, no list of children
		t.Errorf("%d requests, want 2: %+v", reads.Requests, reads)
	}
	dep := resourcetree.Ref{Group: "apps", Kind: "Deployment", Namespace: c.ns, Name: "web"}
	if !f.Unread[dep] || f.Objects[dep] != nil || len(f.Children) != 0 {
		t.Errorf("the Deployment was read: unread %t, object %v, %d children", f.Unread[dep], f.Objects[dep], len(f.Children))
	}
	if want := "Deployment " + c.ns + "/web: not permitted"; f.NotPermitted != 1 || f.NotPermittedWhy != want {
		t.Errorf("NotPermitted %d %q, want 1 %q", f.NotPermitted, f.NotPermittedWhy, want)
	}
	if msg := Tree(f).ClusterMessage(); !strings.Contains(msg, "1 resources the Application's AppProject does not permit there (first: "+f.NotPermittedWhy+")") {
		t.Errorf("ClusterMessage %q", msg)
	}
}

// One cluster cannot exhaust or stall the controller through one read: a cluster whose apiserver
// answers each GET with just under the per-answer limit (16 MiB), slowly, would cost 100 GETs of
// 16 MiB and 10 s each, about 1.6 GiB and 17 minutes for one reconcile. The read has a budget in
// bytes and a deadline of its own, and ends with the error when either is spent (the caller keeps
// the display tree and says why). Before, only each answer was bounded (issue 92, hole 5).
func TestAReadHasABudgetAndADeadline(t *testing.T) {
	var asked atomic.Int32
	slow := make(chan struct{})
	defer close(slow)
	cluster := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		if strings.Contains(r.URL.Path, "/slow") {
			select {
			case <-slow:
			case <-r.Context().Done():
			}
			return
		}
		// A ConfigMap with 1 MiB of data: each answer within the per-answer limit.
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big","namespace":"x","uid":"0b8ab19b-6c38-4c1d-8e2a-3c1c1a2b3c4d"},"data":{"k":"` + strings.Repeat("x", 1<<20) + `"}}`))
	}))
	defer cluster.Close()
	cfg := &rest.Config{Host: cluster.URL, BearerToken: "t"}
	var listed []any
	for i := range 50 {
		listed = append(listed, map[string]any{"version": "v1", "kind": "ConfigMap", "namespace": "x", "name": fmt.Sprintf("big-%d", i)})
	}
	lim := DefaultLimits
	lim.Total = 8 << 20
	_, _, err := Read(context.Background(), cfg, listed, lim, nil)
	if !errors.Is(err, ErrReadBudget) {
		t.Errorf("50 answers of 1 MiB against a budget of 8 MiB: %v, want ErrReadBudget", err)
	}
	if n := asked.Load(); n > 10 {
		t.Errorf("%d requests made, want the read to stop once its budget is spent", n)
	}

	stalled := []any{map[string]any{"version": "v1", "kind": "ConfigMap", "namespace": "slow", "name": "a"}}
	lim = DefaultLimits
	lim.Deadline = 500 * time.Millisecond
	// No timeout on the config: without the read's own deadline this would wait for ever.
	_, _, err = Read(context.Background(), &rest.Config{Host: cluster.URL + "/slow", BearerToken: "t"}, stalled, lim, nil)
	if err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Errorf("a cluster that does not answer: %v, want the read's deadline", err)
	}
}
