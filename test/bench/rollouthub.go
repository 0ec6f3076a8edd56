package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
	gitopsv1beta1 "github.com/argocd-pull/argocd-pull/api/v1beta1"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/assets"
	"github.com/argocd-pull/argocd-pull/internal/gitops"
	"github.com/argocd-pull/argocd-pull/internal/localproc"
	"github.com/argocd-pull/argocd-pull/internal/sandbox"
	"github.com/argocd-pull/argocd-pull/internal/scheme"
	"github.com/argocd-pull/argocd-pull/internal/test/simagent"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

// rolloutPlacement is the Placement the rollout ApplicationSets take their clusters from.
const rolloutPlacement = "bench-placement"

// rolloutHub is a hub for the rollout scenarios: a real apiserver with the fleet's clusters, the
// real OCM placement controller, argocd-pull, the real ApplicationSet controller with progressive
// syncs, and the clusters simulated (simagent), one watch of its namespace each.
type rolloutHub struct {
	env     *testenv.Env
	c       client.Client
	ctl     *controllerProcess
	appSets *localproc.Process
	// appSetsLog is the ApplicationSet controller's log; appSetsPprof the URL of its profiles.
	appSetsLog, appSetsPprof string
	placement                *localproc.Process
	// sim simulates the clusters behind argocd-pull; push, in the limit scenario, the clusters'
	// Argo CD acting on the hub Applications themselves (no argocd-pull runs). One is nil.
	sim     *simagent.Fleet
	push    *simagent.Push
	obs     *rolloutObserver
	logPath string // argocd-pull's log
	cancel  context.CancelFunc
}

