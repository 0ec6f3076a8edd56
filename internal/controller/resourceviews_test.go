package controller

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
	"github.com/argocd-pull/argocd-pull/internal/appstatus"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/clusteraccess"
	"github.com/argocd-pull/argocd-pull/internal/gitops"
	"github.com/argocd-pull/argocd-pull/internal/resourcetree"
	"github.com/argocd-pull/argocd-pull/internal/resourceviews"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
	"github.com/argocd-pull/argocd-pull/internal/viewholders"
)

// userServer stands in for cluster-proxy's user server: TLS, and /<cluster>/<path> sent to that
// cluster's apiserver with the caller's own token (the real one tunnels through konnectivity; the
// lab's tests run it). down makes it answer 503, as when the cluster's proxy agent is gone;
// dropEveryOtherProbe answers 503 to every other GET /<cluster>/api (the probe's one request), as a
// tunnel that reconnects now and then; probes counts those requests.
type userServer struct {
	srv                 *httptest.Server
	channel             clusteraccess.Channel
	cluster             atomic.Value // string: the one cluster it reaches
	down                atomic.Bool
	dropEveryOtherProbe atomic.Bool
	probes              atomic.Int64
}

func newUserServer(t *testing.T, target *rest.Config) *userServer {
	t.Helper()
	upstream, err := url.Parse(target.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(&rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: target.CAData}})
	if err != nil {
		t.Fatal(err)
	}
	u := &userServer{}
	u.cluster.Store("")
	proxy := &httputil.ReverseProxy{Transport: transport, Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(upstream)
		r.Out.URL.Path = strings.TrimPrefix(r.In.URL.Path, "/"+u.cluster.Load().(string))
		r.Out.URL.RawPath = ""
	}}
	u.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cluster := u.cluster.Load().(string)
		probe := cluster != "" && r.Method == http.MethodGet && r.URL.Path == "/"+cluster+"/api"
		if probe && u.probes.Add(1)%2 == 1 && u.dropEveryOtherProbe.Load() {
			http.Error(w, "the tunnel to "+cluster+" is reconnecting", http.StatusServiceUnavailable)
			return
		}
		switch {
		case u.down.Load():
			http.Error(w, "no tunnel to "+cluster, http.StatusServiceUnavailable)
		case cluster == "" || !strings.HasPrefix(r.URL.Path, "/"+cluster+"/"):
			http.NotFound(w, r)
		default:
			proxy.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(u.srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: u.srv.Certificate().Raw})
	u.channel = clusteraccess.Channel{URL: u.srv.URL, CA: ca, Accounts: []string{"argocd-pull"}}
	return u
}

// readOnlyToken makes the hub's account on the cluster as managed-serviceaccount's agent would (a
// ServiceAccount, the read-only rights argocd-pull delivers, a token of the TokenRequest API).
func readOnlyToken(t *testing.T, cfg *rest.Config, ns string) string {
	t.Helper()
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(cfg)
	sa, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "argocd-pull"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	name := "argocd-pull:read-only:" + ns
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: clusteraccess.ReadOnlyRules(nil)}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: ns}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The RBAC authorizer's informers lag behind the binding: wait until the token reads what the
	// tree needs, so that the first tree is read with the rights the account will keep.
	reader := kubernetes.NewForConfigOrDie(&rest.Config{Host: cfg.Host, BearerToken: tr.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData}})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, errDeployments := reader.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{Limit: 1})
		_, errPods := reader.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1})
		if errDeployments == nil && errPods == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the account's token cannot read yet: %v; %v", errDeployments, errPods)
		}
	}
	return tr.Status.Token
}

// guestbookOnCluster creates, in ns of the cluster, the documents' guestbook-ui Deployment and
// Service with a ReplicaSet and a Pod as the cluster's controllers would (the test apiserver runs
// none); it returns their uids by kind.
func guestbookOnCluster(t *testing.T, cs kubernetes.Interface, ns string) map[string]string {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"app": "guestbook-ui"}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "guestbook-ui", Image: "gcr.io/heptio-images/ks-guestbook-demo:0.2"}}}}
	dep, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "guestbook-ui"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "guestbook-ui"},
		Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := cs.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "guestbook-ui-85985d774c", Labels: labels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: dep.Name, UID: dep.UID, Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](1), Selector: dep.Spec.Selector, Template: template}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "guestbook-ui-85985d774c-x7b2q", Labels: labels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}}},
		Spec: template.Spec}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{"Deployment": string(dep.UID), "Service": string(svc.UID), "ReplicaSet": string(rs.UID), "Pod": string(pod.UID)}
}

// rawTree is Application name's tree as redis holds it (treeJSON), uids and parents included; nil
// when there is none.
func rawTree(g Gomega, rdb *redis.Client, name string) *resourcetree.Tree {
	data := treeJSON(g, rdb, name)
	if data == nil {
		return nil
	}
	var tree resourcetree.Tree
	g.Expect(json.Unmarshal(data, &tree)).To(Succeed())
	return &tree
}

// managedOf is Application name's managed resources as redis holds them, one line each: "Kind/name
// live=<its live state's replicas, or whether it has one> target=<whether it has a target>
// modified=<...>"; nil when there are none.
func managedOf(g Gomega, rdb *redis.Client, name string) []string {
	data := cached(g, rdb, "app|managed-resources|"+name+"|1.8.3.gz")
	if data == nil {
		return nil
	}
	var items []resourceviews.ResourceDiff
	g.Expect(json.Unmarshal(data, &items)).To(Succeed())
	out := []string{}
	for _, d := range items {
		live := fmt.Sprint(d.LiveState != "" && d.LiveState != "null")
		var o map[string]any
		if json.Unmarshal([]byte(d.LiveState), &o) == nil && o != nil {
			if r, ok, _ := unstructured.NestedFieldNoCopy(o, "spec", "replicas"); ok {
				live = fmt.Sprintf("replicas:%v", r)
			}
		}
		out = append(out, fmt.Sprintf("%s/%s live=%s target=%t modified=%t", d.Kind, d.Name, live, d.TargetState != "" && d.TargetState != "null", d.Modified))
	}
	return out
}

