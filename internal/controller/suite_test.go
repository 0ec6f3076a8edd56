package controller

import (
	"context"
	"fmt"
	"maps"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/metrics"
	"github.com/argocd-pull/argocd-pull/internal/scheme"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

// wrapClient, when set, wraps the client of the managers start starts from then on (the
// controllers' reads of the cache and writes to the apiserver), as recordWrites wraps their
// transport.
var wrapClient func(client.Client) client.Client

func TestMain(m *testing.M) {
	// Controller logs are noise in a passing run; ARGOCD_PULL_TEST_LOGS=1 shows them.
	if os.Getenv("ARGOCD_PULL_TEST_LOGS") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	} else {
		ctrl.SetLogger(logr.Discard())
	}
	testenv.Main(m)
}

const (
	timeout  = 20 * time.Second
	interval = 50 * time.Millisecond
)

// harness runs the real manager, built by ManagerOptions and Setup as main builds it, against the
// package's apiserver, with the test's namespace as the Argo CD namespace.
type harness struct {
	t  testing.TB
	g  *WithT
	c  client.Client // reads straight from the apiserver, not the manager's cache
	ns string
	// stop stops the manager (once): a test that restarts it with other options stops it first.
	stop func()
	// agentClaims maps each work the harness's agent claimed (see work) to the generations before
	// and after the controller held it.
	agentClaims map[types.NamespacedName][2]int64
	// onCluster is what the managed clusters have of the Applications their claim probes ask
	// about, by cluster and "<namespace>/<name>" there: nothing unless a test says (onClusterHas).
	// answerProbes answers with it.
	mu        *sync.Mutex
	onCluster map[string]map[string]testenv.OnCluster
	// silent are the clusters whose agents do not answer their probes (silence).
	silent map[string]bool
}

func start(t testing.TB, mutate ...func(o *Options, ns string)) *harness {
	t.Helper()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	opts := DefaultOptions()
	opts.ArgoCDNamespace = ns
	for _, m := range mutate {
		m(&opts, ns)
	}
	s, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	mopts := ManagerOptions(s, opts)
	mopts.Metrics = metricsserver.Options{BindAddress: "0"}
	cfg := metrics.CountAPIRequests(env.Config)
	if recordWrites != nil {
		cfg.Wrap(recordWrites)
	}
	if wrapClient != nil {
		wrap := wrapClient
		mopts.NewClient = func(config *rest.Config, options client.Options) (client.Client, error) {
			c, err := client.New(config, options)
			if err != nil {
				return nil, err
			}
			return wrap(c), nil
		}
	}
	mgr, err := ctrl.NewManager(cfg, mopts)
	if err != nil {
		t.Fatalf("creating manager: %v", err)
	}
	if err := Setup(mgr, opts); err != nil {
		t.Fatalf("setting up controllers: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	h := &harness{t: t, g: NewWithT(t), c: env.Client, ns: ns, mu: &sync.Mutex{}, onCluster: map[string]map[string]testenv.OnCluster{}, silent: map[string]bool{}}
	go h.answerProbes(ctx)
	var once sync.Once
	h.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager stopped with an error: %v", err)
				if strings.Contains(err.Error(), "grace period") {
					// Which runnable did not stop: the goroutines of this package's code and of
					// controller-runtime, as they are now.
					t.Logf("goroutines at the missed shutdown:\n%s", runnableStacks())
				}
			}
		})
	}
	t.Cleanup(func() {
		h.stop()
		h.removeApplications()
		if n := reconcilePanics(t); n > 0 {
			t.Errorf("controllers panicked %v times", n)
		}
	})
	return h
}

// answerProbes answers every claim probe as its cluster's work agent would, from onCluster, until
// ctx ends (testenv.AnswerProbes).
func (h *harness) answerProbes(ctx context.Context) {
	testenv.AnswerProbes(ctx, h.c, interval, func(cluster string) (map[string]testenv.OnCluster, bool) {
		h.mu.Lock()
		defer h.mu.Unlock()
		return maps.Clone(h.onCluster[cluster]), !h.silent[cluster]
	})
}