func startRolloutHub(ctx context.Context, cfg config, ro rolloutConfig, f fleet, b simagent.Behaviour) (h *rolloutHub, err error) {
	h = &rolloutHub{obs: newRolloutObserver()}
	root, err := assets.RepoRoot()
	if err != nil {
		return nil, err
	}
	crds, err := assets.HubCRDs(root)
	if err != nil {
		return nil, err
	}
	ocmAPI, err := assets.OCMAPIDir(root)
	if err != nil {
		return nil, err
	}
	// The placement controller also reads AddOnPlacementScores.
	if h.env, err = testenv.StartWithCRDs(append(crds, filepath.Join(ocmAPI, "cluster", "v1alpha1"))...); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			h.stop()
		}
	}()
	rc := rest.CopyConfig(h.env.Config)
	rc.QPS, rc.Burst = -1, 0
	s, err := scheme.New()
	if err != nil {
		return h, err
	}
	if h.c, err = client.New(rc, client.Options{Scheme: s}); err != nil {
		return h, err
	}
	if err := f.createClusters(ctx, h.c, cfg.workers, cfg.lease, cfg.progress); err != nil {
		return h, err
	}
	argoVersion, err := assets.ArgoCDVersion(root)
	if err != nil {
		return h, err
	}
	if err := sandbox.InstallArgoConfig(ctx, h.c, root, argoVersion, argoNamespace); err != nil {
		return h, err
	}
	if err := sandbox.CreateDefaultProject(ctx, h.c, argoNamespace); err != nil {
		return h, err
	}
	objs := []client.Object{sandbox.Placement(rolloutPlacement, argoNamespace, clusterSet)}
	if !ro.push {
		objs = append(objs, sandbox.GitOpsCluster(rolloutPlacement, argoNamespace))
	} else {
		// What the GitOpsCluster would write: the placement generator's ConfigMap, and the same
		// cluster secrets the ApplicationSet controller watches (and the cluster generator reads).
		objs = append(objs, gitops.PlacementGenerator(argoNamespace))
		if err := f.createClusterSecrets(ctx, h.c, cfg.workers); err != nil {
			return h, fmt.Errorf("registering the clusters with Argo CD: %w", err)
		}
	}
	for _, obj := range objs {
		if err := h.c.Create(ctx, obj); err != nil {
			return h, fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}

	kubeconfig := filepath.Join(cfg.logDir, fmt.Sprintf("rollout-%shub-%d.kubeconfig", ro.logPrefix(), len(f.clusters)))
	if err := h.env.WriteKubeconfig(kubeconfig); err != nil {
		return h, err
	}
	ocmBin, err := assets.OCMBinDir(root)
	if err != nil {
		return h, err
	}
	listen, err := localproc.FreeAddr()
	if err != nil {
		return h, err
	}
	if h.placement, err = localproc.Start(filepath.Join(cfg.logDir, fmt.Sprintf("rollout-%splacement-%d.log", ro.logPrefix(), len(f.clusters))),
		filepath.Join(ocmBin, "placement"), []string{"--kubeconfig=" + kubeconfig, "--disable-leader-election", "--listen=" + listen}); err != nil {
		return h, err
	}
	h.appSetsLog = filepath.Join(cfg.logDir, fmt.Sprintf("rollout-%sapplicationset-controller-%d.log", ro.logPrefix(), len(f.clusters)))
	h.logPath = filepath.Join(cfg.logDir, fmt.Sprintf("rollout-controller-%d.log", len(f.clusters)))
	if ro.push {
		h.logPath = h.appSetsLog // what waits name when they give up
	} else if h.ctl, err = startController(ctx, cfg.controller, kubeconfig, h.logPath, cfg.controllerArgs(), cfg.env); err != nil {
		return h, err
	}
	if err := h.awaitClustersRegistered(ctx, ro, len(f.clusters)); err != nil {
		return h, err
	}
	cfg.progress("the OCM placement controller, %s", ro.describeHub(len(f.clusters)))

	cctx, cancel := context.WithCancel(ctx)
	h.cancel = cancel
	if ro.push {
		h.push = simagent.NewPush(h.c, b)
		h.push.OnChange = h.obs.simEvent
	} else {
		h.sim = simagent.New(h.c, b)
		h.sim.OnChange = h.obs.simEvent
	}
	if err := h.watch(cctx, rc, f); err != nil {
		return h, err
	}
	if ro.push {
		h.push.Run(cctx, cfg.workers)
	} else {
		h.sim.Run(cctx, cfg.workers)
	}
	(&registrationAgents{c: h.c, clusters: f.clusters, duration: cfg.lease}).run(cctx)

	argoBin, err := assets.ArgoCDBinDir(root, argoVersion)
	if err != nil {
		return h, err
	}
	addrs := make([]string, 3)
	for i := range addrs {
		if addrs[i], err = localproc.FreeAddr(); err != nil {
			return h, err
		}
	}
	args, env := sandbox.ApplicationSetControllerArgs(kubeconfig, argoNamespace, addrs[0], addrs[1], addrs[2])
	env = append(env, fmt.Sprintf("ARGOCD_K8S_CLIENT_QPS=%g", ro.appSetQPS), fmt.Sprintf("ARGOCD_K8S_CLIENT_BURST=%d", int(2*ro.appSetQPS)))
	if ro.appSetMaxResources > 0 {
		env = append(env, fmt.Sprintf("ARGOCD_APPLICATIONSET_CONTROLLER_MAX_RESOURCES_STATUS_COUNT=%d", ro.appSetMaxResources))
	}
	if cfg.profile > 0 {
		// Its profiles answer only while this file says true (in a cluster, the mounted
		// argocd-cmd-params-cm's applicationsetcontroller.profile.enabled).
		enabled := filepath.Join(cfg.logDir, "applicationset-controller-profiler.enabled")
		if err := os.WriteFile(enabled, []byte("true"), 0o644); err != nil {
			return h, err
		}
		env = append(env, "ARGOCD_ENABLE_PROFILER_FILE_PATH="+enabled)
		h.appSetsPprof = "http://" + addrs[0] + "/debug/pprof"
	}
	if h.appSets, err = localproc.Start(h.appSetsLog, filepath.Join(argoBin, "argocd"), args, env...); err != nil {
		return h, err
	}
	cfg.progress("the Argo CD ApplicationSet controller (progressive syncs), %d simulated clusters", len(f.clusters))
	return h, nil
}