// lines is a tree as "Kind/name uid <- ParentKind/name", one node a line.
func lines(tree *resourcetree.Tree) []string {
	if tree == nil {
		return nil
	}
	var out []string
	for _, n := range tree.Nodes {
		s := fmt.Sprintf("%s/%s %s %s", n.Kind, n.Name, n.UID, n.Health.Status)
		for _, p := range n.ParentRefs {
			s += " <- " + p.Kind + "/" + p.Name
		}
		out = append(out, s)
	}
	return out
}

// An Application whose destination names its own cluster, whose cluster secret argocd-pull
// wrote with OCM's channel, gets the cluster's own tree: the uids of what it lists and their
// ReplicaSet and Pod, read through the channel as the read-only account. The same Application
// aimed at the hub, or at another cluster's name, keeps the display tree, without a uid. The
// channel down, the tree falls back to the display tree and says why, once; back, the cluster's
// tree returns. The secret losing the channel gives the display tree at once, and regaining it
// the cluster's tree. Beside the cluster's tree go its managed resources (live states from the
// cluster, Git from the hub's API server), removed whenever the display tree replaces it and with
// the Application.
func TestAnApplicationOnItsClustersChannelGetsTheClustersOwnTree(t *testing.T) {
	// The hub Argo CD's API server, its GetManifests: Git holds 2 replicas, the cluster 1 (the
	// lab runs the real one, TestAnApplicationOnItsClustersChannelShowsTheClustersOwnTree).
	var manifestsAsked atomic.Int32
	var askedRevisions atomic.Value // string: the revisions of the last GetManifests
	argocdServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer argocd-pull-token" || !strings.HasSuffix(r.URL.Path, "/manifests") {
			http.Error(w, `{"message": "permission denied"}`, http.StatusForbidden)
			return
		}
		manifestsAsked.Add(1)
		askedRevisions.Store(strings.Join(r.URL.Query()["revisions"], ","))
		_, _ = w.Write([]byte(`{"manifests": [` +
			`"{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"guestbook-ui\"},\"spec\":{\"replicas\":2,\"selector\":{\"matchLabels\":{\"app\":\"guestbook-ui\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"guestbook-ui\"}},\"spec\":{\"containers\":[{\"name\":\"guestbook-ui\",\"image\":\"gcr.io/heptio-images/ks-guestbook-demo:0.2\"}]}}}}",` +
			`"{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"guestbook-ui\"},\"spec\":{\"selector\":{\"app\":\"guestbook-ui\"},\"ports\":[{\"port\":80}]}}"]}`))
	}))
	defer argocdServer.Close()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("argocd-pull-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := onItsChannel(t, time.Second, func(o *Options) {
		o.ArgoCDServer = resourceviews.ServerOptions{URL: argocdServer.URL, TokenFile: tokenFile}
	})
	h, rdb, proxy, cluster, guestbook, uids, cs := f.h, f.rdb, f.proxy, f.cluster, f.guestbook, f.uids, f.cs
	ctx := context.Background()
	secret := f.secret(f.token)
	h.create(secret)

	// status.resources as the cluster's Argo CD reports them, in the namespace the objects are in.
	feedback := func(health string) map[string]string {
		return managedMultiSourceFeedback(t, func(status map[string]any) {
			for _, r := range status["resources"].([]any) {
				r.(map[string]any)["namespace"] = guestbook
				if r.(map[string]any)["kind"] == "Deployment" {
					r.(map[string]any)["health"] = map[string]any{"status": health}
				}
			}
		})
	}
	deliver := func(name string, dest map[string]any) {
		h.documentsApp(name, cluster)
		app := &unstructured.Unstructured{}
		app.SetGroupVersionKind(argocd.ApplicationGVK)
		h.g.Expect(h.c.Get(ctx, client.ObjectKey{Namespace: h.ns, Name: name}, app)).To(Succeed())
		if dest != nil {
			patch := client.MergeFrom(app.DeepCopy())
			h.g.Expect(unstructured.SetNestedField(app.Object, dest, "spec", "destination")).To(Succeed())
			h.g.Expect(h.c.Patch(ctx, app, patch)).To(Succeed())
		}
		w := h.work(name, cluster)
		h.report(name, cluster, w.Generation, feedback("Healthy"))
	}
	// Argo CD's default project, which permits every destination (a project that does not exist
	// permits none: TestRouteOnlyWhereTheApplicationsProjectPermits).
	h.project("default", h.ns)
	named := map[string]any{"name": cluster, "namespace": guestbook}
	deliver("guestbook", named)
	want := []string{
		"Service/guestbook-ui " + uids["Service"] + " Healthy",
		"Deployment/guestbook-ui " + uids["Deployment"] + " Healthy",
		"ReplicaSet/guestbook-ui-85985d774c " + uids["ReplicaSet"] + " Progressing <- Deployment/guestbook-ui",
		"Pod/guestbook-ui-85985d774c-x7b2q " + uids["Pod"] + " Progressing <- ReplicaSet/guestbook-ui-85985d774c",
	}
	h.g.Eventually(func(g Gomega) []string { return lines(rawTree(g, rdb, "guestbook")) }, timeout, interval).Should(Equal(want),
		"the cluster's own tree: uids from the cluster, the ReplicaSet and the Pod (Pending: no kubelet) under their owners")
	wantManaged := []string{ // in Argo CD's order: group, kind, namespace, name
		"Service/guestbook-ui live=true target=true modified=false",
		"Deployment/guestbook-ui live=replicas:1 target=true modified=true",
	}
	h.g.Eventually(func(g Gomega) []string { return managedOf(g, rdb, "guestbook") }, timeout, interval).Should(Equal(wantManaged),
		"its managed resources: the live states read from the cluster, compared with Git as the hub's API server renders it")
	h.g.Expect(manifestsAsked.Load()).To(BeNumerically(">", 0))

	// Aimed at the hub (the documents' own destination, the in-cluster server) or at another
	// name: the display tree, no uid, although the same cluster reports the same resources.
	deliver("aimed-at-the-hub", nil)
	deliver("another-name", map[string]any{"name": "in-cluster", "namespace": guestbook})
	display := []string{"Service/guestbook-ui  Healthy", "Deployment/guestbook-ui  Healthy"}
	for _, name := range []string{"aimed-at-the-hub", "another-name"} {
		h.g.Eventually(func(g Gomega) []string { return lines(rawTree(g, rdb, name)) }, timeout, interval).Should(Equal(display), name)
		h.g.Expect(managedOf(h.g, rdb, name)).To(BeNil(), "no live state for an Application the hub does not read: %s", name)
	}

	// A second Application on the same cluster's channel, with its own tree from the cluster.
	deliver("guestbook-2", named)
	h.g.Eventually(func(g Gomega) []string { return lines(rawTree(g, rdb, "guestbook-2")) }, timeout, interval).Should(Equal(want))

	// The channel down: the next change gives the display tree, and the Application says why.
	notRead := func() []string {
		var out []string
		for _, e := range h.eventsFor("guestbook") {
			if strings.HasPrefix(e, ReasonClusterTreeNotRead+": ") {
				out = append(out, e)
			}
		}
		return out
	}
	proxy.down.Store(true)
	h.report("guestbook", cluster, h.work("guestbook", cluster).Generation, feedback("Progressing"))
	h.g.Eventually(func(g Gomega) []string { return lines(rawTree(g, rdb, "guestbook")) }, timeout, interval).Should(Equal(
		[]string{"Service/guestbook-ui  Healthy", "Deployment/guestbook-ui  Progressing"}))
	h.g.Expect(managedOf(h.g, rdb, "guestbook")).To(BeNil(), "live states that are no longer read are removed with the cluster's tree")
	// The other Application of that cluster, with no change of its own, takes the display tree
	// too: its uids would send Argo CD's views to a cluster that does not answer.
	h.g.Eventually(func(g Gomega) []string { return lines(rawTree(g, rdb, "guestbook-2")) }, timeout, interval).Should(Equal(display), "guestbook-2")
	h.g.Expect(managedOf(h.g, rdb, "guestbook-2")).To(BeNil())
	h.g.Eventually(notRead, timeout, interval).Should(ConsistOf(
		And(ContainSubstring("could not be read through OCM's channel"), ContainSubstring("reading Service "+guestbook+"/guestbook-ui on the cluster: the server is currently unable to handle the request"))))

	// Back: the cluster is read again once its backoff ends, with no change of the Application
	// (its status still says Progressing), and the tree is the cluster's again.
	proxy.down.Store(false)
	h.g.Eventually(func(g Gomega) []string { return lines(rawTree(g, rdb, "guestbook")) }, timeout, interval).Should(Equal(
		[]string{"Service/guestbook-ui " + uids["Service"] + " Healthy", "Deployment/guestbook-ui " + uids["Deployment"] + " Progressing", want[2], want[3]}))
	h.report("guestbook", cluster, h.work("guestbook", cluster).Generation, feedback("Healthy"))
	h.g.Eventually(func(g Gomega) []string { return lines(rawTree(g, rdb, "guestbook")) }, timeout, interval).Should(Equal(want))
	h.g.Eventually(func(g Gomega) []string { return managedOf(g, rdb, "guestbook") }, timeout, interval).Should(Equal(wantManaged))
	h.g.Consistently(notRead, 2*time.Second, interval).Should(HaveLen(1), "said once")
	h.g.Eventually(func(g Gomega) []string { return lines(rawTree(g, rdb, "guestbook-2")) }, timeout, interval).Should(Equal(want), "guestbook-2 back")

	// The cluster secret loses the channel (its GitOpsCluster no longer asks for it): the tree is
	// the display tree at once, with no change of the Application; the channel back, the
	// cluster's own tree again.
	h.g.Expect(h.c.Get(ctx, client.ObjectKeyFromObject(secret), secret)).To(Succeed())
	withChannel := secret.DeepCopy()
	secret.Data = map[string][]byte{"name": []byte(cluster), "server": []byte(gitops.Server(cluster))}
	h.g.Expect(h.c.Update(ctx, secret)).To(Succeed())
	h.g.Eventually(func(g Gomega) []string { return lines(rawTree(g, rdb, "guestbook")) }, timeout, interval).Should(Equal(display))
	h.g.Expect(managedOf(h.g, rdb, "guestbook")).To(BeNil())
	secret.Data = withChannel.Data
	h.g.Expect(h.c.Update(ctx, secret)).To(Succeed())
	h.g.Eventually(func(g Gomega) []string { return lines(rawTree(g, rdb, "guestbook")) }, timeout, interval).Should(Equal(want))
	h.g.Eventually(func(g Gomega) []string { return managedOf(g, rdb, "guestbook") }, timeout, interval).Should(Equal(wantManaged))

	// Its AppProject keeps it to another cluster (as a tenant's project keeps it to the tenant's
	// own): the display tree at once, with no change of the Application, and no live state; the
	// project permitting the cluster again, the cluster's own tree again.
	destinations := func(d ...any) {
		h.g.Eventually(func() error {
			p := argocd.NewAppProject()
			if err := h.c.Get(ctx, client.ObjectKey{Namespace: h.ns, Name: "default"}, p); err != nil {
				return err
			}
			if err := unstructured.SetNestedSlice(p.Object, d, "spec", "destinations"); err != nil {
				return err
			}
			return h.c.Update(ctx, p)
		}, timeout, interval).Should(Succeed())
	}
	destinations(map[string]any{"name": "another-tenants-cluster", "namespace": "*"})
	h.g.Eventually(func(g Gomega) []string { return lines(rawTree(g, rdb, "guestbook")) }, timeout, interval).Should(Equal(display))
	h.g.Expect(managedOf(h.g, rdb, "guestbook")).To(BeNil())
	destinations(map[string]any{"name": cluster, "namespace": guestbook})
	h.g.Eventually(func(g Gomega) []string { return lines(rawTree(g, rdb, "guestbook")) }, timeout, interval).Should(Equal(want))
	h.g.Eventually(func(g Gomega) []string { return managedOf(g, rdb, "guestbook") }, timeout, interval).Should(Equal(wantManaged))

	// A new revision on the cluster with the same resources: the Git side is asked for again, at
	// that revision.
	const newRevision = "0123456789abcdef0123456789abcdef01234567"
	h.g.Expect(askedRevisions.Load()).To(Equal("9c8f3a1e2b7d4c6f0a1b2c3d4e5f60718293a4b5"), "the revision the cluster reports")
	h.report("guestbook", cluster, h.work("guestbook", cluster).Generation, managedMultiSourceFeedback(t, func(status map[string]any) {
		for _, r := range status["resources"].([]any) {
			r.(map[string]any)["namespace"] = guestbook
		}
		status["sync"].(map[string]any)["revisions"] = []any{newRevision}
	}))
	h.g.Eventually(askedRevisions.Load, timeout, interval).Should(Equal(newRevision))

	// A resource too large for the managed resources' cap (a ConfigMap of 600 KiB, as the cluster
	// holds it): it keeps no states, and the Application says so in its PullFeedbackWarning, as
	// for feedback over the caps; listed no more, the warning goes.
	if _, err := cs.CoreV1().ConfigMaps(guestbook).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "big"},
		Data: map[string]string{"blob": strings.Repeat("x", 600*1024)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	withBig := managedMultiSourceFeedback(t, func(status map[string]any) {
		resources := status["resources"].([]any)
		for _, r := range resources {
			r.(map[string]any)["namespace"] = guestbook
		}
		status["resources"] = append(resources, map[string]any{"version": "v1", "kind": "ConfigMap", "namespace": guestbook, "name": "big",
			"status": "Synced", "health": map[string]any{"status": "Healthy"}})
	})
	warning := func() string {
		return argocd.ConditionMessage(h.getApp("guestbook"), appstatus.FeedbackWarningCondition)
	}
	h.report("guestbook", cluster, h.work("guestbook", cluster).Generation, withBig)
	h.g.Eventually(warning, timeout, interval).Should(ContainSubstring("the managed resources keep no states for 1 resources (first: ConfigMap " + guestbook + "/big: its states are"))
	h.g.Eventually(func(g Gomega) []string { return managedOf(g, rdb, "guestbook") }, timeout, interval).Should(
		ContainElement("ConfigMap/big live=false target=false modified=false"))
	h.report("guestbook", cluster, h.work("guestbook", cluster).Generation, feedback("Healthy"))
	h.g.Eventually(warning, timeout, interval).Should(BeEmpty())

	// The Application deleted: its managed resources go with its tree.
	app := argocd.NewApplication()
	h.g.Expect(h.c.Get(ctx, client.ObjectKey{Namespace: h.ns, Name: "guestbook"}, app)).To(Succeed())
	h.g.Expect(h.c.Delete(ctx, app)).To(Succeed())
	h.g.Eventually(func(g Gomega) []string { return managedOf(g, rdb, "guestbook") }, timeout, interval).Should(BeNil())
}

