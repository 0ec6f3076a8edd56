package controller

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/resourcetree"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

// treeJSON reads Application name's tree from redis as Argo CD's API server does (gzip'd JSON under
// its key); nil when there is none.
func treeJSON(g Gomega, rdb *redis.Client, name string) []byte {
	return cached(g, rdb, "app|resources-tree|"+name+"|1.8.3.gz")
}

// cached is the JSON of a gzip'd value of the hub Argo CD's cache, nil when there is none.
func cached(g Gomega, rdb *redis.Client, key string) []byte {
	raw, err := rdb.Get(context.Background(), key).Bytes()
	if err == redis.Nil {
		return nil
	}
	g.Expect(err).NotTo(HaveOccurred())
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	g.Expect(err).NotTo(HaveOccurred())
	data, err := io.ReadAll(zr)
	g.Expect(err).NotTo(HaveOccurred())
	return data
}

// treeOf is Application name's display tree (treeJSON), nil when there is none: no node has a uid
// or a parent, each has a health.
func treeOf(g Gomega, rdb *redis.Client, name string) *resourcetree.Tree {
	data := treeJSON(g, rdb, name)
	if data == nil {
		return nil
	}
	var tree map[string]any
	g.Expect(json.Unmarshal(data, &tree)).To(Succeed())
	nodes, _ := tree["nodes"].([]any)
	for _, n := range nodes {
		node := n.(map[string]any)
		g.Expect(node).NotTo(HaveKey("uid"), "display-only: no node has a uid")
		g.Expect(node).NotTo(HaveKey("parentRefs"))
		g.Expect(node).To(HaveKey("health"))
	}
	var out resourcetree.Tree
	g.Expect(json.Unmarshal(data, &out)).To(Succeed())
	return &out
}

// redisSecret writes Argo CD's argocd-redis Secret in the test's Argo CD namespace.
func (h *harness) redisSecret(password string) {
	h.t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "argocd-redis"}, Data: map[string][]byte{"auth": []byte(password)}}
	if err := h.c.Create(context.Background(), s); err != nil {
		h.g.Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
		h.g.Expect(h.c.Update(context.Background(), s)).To(Succeed())
	}
}