// silence makes cluster's agent stop answering its claim probe (silent), or answer again.
func (h *harness) silence(cluster string, silent bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.silent[cluster] = silent
}

// onClusterHas says that cluster has the Application namespace/name there (it == nil: no longer).
func (h *harness) onClusterHas(cluster, namespace, name string, it *testenv.OnCluster) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.onCluster[cluster] == nil {
		h.onCluster[cluster] = map[string]testenv.OnCluster{}
	}
	if it == nil {
		delete(h.onCluster[cluster], namespace+"/"+name)
		return
	}
	h.onCluster[cluster][namespace+"/"+name] = *it
}

// removeApplications deletes the test's Applications so later tests' managers do not see them.
func (h *harness) removeApplications() {
	apps := argocd.NewApplicationList()
	if err := h.c.List(context.Background(), apps, client.InNamespace(h.ns)); err != nil {
		return
	}
	for i := range apps.Items {
		app := &apps.Items[i]
		if len(app.GetFinalizers()) > 0 {
			patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
			_ = h.c.Patch(context.Background(), app, patch)
		}
		_ = h.c.Delete(context.Background(), app)
	}
}

func reconcilePanics(t testing.TB) float64 {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Errorf("gathering metrics: %v", err)
		return 0
	}
	var total float64
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_panics_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			total += counterValue(m)
		}
	}
	return total
}

func counterValue(m *dto.Metric) float64 {
	if m.GetCounter() == nil {
		return 0
	}
	return m.GetCounter().GetValue()
}

// cluster registers a managed cluster bound to the test namespace through a ManagedClusterSet,
// with its namespace on the hub, and returns its name.
func (h *harness) cluster() string {
	h.t.Helper()
	name := h.unboundCluster()
	set := &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "set-" + name}}
	h.create(set)
	h.labelCluster(name, clusterv1beta2.ClusterSetLabel, set.Name)
	h.create(&clusterv1beta2.ManagedClusterSetBinding{
		ObjectMeta: metav1.ObjectMeta{Name: set.Name, Namespace: h.ns},
		Spec:       clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: set.Name},
	})
	return name
}

// createClusterWithoutNamespace registers a bound managed cluster whose hub namespace is missing.
func (h *harness) createClusterWithoutNamespace(name string) {
	h.t.Helper()
	h.create(&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{clusterv1beta2.ClusterSetLabel: "set-" + name}}})
	set := &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "set-" + name}}
	h.create(set)
	h.create(&clusterv1beta2.ManagedClusterSetBinding{
		ObjectMeta: metav1.ObjectMeta{Name: set.Name, Namespace: h.ns},
		Spec:       clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: set.Name},
	})
}

// unboundCluster registers a managed cluster and its namespace, bound to no namespace.
func (h *harness) unboundCluster() string {
	h.t.Helper()
	name := "c-" + utilrand.String(8)
	h.create(&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}})
	h.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	return name
}

func (h *harness) labelCluster(name, key, value string) {
	h.t.Helper()
	mc := &clusterv1.ManagedCluster{}
	h.g.Expect(h.c.Get(context.Background(), types.NamespacedName{Name: name}, mc)).To(Succeed())
	if mc.Labels == nil {
		mc.Labels = map[string]string{}
	}
	mc.Labels[key] = value
	h.g.Expect(h.c.Update(context.Background(), mc)).To(Succeed())
}