// A token the cluster refuses (revoked there: here, one it never issued): the Application's tree is
// the display tree, with one ClusterTreeNotRead that names the cluster's refusal, and the cluster
// is not asked again before its backoff ends (an hour here). A new token in the cluster's secret
// (managed-serviceaccount's agent made one, argocd-pull copied it) is tried at once: the cluster's
// own tree comes back without a change of the Application.
func TestANewTokenEndsTheBackoffOfARefusedOne(t *testing.T) {
	f := onItsChannel(t, time.Hour, nil)
	h, rdb := f.h, f.rdb
	ctx := context.Background()
	secret := f.secret("revoked." + strings.Repeat("x", 40) + ".token")
	h.create(secret)
	f.deliverGuestbook(t)

	h.g.Eventually(func(g Gomega) []string { return lines(rawTree(g, rdb, "guestbook")) }, timeout, interval).Should(Equal(
		[]string{"Service/guestbook-ui  Healthy", "Deployment/guestbook-ui  Healthy"}), "the display tree")
	h.g.Eventually(func() []string { return h.eventsFor("guestbook") }, timeout, interval).Should(ContainElement(
		And(HavePrefix(ReasonClusterTreeNotRead+": "), ContainSubstring("Unauthorized"))), "the cluster's refusal, said")

	h.g.Expect(h.c.Get(ctx, client.ObjectKeyFromObject(secret), secret)).To(Succeed())
	renewed := f.secret(f.token)
	secret.Data, secret.StringData = renewed.Data, renewed.StringData
	h.g.Expect(h.c.Update(ctx, secret)).To(Succeed())
	h.g.Eventually(func(g Gomega) []string { return lines(rawTree(g, rdb, "guestbook")) }, timeout, interval).Should(Equal(f.ownTree()),
		"the cluster's own tree, on the new token, long before the backoff ends")
}

