package simagent

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// requestedSync creates in ns a hub Application with a sync request, as the ApplicationSet
// controller's RollingSync writes one.
func requestedSync(ctx context.Context, g Gomega, c client.Client, ns string) *unstructured.Unstructured {
	app := argocd.NewApplication()
	app.SetNamespace(ns)
	app.SetName("guestbook")
	app.Object["spec"] = map[string]any{"project": "default", "destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": "guestbook"},
		"source": map[string]any{"repoURL": "https://github.com/argoproj/argocd-example-apps.git", "path": "guestbook", "targetRevision": "v1"}}
	app.Object["operation"] = map[string]any{"initiatedBy": map[string]any{"username": "applicationset-controller", "automated": true}, "sync": map[string]any{}}
	g.Expect(c.Create(ctx, app)).To(Succeed())
	return app
}

// The push-model fleet syncs a hub Application on the request the hub carries, writes the outcome
// to that Application and removes the finished request, as Argo CD does on the cluster it runs
// on; seeing its own write come back, it writes nothing more.
func TestPushSyncsTheHubApplicationItself(t *testing.T) {
	env := testenv.Get(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	app := requestedSync(ctx, g, env.Client, env.Namespace(t))

	p := NewPush(env.Client, Behaviour{SyncDuration: 200 * time.Millisecond})
	p.Run(ctx, 2)
	observe := func() *unstructured.Unstructured {
		got := argocd.NewApplication()
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(app), got)).To(Succeed())
		p.Observe(got) // as the benchmark's watch hands it over
		return got
	}
	observe()
	g.Eventually(func(g Gomega) {
		got := observe()
		g.Expect(got.Object).NotTo(HaveKey("operation"), "the finished request is removed from the hub Application")
		phase, _, _ := unstructured.NestedString(got.Object, "status", "operationState", "phase")
		g.Expect(phase).To(Equal("Succeeded"))
		sync, _, _ := unstructured.NestedString(got.Object, "status", "sync", "status")
		g.Expect(sync).To(Equal("Synced"))
		revision, _, _ := unstructured.NestedString(got.Object, "status", "sync", "revision")
		g.Expect(revision).To(Equal(Resolve("v1")))
	}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
	sim, ok := p.App(client.ObjectKeyFromObject(app))
	g.Expect(ok).To(BeTrue())
	g.Expect(sim.Runs()).To(Equal(1))

	writes := p.Writes.Load()
	g.Expect(writes).To(BeNumerically(">=", 2), "the sync's start and its end, each written")
	for range 5 {
		observe()
		time.Sleep(100 * time.Millisecond)
	}
	g.Expect(p.Writes.Load()).To(Equal(writes), "its own writes seen again are no change")
	g.Expect(p.Redeliveries()).To(BeZero())
}

// A version of the hub Application read while the sync ran (its request still there) and handed
// over after the push wrote the sync's end is older than that write: the finished sync does not
// run again. (A caller's own Get, as the test above makes, did this under load.)
func TestPushDoesNotRunAFinishedSyncForAVersionReadBeforeItsEnd(t *testing.T) {
	env := testenv.Get(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	app := requestedSync(ctx, g, env.Client, env.Namespace(t))

	p := NewPush(env.Client, Behaviour{SyncDuration: 2 * time.Second})
	p.Run(ctx, 2)
	p.Observe(app)
	get := func() *unstructured.Unstructured {
		got := argocd.NewApplication()
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(app), got)).To(Succeed())
		return got
	}
	// Read while the sync runs: its start written, its request still on the Application.
	var running *unstructured.Unstructured
	g.Eventually(func(g Gomega) {
		running = get()
		phase, _, _ := unstructured.NestedString(running.Object, "status", "operationState", "phase")
		g.Expect(phase).To(Equal("Running"))
		g.Expect(running.Object).To(HaveKey("operation"))
	}, 10*time.Second, 20*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(get().Object).NotTo(HaveKey("operation"), "the finished request is removed from the hub Application")
	}, 10*time.Second, 50*time.Millisecond).Should(Succeed())

	writes := p.Writes.Load()
	p.Observe(running)
	time.Sleep(time.Second)
	sim, ok := p.App(client.ObjectKeyFromObject(app))
	g.Expect(ok).To(BeTrue())
	g.Expect(sim.Runs()).To(Equal(1), "the sync ran again for a version older than its own end")
	g.Expect(p.Writes.Load()).To(Equal(writes))
	g.Expect(p.Redeliveries()).To(BeZero())
}