func (h *harness) create(obj client.Object) {
	h.t.Helper()
	if err := h.c.Create(context.Background(), obj); err != nil {
		h.t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// newApp returns a pull-model Application for cluster in the test namespace, not yet created.
func (h *harness) newApp(name, cluster string) *unstructured.Unstructured {
	app := argocd.NewApplication()
	app.SetName(name)
	app.SetNamespace(h.ns)
	app.SetLabels(map[string]string{api.PullLabel: "true"})
	app.SetAnnotations(map[string]string{api.ClusterAnnotation: cluster, argocd.SkipReconcileAnnotation: "true"})
	app.Object["spec"] = map[string]any{
		"project":     "default",
		"source":      map[string]any{"repoURL": "https://git.example/apps", "path": "guestbook", "targetRevision": "main"},
		"destination": map[string]any{"server": "https://" + cluster + "-control-plane:6443", "namespace": "guestbook"},
	}
	return app
}

func (h *harness) app(name, cluster string, mutate ...func(*unstructured.Unstructured)) *unstructured.Unstructured {
	h.t.Helper()
	app := h.newApp(name, cluster)
	for _, m := range mutate {
		m(app)
	}
	h.create(app)
	return app
}

func (h *harness) getApp(name string) *unstructured.Unstructured {
	h.t.Helper()
	app := argocd.NewApplication()
	h.g.Expect(h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: name}, app)).To(Succeed())
	return app
}

// updateApp re-reads the Application, mutates it and updates it, retrying on conflicts.
func (h *harness) updateApp(name string, mutate func(*unstructured.Unstructured)) {
	h.t.Helper()
	h.g.Eventually(func() error {
		app := h.getApp(name)
		mutate(app)
		return h.c.Update(context.Background(), app)
	}, timeout, interval).Should(Succeed())
}

func workKey(ns, app, cluster string) types.NamespacedName {
	return types.NamespacedName{Namespace: cluster, Name: manifestwork.WorkName(ns, app)}
}

// work waits for the work of the test's Application name on cluster and returns it.
// work returns the Application's work on cluster as the work agent leaves it once it has created
// the Application: the agent reports that the Application carries its hub Application's name, and
// the controller holds the work (manifestwork.Hold), which the agent applies at once. Nothing else
// is reported. (On a work whose Application was another's, that one is gone and the agent created
// the hub's.) writtenWork returns it as the controller wrote it.
func (h *harness) work(name, cluster string) *workv1.ManifestWork {
	h.t.Helper()
	w := h.writtenWork(name, cluster)
	if manifestwork.Held(w) {
		if meta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied) == nil {
			// Created held (the claim probe found the name free): the agent creates the
			// Application and reports it, as below.
			h.agentWrites(name, cluster, w.Generation, nil)
			h.g.Expect(h.c.Get(context.Background(), client.ObjectKeyFromObject(w), w)).To(Succeed())
		}
		return w
	}
	key := client.ObjectKeyFromObject(w)
	pending := w.Generation
	h.g.Eventually(func() error {
		got := &workv1.ManifestWork{}
		if err := h.c.Get(context.Background(), key, got); err != nil {
			return err
		}
		testenv.SetAgentStatus(got, got.Generation, h.ns, name, nil)
		return h.c.Status().Update(context.Background(), got)
	}, timeout, interval).Should(Succeed())
	h.g.Eventually(func() error {
		if err := h.c.Get(context.Background(), key, w); err != nil {
			return err
		}
		if !manifestwork.Held(w) {
			return fmt.Errorf("ManifestWork %s not held yet", key)
		}
		testenv.SetAgentStatus(w, w.Generation, h.ns, name, nil)
		return h.c.Status().Update(context.Background(), w)
	}, timeout, interval).Should(Succeed(), "the controller holds the ManifestWork of %s on %s once its Application is the hub's", name, cluster)
	if h.agentClaims == nil {
		h.agentClaims = map[types.NamespacedName][2]int64{}
	}
	h.agentClaims[key] = [2]int64{pending, w.Generation}
	return w
}

// writtenWork returns the Application's work on cluster as the controller wrote it.
func (h *harness) writtenWork(name, cluster string) *workv1.ManifestWork {
	h.t.Helper()
	w := &workv1.ManifestWork{}
	h.g.Eventually(func() error {
		return h.c.Get(context.Background(), workKey(h.ns, name, cluster), w)
	}, timeout, interval).Should(Succeed(), "ManifestWork of %s on %s", name, cluster)
	return w
}