// Argo CD's API server sends each view of a uid in an Application's tree to the destination it
// reads from the Application at that request, so the tree of an Application moved off its
// cluster's channel (its destination aimed at the hub, its project changed to one that does not
// permit the cluster) loses its uids at once, with nothing else changed: no new status from the
// cluster, no renewal. Before, the tree kept them until its renewal (up to 30 min), and a tenant
// who moved its Application to the in-cluster server read and patched the hub's objects of the
// same names through the views (issue 92; the admission policy of config/admission refuses the
// move itself: test/install TestThePolicyKeepsAPullModelApplicationOnItsDestination).
func TestATreeLosesItsUidsTheMomentItsApplicationLeavesItsChannel(t *testing.T) {
	f := onItsChannel(t, time.Second, nil)
	h, rdb := f.h, f.rdb
	ctx := context.Background()
	h.create(f.secret(f.token))
	f.deliverGuestbook(t)
	h.g.Eventually(func(g Gomega) []string { return lines(rawTree(g, rdb, "guestbook")) }, timeout, interval).Should(Equal(f.ownTree()))

	noUID := func(g Gomega) {
		for _, l := range lines(rawTree(g, rdb, "guestbook")) {
			g.Expect(strings.Fields(l)).To(HaveLen(2), "a node with a uid: %s", l)
		}
	}
	move := func(path []string, value any) {
		app := argocd.NewApplication()
		h.g.Expect(h.c.Get(ctx, client.ObjectKey{Namespace: h.ns, Name: "guestbook"}, app)).To(Succeed())
		patch := client.MergeFrom(app.DeepCopy())
		h.g.Expect(unstructured.SetNestedField(app.Object, value, path...)).To(Succeed())
		h.g.Expect(h.c.Patch(ctx, app, patch)).To(Succeed())
	}
	move([]string{"spec", "destination"}, map[string]any{"server": argocd.LocalServer, "namespace": f.guestbook})
	h.g.Eventually(noUID, timeout, interval).Should(Succeed(), "the destination aimed at the hub: no uid")

	move([]string{"spec", "destination"}, map[string]any{"name": f.cluster, "namespace": f.guestbook})
	h.g.Eventually(func(g Gomega) []string { return lines(rawTree(g, rdb, "guestbook")) }, timeout, interval).Should(Equal(f.ownTree()),
		"back on its cluster: the cluster's own tree again")

	narrow := argocd.NewAppProject()
	narrow.SetName("narrow")
	narrow.SetNamespace(h.ns)
	narrow.Object["spec"] = map[string]any{"sourceRepos": []any{"*"}, "sourceNamespaces": []any{h.ns},
		"destinations": []any{map[string]any{"name": "another-cluster", "namespace": "*"}}}
	h.create(narrow)
	move([]string{"spec", "project"}, "narrow")
	h.g.Eventually(noUID, timeout, interval).Should(Succeed(), "a project that does not permit its cluster: no uid")
}