// The documents' Application gets a display tree in the hub Argo CD's redis from what its cluster
// reports: each resource with its health, no uid; written when the resources change and not when
// they do not, again after a restart, and removed with the Application.
func TestTheHubArgoCDCacheHoldsADisplayTreeOfWhatTheClusterReports(t *testing.T) {
	addr := testenv.Redis(t, "s3cret")
	rdb := redis.NewClient(&redis.Options{Addr: addr, Password: "s3cret"})
	defer func() { _ = rdb.Close() }()
	withRedis := func(o *Options, _ string) { o.ResourceTree.Address = addr }
	h := start(t, withRedis)
	h.redisSecret("s3cret")
	cluster := h.cluster()
	h.documentsApp("guestbook", cluster)
	w := h.work("guestbook", cluster)
	h.report("guestbook", cluster, w.Generation, managedMultiSourceFeedback(t, nil))

	want := []resourcetree.Node{
		{Ref: resourcetree.Ref{Version: "v1", Kind: "Service", Namespace: "guestbook", Name: "guestbook-ui"}, Health: resourcetree.Health{Status: "Healthy"}},
		{Ref: resourcetree.Ref{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui"}, Health: resourcetree.Health{Status: "Healthy"}},
	}
	h.g.Eventually(func(g Gomega) {
		tree := treeOf(g, rdb, "guestbook")
		g.Expect(tree).NotTo(BeNil())
		g.Expect(tree.Nodes).To(Equal(want))
	}, timeout, interval).Should(Succeed())
	ttl := rdb.TTL(context.Background(), "app|resources-tree|guestbook|1.8.3.gz").Val()
	h.g.Expect(ttl).To(BeNumerically("~", time.Hour, time.Minute), "Argo CD's own TTL")

	// The cluster's Argo CD reconciles again and reports the same resources: nothing is written.
	h.g.Expect(rdb.ConfigResetStat(context.Background()).Err()).To(Succeed())
	h.report("guestbook", cluster, w.Generation, managedMultiSourceFeedback(t, func(s map[string]any) {
		s["operationState"].(map[string]any)["message"] = "successfully synced again"
	}))
	h.g.Eventually(func() string { return statusField(h.getApp("guestbook"), "operationState", "message") }, timeout, interval).Should(Equal("successfully synced again"))
	h.g.Consistently(func() string { return commandStats(rdb) }, 2*time.Second, interval).ShouldNot(ContainSubstring("cmdstat_set:"))

	// A resource turns Degraded: the tree follows.
	status := func(s map[string]any) {
		res := s["resources"].([]any)
		res[1].(map[string]any)["health"] = map[string]any{"status": "Degraded", "message": "free text"}
	}
	h.report("guestbook", cluster, w.Generation, managedMultiSourceFeedback(t, status))
	want[1].Health.Status = "Degraded"
	h.g.Eventually(func(g Gomega) { g.Expect(treeOf(g, rdb, "guestbook").Nodes).To(Equal(want)) }, timeout, interval).Should(Succeed())

	// A restart finds an empty cache (a restarted redis): the tree is written again.
	h.stop()
	h.g.Expect(rdb.FlushAll(context.Background()).Err()).To(Succeed())
	restarted := start(t, func(o *Options, ns string) { o.ArgoCDNamespace = h.ns; withRedis(o, ns) })
	restarted.g.Eventually(func(g Gomega) {
		tree := treeOf(g, rdb, "guestbook")
		g.Expect(tree).NotTo(BeNil())
		g.Expect(tree.Nodes).To(Equal(want))
	}, timeout, interval).Should(Succeed())

	// Deleted, its tree goes.
	app := h.getApp("guestbook")
	h.g.Expect(h.c.Delete(context.Background(), app)).To(Succeed())
	h.g.Eventually(func() int64 { return rdb.Exists(context.Background(), "app|resources-tree|guestbook|1.8.3.gz").Val() }, timeout, interval).Should(BeZero())
}

func commandStats(rdb *redis.Client) string {
	s, _ := rdb.Info(context.Background(), "commandstats").Result()
	return s
}

// With the redis password wrong, delivery and status go on, the Application says why its tree is
// missing (once), and a rotated Secret is picked up without a restart.
func TestAnUnwritableRedisStopsNothingAndSaysWhy(t *testing.T) {
	addr := testenv.Redis(t, "s3cret")
	rdb := redis.NewClient(&redis.Options{Addr: addr, Password: "s3cret"})
	defer func() { _ = rdb.Close() }()
	h := start(t, func(o *Options, _ string) { o.ResourceTree.Address = addr })
	h.redisSecret("wrong")
	h.reportedDocumentsApp(t)
	h.g.Eventually(func() []string { return h.eventsFor("guestbook") }, timeout, interval).Should(ContainElement(And(
		HavePrefix(ReasonTreeNotWritten+": The resource tree is not in the hub Argo CD's cache"), ContainSubstring("the hub's redis "+addr), ContainSubstring("WRONGPASS"))))
	h.g.Expect(treeOf(h.g, rdb, "guestbook")).To(BeNil())

	h.redisSecret("s3cret")
	h.g.Eventually(func(g Gomega) { g.Expect(treeOf(g, rdb, "guestbook")).NotTo(BeNil()) }, 30*time.Second, interval).Should(Succeed())
	h.g.Eventually(func() []string { return h.eventsFor("guestbook") }, timeout, interval).Should(ContainElement(HavePrefix(ReasonTreeWritten + ":")))
	notWritten := 0
	for _, e := range h.eventsFor("guestbook") {
		if strings.HasPrefix(e, ReasonTreeNotWritten) {
			notWritten++
		}
	}
	h.g.Expect(notWritten).To(Equal(1), "said once, not at each retry")
	resources, _, _ := unstructured.NestedSlice(h.getApp("guestbook").Object, "status", "resources")
	h.g.Expect(resources).To(HaveLen(2))
}

// The hub's Argo CD writes its own trees at another cache version than argocd-pull's: it would
// not read argocd-pull's, so none is written, and the Application says why; delivery and status
// go on.
func TestNoTreeIsWrittenForAnArgoCDThatReadsAnotherCacheVersion(t *testing.T) {
	addr := testenv.Redis(t, "")
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer func() { _ = rdb.Close() }()
	h := start(t, func(o *Options, _ string) { o.ResourceTree.Address = addr })
	// A push-model Application's tree, as the hub's own Argo CD controller writes it.
	h.g.Expect(rdb.Set(context.Background(), "app|resources-tree|push-model|1.9.0.gz", "x", time.Hour).Err()).To(Succeed())
	h.reportedDocumentsApp(t)
	h.g.Eventually(func() []string { return h.eventsFor("guestbook") }, timeout, interval).Should(ContainElement(And(
		HavePrefix(ReasonTreeNotWritten+":"), ContainSubstring("the hub's Argo CD writes its cache at version 1.9.0, and argocd-pull writes 1.8.3, which it does not read"))))
	keys, err := rdb.Keys(context.Background(), "*").Result()
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(keys).To(ConsistOf("app|resources-tree|push-model|1.9.0.gz"), "no tree written")
}

// reportedDocumentsApp delivers the documents' Application "guestbook" to a new cluster, which
// reports it Healthy, and waits until the hub shows that: status goes on whatever the tree.
func (h *harness) reportedDocumentsApp(t *testing.T) {
	t.Helper()
	cluster := h.cluster()
	h.documentsApp("guestbook", cluster)
	w := h.work("guestbook", cluster)
	h.report("guestbook", cluster, w.Generation, managedMultiSourceFeedback(t, nil))
	h.g.Eventually(func() string { return statusField(h.getApp("guestbook"), "health", "status") }, timeout, interval).Should(Equal("Healthy"), "status goes on")
}

// Applications have no status subresource: whoever may update an Application writes its status,
// resources included. A tree goes into the hub Argo CD's cache only for an Application argocd-pull
// delivers (its work exists), never for a pull-labelled one that it does not take (outside
// --pull-namespaces) or refuses (a cluster not bound to its namespace), whose resources its tenant
// wrote.
func TestNoTreeIsWrittenForAnApplicationArgoCDPullDoesNotDeliver(t *testing.T) {
	addr := testenv.Redis(t, "")
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer func() { _ = rdb.Close() }()
	h := start(t, func(o *Options, _ string) { o.ResourceTree.Address = addr })
	outside := h.ns + "-outside"
	ensureNS(h, outside)
	forged := []any{map[string]any{"version": "v1", "kind": "Secret", "namespace": h.ns, "name": "argocd-secret", "status": "Synced", "health": map[string]any{"status": "Healthy"}}}
	withResources := func(u *unstructured.Unstructured) { u.Object["status"] = map[string]any{"resources": forged} }

	notTaken := h.newApp("not-taken", h.cluster())
	notTaken.SetNamespace(outside)
	withResources(notTaken)
	h.create(notTaken)
	h.app("refused", h.unboundCluster(), withResources)
	// A delivered one beside them: its tree shows the controller wrote the trees it may.
	delivered := h.cluster()
	h.app("delivered", delivered)
	h.report("delivered", delivered, h.work("delivered", delivered).Generation, map[string]string{manifestwork.FeedbackHealth: "Healthy", manifestwork.FeedbackSync: "Synced",
		manifestwork.FeedbackResources: `[{"version":"v1","kind":"ConfigMap","namespace":"guestbook","name":"ui","status":"Synced","health":{"status":"Healthy"}}]`})
	h.g.Eventually(func(g Gomega) { g.Expect(treeOf(g, rdb, "delivered")).NotTo(BeNil()) }, timeout, interval).Should(Succeed())
	h.g.Consistently(func() []string {
		keys, _ := rdb.Keys(context.Background(), "app|resources-tree|*").Result()
		return keys
	}, 3*time.Second, 100*time.Millisecond).Should(ConsistOf("app|resources-tree|delivered|1.8.3.gz"))
}