// awaitClustersRegistered waits, behind argocd-pull, for its GitOpsCluster to register every
// cluster with Argo CD; the limit scenario has no argocd-pull, and its Applications' destination
// (the in-cluster server) needs no cluster registered.
func (h *rolloutHub) awaitClustersRegistered(ctx context.Context, ro rolloutConfig, clusters int) error {
	if ro.push {
		return nil
	}
	return waitFor(ctx, 5*time.Minute, "the GitOpsCluster Ready (every cluster registered with Argo CD)", h.logPath, func() (bool, string) {
		gc := &gitopsv1beta1.GitOpsCluster{}
		if err := h.c.Get(ctx, client.ObjectKey{Namespace: argoNamespace, Name: sandbox.GitOpsClusterName}, gc); err != nil {
			return false, err.Error()
		}
		ready := meta.FindStatusCondition(gc.Status.Conditions, gitopsv1beta1.ReadyCondition)
		if ready == nil {
			return false, "no Ready condition yet"
		}
		return ready.Status == metav1.ConditionTrue, ready.Message
	})
}

// cpuClock reads the CPU seconds the hub's processes used so far, the ApplicationSet
// controller's with them.
func (h *rolloutHub) cpuClock() cpuClock {
	c := readCPUClock(h.ctl)
	if u, err := procUsage(h.appSets.PID()); err == nil {
		c.appSets = u.CPUSeconds
	}
	return c
}

// storedUpdate names, in apiserverWrites, the updates that reached etcd: "applications stored".
const storedUpdate = "stored"

// apiserverWrites reads the apiserver's own count of the writes it answered so far, by resource
// (with its subresource) and verb: "applications PATCH", "manifestworks/status PATCH"; and by
// resource the updates it stored in etcd ("applications stored": its PATCHes and PUTs, those of
// its subresources too, less those that changed nothing).
func (h *rolloutHub) apiserverWrites(ctx context.Context) (map[string]float64, error) {
	hc, err := rest.HTTPClientFor(h.env.Config)
	if err != nil {
		return nil, err
	}
	families, err := fetchMetrics(ctx, hc, strings.TrimSuffix(h.env.Config.Host, "/")+"/metrics")
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, m := range families["apiserver_request_total"].GetMetric() {
		verb := label(m, "verb")
		switch verb {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		default:
			continue
		}
		resource := label(m, "resource")
		if sub := label(m, "subresource"); sub != "" {
			resource += "/" + sub
		}
		out[resource+" "+verb] += m.GetCounter().GetValue()
	}
	// What reached etcd: a write that changes nothing is answered without one.
	for _, m := range families["etcd_requests_total"].GetMetric() {
		if label(m, "operation") == "update" {
			out[label(m, "resource")+" "+storedUpdate] += m.GetCounter().GetValue()
		}
	}
	return out, nil
}

// profile keeps, in the background, CPU profiles of argocd-pull, of the ApplicationSet
// controller and of the apiserver for cfg.profile, in
// cfg.logDir/<name>-{argocd-pull,applicationset-controller,apiserver}.pprof, and what argocd-pull
// and the apiserver allocate in the same time, in <name>-{argocd-pull,apiserver}.allocs.pprof;
// nothing when cfg.profile is 0.
func (h *rolloutHub) profile(ctx context.Context, cfg config, name string) {
	if cfg.profile <= 0 {
		return
	}
	if h.ctl != nil {
		h.ctl.profile(ctx, cfg, name+"-argocd-pull.pprof")
		go keepProfile(ctx, cfg, h.ctl.pprof+"/"+allocsProfile(cfg), name+"-argocd-pull.allocs.pprof")
	}
	if h.appSetsPprof != "" {
		go keepProfile(ctx, cfg, h.appSetsPprof+"/"+cpuProfile(cfg), name+"-applicationset-controller.pprof")
	}
	apiserverProfile(ctx, cfg, h.env.Config, cpuProfile(cfg), name+"-apiserver.pprof")
	apiserverProfile(ctx, cfg, h.env.Config, allocsProfile(cfg), name+"-apiserver.allocs.pprof")
}