// Argo CD finds a tree by the Application's name, and sends each view of it to the destination of
// the Application it finds at that request: an Application deleted and made again at once under
// the name, aimed elsewhere, would find the first one's tree of uids for as long as the tree
// outlives it (issue 92). So the name and its destination are recorded for the hub's admission
// policy (internal/viewholders; the policy's refusal: TestAnApplicationMadeAgainKeepsTheDestination-
// ItsNameHoldsATreeFor in test/install) before the name's first tree of uids, and the record goes
// only once the tree has gone with the Application.
func TestANameHoldsItsClustersTreeOnlyWhileTheHubKnowsItsDestination(t *testing.T) {
	f := onItsChannel(t, time.Second, nil)
	h, rdb := f.h, f.rdb
	ctx := context.Background()
	h.create(f.secret(f.token))
	key := viewholders.Key(h.ns, "guestbook")
	recorded := func() (string, bool) {
		held := &v1alpha1.ResourceViewHolders{}
		if err := h.c.Get(ctx, client.ObjectKey{Namespace: h.ns, Name: viewholders.ObjectName(viewholders.Shard(key))}, held); err != nil {
			return "", false
		}
		v, ok := held.Holders[key]
		return v, ok
	}
	f.deliverGuestbook(t)
	// At the first sight of a uid, the record is there.
	h.g.Eventually(func(g Gomega) []string { return lines(rawTree(g, rdb, "guestbook")) }, timeout, 10*time.Millisecond).Should(Equal(f.ownTree()))
	value, ok := recorded()
	h.g.Expect(ok).To(BeTrue(), "a tree of uids before its name's record")
	h.g.Expect(value).To(Equal(f.cluster+" "), "the destination: the cluster's name, no server")

	app := argocd.NewApplication()
	app.SetNamespace(h.ns)
	app.SetName("guestbook")
	h.g.Expect(h.c.Delete(ctx, app)).To(Succeed())
	h.g.Eventually(func() bool { _, ok := recorded(); return ok }, timeout, interval).Should(BeFalse(), "the record, once the Application went")
	h.g.Expect(rawTree(h.g, rdb, "guestbook")).To(BeNil(), "the record released while the tree still stood")
}