func (h *harness) workGone(name, cluster string) {
	h.t.Helper()
	h.g.Eventually(func() bool {
		err := h.c.Get(context.Background(), workKey(h.ns, name, cluster), &workv1.ManifestWork{})
		return apierrors.IsNotFound(err)
	}, timeout, interval).Should(BeTrue(), "ManifestWork of %s on %s should be deleted", name, cluster)
}

// noWorkFor asserts that no ManifestWork points back to the Application, for a while.
func (h *harness) noWorkFor(name string) {
	h.t.Helper()
	h.g.Consistently(func() []workv1.ManifestWork {
		return h.worksOf(name)
	}, 2*time.Second, 200*time.Millisecond).Should(BeEmpty())
}

func (h *harness) worksOf(name string) []workv1.ManifestWork {
	all := &workv1.ManifestWorkList{}
	h.g.Expect(h.c.List(context.Background(), all)).To(Succeed())
	var out []workv1.ManifestWork
	for _, w := range all.Items {
		if w.Annotations[api.HubApplicationNamespaceAnnotation] == h.ns && w.Annotations[api.HubApplicationNameAnnotation] == name {
			out = append(out, w)
		}
	}
	return out
}

// condition returns the message of argocd-pull's condition on the Application, "" if none.
func (h *harness) condition(name string) string { return propagationError(h.getApp(name)) }

// eventsFor returns "reason: note" of the events about the Application.
// events are the events recorded for Application name.
func (h *harness) events(name string) []corev1.Event {
	list := &corev1.EventList{}
	h.g.Expect(h.c.List(context.Background(), list, client.InNamespace(h.ns))).To(Succeed())
	var out []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.InvolvedObject.Kind == "Application" {
			out = append(out, e)
		}
	}
	return out
}

// warnings are the reasons of the Warning events recorded for Application name.
func (h *harness) warnings(name string) []string {
	var out []string
	for _, e := range h.events(name) {
		if e.Type == corev1.EventTypeWarning {
			out = append(out, e.Reason)
		}
	}
	return out
}

// eventsFor is "<reason>: <message>" of each event recorded for Application name.
func (h *harness) eventsFor(name string) []string {
	var out []string
	for _, e := range h.events(name) {
		out = append(out, e.Reason+": "+e.Message)
	}
	return out
}

// report writes work status as the work agent would: Applied at generation applied, and feedback.
// The agent first creates the Application (see work): a generation from before the controller
// held the work means the held one.
func (h *harness) report(name, cluster string, appliedGeneration int64, values map[string]string) {
	h.t.Helper()
	w := h.work(name, cluster)
	if g := h.agentClaims[client.ObjectKeyFromObject(w)]; appliedGeneration == g[0] {
		appliedGeneration = g[1]
	}
	h.agentWrites(name, cluster, appliedGeneration, values)
}

// agentWrites writes work status as the work agent would, and nothing more (see report).
func (h *harness) agentWrites(name, cluster string, appliedGeneration int64, values map[string]string) {
	h.t.Helper()
	h.g.Eventually(func() error {
		w := &workv1.ManifestWork{}
		if err := h.c.Get(context.Background(), workKey(h.ns, name, cluster), w); err != nil {
			return err
		}
		testenv.SetAgentStatus(w, appliedGeneration, h.ns, name, values)
		return h.c.Status().Update(context.Background(), w)
	}, timeout, interval).Should(Succeed())
}

func statusField(app *unstructured.Unstructured, path ...string) string {
	v, _, _ := unstructured.NestedString(app.Object, append([]string{"status"}, path...)...)
	return v
}

// runnableStacks are the stacks of the goroutines running argocd-pull's or controller-runtime's
// code, for a manager that missed its shutdown grace.
func runnableStacks() string {
	var buf strings.Builder
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 2); err != nil {
		return err.Error()
	}
	var out []string
	for _, g := range strings.Split(buf.String(), "\n\n") {
		if strings.Contains(g, "sigs.k8s.io/controller-runtime") || strings.Contains(g, "argocd-pull/internal/") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}