// watch starts the simulated agents' watches (one per cluster namespace) and the observer's
// (the hub Applications and reports).
func (h *rolloutHub) watch(ctx context.Context, rc *rest.Config, f fleet) error {
	s, err := scheme.New()
	if err != nil {
		return err
	}
	perCluster := make(map[string]cache.Config, len(f.clusters))
	for _, cluster := range f.clusters {
		perCluster[cluster] = cache.Config{}
	}
	c, err := cache.New(rc, cache.Options{Scheme: s, ByObject: map[client.Object]cache.ByObject{
		&workv1.ManifestWork{}: {Namespaces: perCluster}}})
	if err != nil {
		return err
	}
	handle := func(obj client.Object, h toolscache.ResourceEventHandler) error {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return err
		}
		_, err = inf.AddEventHandler(h)
		return err
	}
	if err := handle(&workv1.ManifestWork{}, toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { h.observeWork(o) },
		UpdateFunc: func(_, o any) { h.observeWork(o) },
		DeleteFunc: func(o any) {
			if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if w, ok := o.(*workv1.ManifestWork); ok && h.sim != nil {
				h.sim.Forget(types.NamespacedName{Namespace: w.Namespace, Name: w.Name})
			}
		},
	}); err != nil {
		return err
	}
	onApp := func(o any) {
		if app, ok := o.(*unstructured.Unstructured); ok {
			h.obs.hubEvent(app)
			if h.push != nil {
				h.push.Observe(app)
			}
		}
	}
	onAppDeleted := func(o any) {
		if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		if app, ok := o.(*unstructured.Unstructured); ok && h.push != nil {
			h.push.Forget(client.ObjectKeyFromObject(app))
		}
	}
	if err := handle(argocd.NewApplication(), toolscache.ResourceEventHandlerFuncs{AddFunc: onApp, UpdateFunc: func(_, o any) { onApp(o) }, DeleteFunc: onAppDeleted}); err != nil {
		return err
	}
	onReport := func(o any) {
		if r, ok := o.(*v1alpha1.MulticlusterApplicationSetReport); ok {
			h.obs.reportEvent(r)
		}
	}
	if err := handle(&v1alpha1.MulticlusterApplicationSetReport{}, toolscache.ResourceEventHandlerFuncs{AddFunc: onReport, UpdateFunc: func(_, o any) { onReport(o) }}); err != nil {
		return err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return fmt.Errorf("the benchmark's cache did not sync")
	}
	return nil
}

func (h *rolloutHub) observeWork(o any) {
	if w, ok := o.(*workv1.ManifestWork); ok && h.sim != nil {
		h.sim.Observe(w)
	}
}

// scrape reads argocd-pull's metrics; empty in the limit scenario, or when they do not answer.
func (h *rolloutHub) scrape(ctx context.Context) metricsSnapshot {
	if h.ctl == nil {
		return metricsSnapshot{}
	}
	snap, err := h.ctl.scrape(ctx)
	if err != nil {
		return metricsSnapshot{}
	}
	return snap
}

// agentWrites counts the simulated clusters' writes to the hub: their work agents' status
// writes, or in the limit scenario their Argo CD's writes to the hub Applications.
func (h *rolloutHub) agentWrites() int64 {
	if h.push != nil {
		return h.push.Writes.Load()
	}
	return h.sim.Writes.Load()
}

// redeliveries counts the sync requests some cluster started twice.
func (h *rolloutHub) redeliveries() int {
	if h.push != nil {
		return h.push.Redeliveries()
	}
	return h.sim.Redeliveries()
}

// simApp is the simulated cluster's Application: by its work's key, or in the limit scenario by
// the hub Application's.
func (h *rolloutHub) simApp(work, app types.NamespacedName) (simagent.App, bool) {
	if h.push != nil {
		return h.push.App(app)
	}
	return h.sim.App(work)
}

// stop stops every process of the hub and the apiserver.
func (h *rolloutHub) stop() {
	if h.cancel != nil {
		h.cancel()
	}
	for _, p := range []*localproc.Process{h.appSets, h.placement} {
		if p != nil {
			p.Stop()
		}
	}
	if h.ctl != nil {
		h.ctl.Stop()
	}
	if h.env != nil {
		_ = h.env.Stop()
	}
}

// endOfReconcile is what the ApplicationSet controller logs at the end of a reconcile that ran to
// its end: msg="end reconcile in 5.275728108s".
var endOfReconcile = regexp.MustCompile(`msg="end reconcile in ([0-9.]+[a-zµ]+)"`)

// reconcileDurations reads how long the ApplicationSet controller's reconciles took from its log.
func reconcileDurations(log []byte) []time.Duration {
	var out []time.Duration
	for _, m := range endOfReconcile.FindAllSubmatch(log, -1) {
		if d, err := time.ParseDuration(string(m[1])); err == nil {
			out = append(out, d)
		}
	}
	return out
}