// The views read only what the Application's AppProject permits on its destination, as Argo CD's
// application controller puts in a tree only what IsLiveResourcePermitted admits: a tenant whose
// status (Applications have no status subresource) or whose Git lists an object of another
// namespace on its cluster (here kube-system's extension-apiserver-authentication, which every
// apiserver holds) or a cluster-scoped object its project does not whitelist (the ClusterRole
// cluster-admin) gets no uid for it, and the object is never read; the hub Application says which
// and why. Before, the read-only account read both and the views served them to the tenant
// (issue 92, hole 2). What the project permits keeps its uids.
func TestTheViewsReadOnlyWhatTheApplicationsProjectPermitsThere(t *testing.T) {
	f := onItsChannel(t, time.Second, nil)
	h, rdb := f.h, f.rdb
	ctx := context.Background()
	h.create(f.secret(f.token))
	team := argocd.NewAppProject()
	team.SetName("team")
	team.SetNamespace(h.ns)
	team.Object["spec"] = map[string]any{"sourceRepos": []any{"*"}, "sourceNamespaces": []any{h.ns},
		"destinations": []any{map[string]any{"name": f.cluster, "namespace": f.guestbook}}}
	h.create(team)
	h.documentsApp("guestbook", f.cluster)
	app := argocd.NewApplication()
	h.g.Expect(h.c.Get(ctx, client.ObjectKey{Namespace: h.ns, Name: "guestbook"}, app)).To(Succeed())
	patch := client.MergeFrom(app.DeepCopy())
	app.Object["spec"].(map[string]any)["destination"] = map[string]any{"name": f.cluster, "namespace": f.guestbook}
	app.Object["spec"].(map[string]any)["project"] = "team"
	h.g.Expect(h.c.Patch(ctx, app, patch)).To(Succeed())
	h.report("guestbook", f.cluster, h.work("guestbook", f.cluster).Generation, managedMultiSourceFeedback(t, func(status map[string]any) {
		resources := status["resources"].([]any)
		for _, r := range resources {
			r.(map[string]any)["namespace"] = f.guestbook
		}
		status["resources"] = append(resources,
			map[string]any{"version": "v1", "kind": "ConfigMap", "namespace": "kube-system", "name": "extension-apiserver-authentication", "status": "Synced"},
			map[string]any{"group": "rbac.authorization.k8s.io", "version": "v1", "kind": "ClusterRole", "name": "cluster-admin", "status": "Synced"})
	}))

	want := append(f.ownTree(), "ConfigMap/extension-apiserver-authentication  Healthy", "ClusterRole/cluster-admin  Healthy")
	h.g.Eventually(func(g Gomega) []string { return lines(rawTree(g, rdb, "guestbook")) }, timeout, interval).Should(ConsistOf(want),
		"the guestbook's uids from the cluster; no uid for what the project does not permit there")
	h.g.Eventually(func() string {
		return argocd.ConditionMessage(h.getApp("guestbook"), appstatus.FeedbackWarningCondition)
	}, timeout, interval).Should(
		And(ContainSubstring("2 resources"), ContainSubstring("AppProject team does not permit namespace kube-system on cluster "+f.cluster)),
		"the hub Application says which were not read, and why")
	for _, m := range managedOf(h.g, rdb, "guestbook") {
		h.g.Expect(m).NotTo(MatchRegexp(`^(ConfigMap|ClusterRole)/.* live=[^f]`), "no live state of what the project does not permit")
	}

	// The grant changes under the tree: the project narrows its namespaced kinds to ConfigMaps.
	// The Deployment, the Service and their children lose their uids at once, with no change of
	// the Application or of what its cluster reports.
	h.g.Expect(h.c.Get(ctx, client.ObjectKeyFromObject(team), team)).To(Succeed())
	patch = client.MergeFrom(team.DeepCopy())
	team.Object["spec"].(map[string]any)["namespaceResourceWhitelist"] = []any{map[string]any{"group": "", "kind": "ConfigMap"}}
	h.g.Expect(h.c.Patch(ctx, team, patch)).To(Succeed())
	h.g.Eventually(func(g Gomega) {
		for _, l := range lines(rawTree(g, rdb, "guestbook")) {
			g.Expect(strings.Fields(l)).To(HaveLen(2), "a node with a uid: %s", l)
		}
	}, timeout, interval).Should(Succeed(), "no uid for what the narrowed project no longer permits")
}

// Revocation stops the views at once: an Application whose right to its cluster goes (here its
// namespace's binding to the cluster's set) has its work frozen, and a frozen work no longer counts
// as delivered for the views: its tree loses the cluster's uids with no other change. Before, the
// tenant kept reading the cluster through the views until the tree's renewal (issue 92, hole 6).
func TestRevocationStopsTheViewsAtOnce(t *testing.T) {
	f := onItsChannel(t, time.Second, nil)
	h, rdb := f.h, f.rdb
	h.create(f.secret(f.token))
	f.deliverGuestbook(t)
	h.g.Eventually(func(g Gomega) []string { return lines(rawTree(g, rdb, "guestbook")) }, timeout, interval).Should(Equal(f.ownTree()))

	binding := &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: "set-" + f.cluster, Namespace: h.ns}}
	h.g.Expect(h.c.Delete(context.Background(), binding)).To(Succeed())
	h.g.Eventually(func() map[string]string { return h.work("guestbook", f.cluster).Annotations }, timeout, interval).Should(HaveKey(api.FrozenAnnotation))
	h.g.Eventually(func(g Gomega) []string { return lines(rawTree(g, rdb, "guestbook")) }, timeout, interval).Should(Equal(
		[]string{"Service/guestbook-ui  Healthy", "Deployment/guestbook-ui  Healthy"}), "the frozen Application's tree: the display tree, no uid")

	// The right back, the work delivered again: the cluster's own tree returns.
	h.create(&clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: "set-" + f.cluster, Namespace: h.ns},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "set-" + f.cluster}})
	h.g.Eventually(func(g Gomega) []string { return lines(rawTree(g, rdb, "guestbook")) }, timeout, interval).Should(Equal(f.ownTree()),
		"thawed: the cluster's own tree again")
}

// deliverGuestbook delivers the documents' guestbook to the fixture's cluster, aimed at the
// cluster by name (the hardened template), in the AppProject default, and reports its resources
// in the namespace that holds them on the cluster.
func (f channelFixture) deliverGuestbook(t *testing.T) {
	t.Helper()
	h, ctx := f.h, context.Background()
	h.project("default", h.ns)
	h.documentsApp("guestbook", f.cluster)
	app := argocd.NewApplication()
	h.g.Expect(h.c.Get(ctx, client.ObjectKey{Namespace: h.ns, Name: "guestbook"}, app)).To(Succeed())
	patch := client.MergeFrom(app.DeepCopy())
	h.g.Expect(unstructured.SetNestedField(app.Object, map[string]any{"name": f.cluster, "namespace": f.guestbook}, "spec", "destination")).To(Succeed())
	h.g.Expect(h.c.Patch(ctx, app, patch)).To(Succeed())
	h.report("guestbook", f.cluster, h.work("guestbook", f.cluster).Generation, managedMultiSourceFeedback(t, func(status map[string]any) {
		for _, r := range status["resources"].([]any) {
			r.(map[string]any)["namespace"] = f.guestbook
		}
	}))
}

// ownTree is the guestbook's tree as its cluster holds it: uids from the cluster, the ReplicaSet
// and the Pod (Pending: no kubelet) under their owners.
func (f channelFixture) ownTree() []string {
	return []string{
		"Service/guestbook-ui " + f.uids["Service"] + " Healthy",
		"Deployment/guestbook-ui " + f.uids["Deployment"] + " Healthy",
		"ReplicaSet/guestbook-ui-85985d774c " + f.uids["ReplicaSet"] + " Progressing <- Deployment/guestbook-ui",
		"Pod/guestbook-ui-85985d774c-x7b2q " + f.uids["Pod"] + " Progressing <- ReplicaSet/guestbook-ui-85985d774c",
	}
}

// A cluster's failed-read mark belongs to the channel (server and credentials) that failed. The race
// it closes: a reconcile still reading with the old token fails just after the secret took a new
// one; the new token is read at once all the same, and its own failure is news to the cluster's
// other Applications.
func TestAFailedReadHoldsOnlyItsOwnChannel(t *testing.T) {
	g := NewWithT(t)
	ct := &ClusterTrees{wentDown: make(chan event.GenericEvent, 4)}
	now := time.Now()
	old := channelOf(&rest.Config{Host: "https://proxy/cluster1", BearerToken: "old"})
	renewed := channelOf(&rest.Config{Host: "https://proxy/cluster1", BearerToken: "new"})
	g.Expect(renewed).NotTo(Equal(old))
	g.Expect(channelOf(&rest.Config{Host: "https://proxy/cluster1", BearerToken: "old", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca")}})).NotTo(Equal(old), "another CA is another channel")

	ct.failed("cluster1", old, "Unauthorized", now)
	g.Expect(ct.wentDown).To(HaveLen(1), "the cluster's Applications are told once")
	why, _, down := ct.downFor("cluster1", old, now.Add(time.Second))
	g.Expect(down).To(BeTrue())
	g.Expect(why).To(Equal("Unauthorized"))
	_, _, down = ct.downFor("cluster1", renewed, now.Add(time.Second))
	g.Expect(down).To(BeFalse(), "a new token is read at once")
	_, _, down = ct.downFor("cluster2", old, now)
	g.Expect(down).To(BeFalse(), "another cluster")
	_, _, down = ct.downFor("cluster1", old, now.Add(clusterTreeBackoff))
	g.Expect(down).To(BeFalse(), "the backoff ended")

	ct.failed("cluster1", old, "Unauthorized", now.Add(2*time.Second))
	g.Expect(ct.wentDown).To(HaveLen(1), "the same channel failing again is no news")
	ct.failed("cluster1", renewed, "connection refused", now.Add(3*time.Second))
	g.Expect(ct.wentDown).To(HaveLen(2), "the new channel failing is")
	why, _, down = ct.downFor("cluster1", renewed, now.Add(4*time.Second))
	g.Expect(down).To(BeTrue())
	g.Expect(why).To(Equal("connection refused"))

	ct.read("cluster1", old, now)
	_, _, down = ct.downFor("cluster1", renewed, now.Add(4*time.Second))
	g.Expect(down).To(BeTrue(), "a read through another channel leaves the mark")
	ct.read("cluster1", renewed, now)
	_, _, down = ct.downFor("cluster1", renewed, now.Add(4*time.Second))
	g.Expect(down).To(BeFalse(), "a read through it ends it")

	// The probe asks the clusters read within the TTL, and no cluster marked down since.
	ct.read("cluster2", old, now.Add(-2*time.Hour))
	g.Expect(ct.toProbe(now, time.Hour)).To(Equal([]string{"cluster1"}), "cluster2's trees were not read within the TTL")
	g.Expect(ct.toProbe(now, 3*time.Hour)).To(Equal([]string{"cluster1"}), "and it is forgotten")
	ct.failed("cluster1", renewed, "Unauthorized", now)
	g.Expect(ct.toProbe(now, time.Hour)).To(BeEmpty(), "a cluster down is read again after its backoff, not probed")
}

// A cluster's reads wait 10 s after its first failed read, so that a channel back after a moment
// gives the views back within seconds, and twice as long after each failure after it through the
// same channel, up to a minute; a read that succeeds, or another channel (a new token), starts
// again from 10 s.
func TestAClusterThatKeepsFailingIsReadLessOften(t *testing.T) {
	g := NewWithT(t)
	ct := &ClusterTrees{}
	now := time.Now()
	old := channelOf(&rest.Config{Host: "https://proxy/cluster1", BearerToken: "old"})
	renewed := channelOf(&rest.Config{Host: "https://proxy/cluster1", BearerToken: "new"})
	var waits []time.Duration
	for range 5 {
		waits = append(waits, ct.failed("cluster1", old, "connection refused", now))
	}
	g.Expect(waits).To(Equal([]time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, time.Minute, time.Minute}))
	_, wait, down := ct.downFor("cluster1", old, now.Add(30*time.Second))
	g.Expect(down).To(BeTrue())
	g.Expect(wait).To(Equal(30*time.Second), "the wait left of the last failure's minute")

	g.Expect(ct.failed("cluster1", renewed, "Unauthorized", now)).To(Equal(10*time.Second), "a new token starts again")
	ct.read("cluster1", renewed, now)
	g.Expect(ct.failed("cluster1", renewed, "Unauthorized", now)).To(Equal(10*time.Second), "after a read, a failure is the first again")
}

// channelFixture is a managed cluster on OCM's channel for the tree controller's tests: a real
// apiserver behind a stand-in for cluster-proxy's user server, the guestbook's objects on it (uids
// by kind) in a namespace of the test's own, a read-only token of it, the hub's redis, and the
// controllers started with the channel.
type channelFixture struct {
	h                         *harness
	rdb                       *redis.Client
	proxy                     *userServer
	cs                        kubernetes.Interface
	cluster, guestbook, token string
	uids                      map[string]string
}

// onItsChannel starts a channelFixture whose cluster reads back off for backoff after each failure;
// more sets more options (nil: none).
func onItsChannel(t *testing.T, backoff time.Duration, more func(o *Options)) channelFixture {
	t.Helper()
	managed := testenv.GetManaged(t)
	cs, err := kubernetes.NewForConfig(managed.Config)
	if err != nil {
		t.Fatal(err)
	}
	f := channelFixture{cs: cs, guestbook: managed.Namespace(t)}
	f.uids = guestbookOnCluster(t, cs, f.guestbook)
	f.token = readOnlyToken(t, managed.Config, f.guestbook)
	addr := testenv.Redis(t, "s3cret")
	f.rdb = redis.NewClient(&redis.Options{Addr: addr, Password: "s3cret"})
	t.Cleanup(func() { _ = f.rdb.Close() })
	f.proxy = newUserServer(t, managed.Config)
	wasFirst, was := clusterTreeFirstBackoff, clusterTreeBackoff
	clusterTreeFirstBackoff, clusterTreeBackoff = backoff, backoff
	t.Cleanup(func() { clusterTreeFirstBackoff, clusterTreeBackoff = wasFirst, was })
	f.h = start(t, func(o *Options, _ string) {
		o.ResourceTree.Address = addr
		o.Channel = f.proxy.channel
		if more != nil {
			more(o)
		}
	})
	f.h.redisSecret("s3cret")
	f.cluster = f.h.cluster()
	f.proxy.cluster.Store(f.cluster)
	return f
}

// secret is the cluster's secret as the GitOpsCluster controller writes it for
// managedServiceAccountRef, with token.
func (f channelFixture) secret(token string) *corev1.Secret {
	return gitops.WithAccess(gitops.ClusterSecret(&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: f.cluster}}, f.h.ns, f.h.ns+"/gitops"),
		f.proxy.channel, clusteraccess.Access{Server: f.proxy.channel.Server(f.cluster), Token: clusteraccess.Token{Value: token}})
}

// One read of a cluster at a time: a cluster that answers slowly holds one worker at most, for its
// read's deadline, and its other Applications come back a moment later instead of waiting in the
// other workers (issue 92, hole 5; the read's own budget and deadline: TestAReadHasABudgetAndADeadline).
func TestOneReadOfAClusterAtATime(t *testing.T) {
	ct := &ClusterTrees{}
	if !ct.begin("cluster1") {
		t.Fatal("the first read of cluster1 must start")
	}
	if ct.begin("cluster1") {
		t.Error("a second read of cluster1 started while the first is under way")
	}
	if !ct.begin("cluster2") {
		t.Error("a read of another cluster must start")
	}
	ct.end("cluster1")
	if !ct.begin("cluster1") {
		t.Error("a read of cluster1 must start once the first ended")
	}
}

// A tree some of whose reads the cluster refused with 403 is read once more soon: the account's
// rights come by a ManifestWork of their own, and the first tree after the channel came may be read
// before the cluster applied them (the lab's demo met it: TestTheDemosHardenedApplicationShowsTheClustersOwnResources).
// Once only: a kind outside the account's rights would be read again at every retry otherwise.
func TestARefusedReadIsTriedOnceMoreSoon(t *testing.T) {
	renew := 30 * time.Minute
	first := builtTree{forbidden: true}.next(renew, treeRecord{})
	if first > forbiddenRetry+time.Second {
		t.Errorf("a first refused read: next in %s, want within %s", first, forbiddenRetry+time.Second)
	}
	if again := (builtTree{forbidden: true}).next(renew, treeRecord{forbidden: true}); again != renew {
		t.Errorf("refused again: next in %s, want the renewal (%s)", again, renew)
	}
	if read := (builtTree{}).next(renew, treeRecord{forbidden: true}); read != renew {
		t.Errorf("read: next in %s, want the renewal (%s)", read, renew)
	}
}
