package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/scheme"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

type config struct {
	controller  string
	concurrency int
	qps         float32
	burst       int
	changes     int
	changeRate  float64
	workers     int
	logDir      string
	resync      time.Duration // the simulated Argo CDs' reconciliation period (0: none)
	jitter      time.Duration
	steady      time.Duration // length of the steady-state phase (0: none)
	steadyRate  float64       // feedback changes per second during it
	lease       time.Duration // each cluster's lease duration, renewed that often (0: no leases)
	profile     time.Duration // length of the controller CPU profiles (0: none)
	extraArgs   []string
	env         []string // the controller's own environment (--controller-env)
	progress    func(string, ...any)
}

func (c config) controllerArgs() []string {
	return append([]string{fmt.Sprintf("--concurrency=%d", c.concurrency), fmt.Sprintf("--kube-api-qps=%g", c.qps),
		fmt.Sprintf("--kube-api-burst=%d", c.burst), "--argocd-namespace=" + argoNamespace}, c.extraArgs...)
}

// measure runs every phase at one size against a fresh apiserver.
func measure(ctx context.Context, cfg config, clusters, appSets int) (res result, err error) {
	f := newFleet(clusters, appSets)
	res = result{Clusters: clusters, ApplicationSets: appSets, Applications: f.apps(), ControllerFlags: cfg.controllerArgs(), ControllerEnv: cfg.env}
	env, err := testenv.Start()
	if err != nil {
		return res, err
	}
	defer func() {
		if stopErr := env.Stop(); stopErr != nil && err == nil {
			err = stopErr
		}
	}()
	rc := rest.CopyConfig(env.Config)
	rc.QPS, rc.Burst = -1, 0
	s, err := scheme.New()
	if err != nil {
		return res, err
	}
	c, err := client.New(rc, client.Options{Scheme: s})
	if err != nil {
		return res, err
	}
	if res.Prices, err = measurePrices(ctx, c, 100, 1000); err != nil {
		return res, fmt.Errorf("measuring the price of each write: %w", err)
	}
	cfg.progress("prices, one request at a time: %s", res.Prices)
	if err := f.create(ctx, c, cfg.workers, cfg.lease, cfg.progress); err != nil {
		return res, err
	}

	// The physical limit: the same works created by a plain client, then removed.
	if res.DirectPerSecond, _, err = directCreate(ctx, env.Config, f, cfg.concurrency, cfg.qps, cfg.burst, nil); err != nil {
		return res, err
	}
	cfg.progress("direct create with the controller's concurrency %d and limits (qps %g, burst %d): %.0f works/s", cfg.concurrency, cfg.qps, cfg.burst, res.DirectPerSecond)
	if res.DirectUnthrottledPerSecond, _, err = directCreate(ctx, env.Config, f, cfg.concurrency, -1, 0, nil); err != nil {
		return res, err
	}
	cfg.progress("direct create with concurrency %d and no client limit: %.0f works/s", cfg.concurrency, res.DirectUnthrottledPerSecond)

	// The simulated agents watch their clusters' namespaces, one watch each; the observers share
	// one watch of each kind. Every cluster's registration agent renews its lease from now on.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ag := newAgents(c, cfg.workers, cfg.resync, cfg.jitter)
	if err := watch(cctx, rc, s, f, ag); err != nil {
		return res, err
	}
	ag.run(cctx)
	go ag.reconcileLoop(cctx)
	reg := &registrationAgents{c: c, clusters: f.clusters, duration: cfg.lease}
	reg.run(cctx)
	res.WatchesPerCluster, res.LeaseDurationSeconds = 1, cfg.lease.Seconds()

	// The limit the controller is held to: direct creates while the agents answer each work, as
	// they answer the controller's.
	directStart := readCPUClock(nil)
	stopDirectProfile := apiserverPhaseProfile(ctx, cfg, env.Config, fmt.Sprintf("cpu-%d-direct-answered-apiserver", clusters))
	res.DirectAnsweredPerSecond, res.DirectToLastAnswerPerSecond, err = directCreate(ctx, env.Config, f, cfg.concurrency, cfg.qps, cfg.burst, ag)
	stopDirectProfile()
	if err != nil {
		return res, err
	}
	res.DirectAnsweredCPU = readCPUClock(nil).since(directStart)
	cfg.progress("direct create with the controller's concurrency and limits while the agents answer: %.0f works/s, %.0f works/s to the last answer (CPU: %s)",
		res.DirectAnsweredPerSecond, res.DirectToLastAnswerPerSecond, res.DirectAnsweredCPU)

	// The hub Argo CD's redis, where the controller writes the resource trees, as an install runs it.
	redisAddr, stopRedis, err := startRedis(filepath.Join(cfg.logDir, fmt.Sprintf("redis-%d.log", clusters)))
	if err != nil {
		return res, err
	}
	defer stopRedis()
	cfg.extraArgs = append(slices.Clone(cfg.extraArgs), "--argocd-redis="+redisAddr)
	res.ControllerFlags = cfg.controllerArgs()
	kubeconfig := filepath.Join(cfg.logDir, fmt.Sprintf("hub-%d.kubeconfig", clusters))
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		return res, err
	}
	logPath := filepath.Join(cfg.logDir, fmt.Sprintf("controller-%d.log", clusters))
	ctl, err := startController(ctx, cfg.controller, kubeconfig, logPath, cfg.controllerArgs(), cfg.env)
	if err != nil {
		return res, err
	}
	defer func() { ctl.Stop() }() // the controller running when measure returns
	propagationStart := readCPUClock(ctl)
	ctl.profile(ctx, cfg, fmt.Sprintf("cpu-%d-propagation.pprof", clusters))
	stopAPIServerProfile := apiserverPhaseProfile(ctx, cfg, env.Config, fmt.Sprintf("cpu-%d-propagation-apiserver", clusters))
	defer stopAPIServerProfile()

	// Propagation. The limits allow for 10 works/s and 10 report entries/s at least: far below any
	// run's rate, they only end a run that stalls.
	if err := waitFor(ctx, patience(f.apps()), "every ManifestWork", logPath, func() (bool, string) {
		n, _, _ := ag.workCount()
		return n == f.apps(), fmt.Sprintf("%d of %d works", n, f.apps())
	}); err != nil {
		return res, err
	}
	_, first, last := ag.workCount()
	res.FirstWorkSeconds = first.Sub(ctl.started).Seconds()
	res.PropagationSeconds = last.Sub(ctl.started).Seconds()
	res.PropagationPerSecond = float64(f.apps()) / res.PropagationSeconds
	res.PropagationRatio = res.PropagationPerSecond / res.DirectPerSecond
	res.PropagationToAnswered = res.PropagationPerSecond / res.DirectAnsweredPerSecond
	cfg.progress("propagation: %d works in %.1fs (first after %.1fs): %.0f works/s, %.2f of the direct rate, %.2f of the direct rate while the agents answer",
		f.apps(), res.PropagationSeconds, res.FirstWorkSeconds, res.PropagationPerSecond, res.PropagationRatio, res.PropagationToAnswered)
	// Both sides to their last answer: the direct create's clock stops at its last create, while
	// the pull model's window already holds the agents' answers to its claim probes.
	if err := waitFor(ctx, patience(f.apps()), "the agents answering every work", logPath, func() (bool, string) {
		n, _ := ag.answers()
		return n >= f.apps(), fmt.Sprintf("%d of %d works answered", n, f.apps())
	}); err != nil {
		return res, err
	}
	_, lastAnswer := ag.answers()
	res.PropagationToLastAnswerSeconds = lastAnswer.Sub(ctl.started).Seconds()
	res.PropagationToLastAnswerRatio = float64(f.apps()) / res.PropagationToLastAnswerSeconds / res.DirectToLastAnswerPerSecond
	cfg.progress("propagation to the last answer: %.1fs, %.2f of the direct create to its last answer", res.PropagationToLastAnswerSeconds, res.PropagationToLastAnswerRatio)
	if since, err := ctl.scrape(ctx); err == nil {
		res.PropagationReconciles = printBreakdown(cfg, metricsSnapshot{}, since)
	}

	// Every report lists every cluster at the initial revision.
	if err := waitFor(ctx, patience(f.apps()), "every report at the initial status", logPath, func() (bool, string) {
		n := ag.reportsAtInitial(clusters)
		return n == appSets, fmt.Sprintf("%d of %d reports", n, appSets)
	}); err != nil {
		return res, err
	}
	res.InitialReportSeconds = time.Since(ctl.started).Seconds()
	stopAPIServerProfile()
	res.FirstDelivery = summarize(ag.firstDeliveries(ctl.started))
	res.PropagationCPU = readCPUClock(ctl).since(propagationStart)
	ctl.heapProfile(ctx, cfg, fmt.Sprintf("heap-%d.pprof", clusters))
	if propagated, err := ctl.scrape(ctx); err == nil {
		res.RequestsPerApplication = total(propagated.Requests) / float64(f.apps())
		res.TreeWritesAtStart = new(propagated.trees())
	}
	cfg.progress("every report shows all %d clusters after %.1fs; %.2f controller requests per Application until then (CPU: %s); first delivery per Application after the controller's start: %s",
		clusters, res.InitialReportSeconds, res.RequestsPerApplication, res.PropagationCPU, res.FirstDelivery)

	// Status latency.
	before, err := ctl.scrape(ctx)
	if err != nil {
		return res, fmt.Errorf("reading the controller's metrics: %w", err)
	}
	if res.ChangesPerSecond, err = makeChanges(ctx, ag, f, "r", cfg.changes, cfg.changeRate, cfg.workers); err != nil {
		return res, fmt.Errorf("writing feedback changes: %w", err)
	}
	// Every Application's last change (at small sizes an Application changes more than once, and
	// a change overwritten before it arrived is never timed).
	if err := waitFor(ctx, 5*time.Minute, "every change at the hub Applications and reports", logPath, func() (bool, string) {
		n := ag.unsettled()
		return n == 0, fmt.Sprintf("%d Applications whose last change has not arrived", n)
	}); err != nil {
		return res, err
	}
	time.Sleep(time.Second) // late writes of the last changes
	after, err := ctl.scrape(ctx)
	if err != nil {
		return res, err
	}
	appLat, repLat := ag.latencies()
	res.AppStatusLatency, res.ReportLatency = summarize(appLat), summarize(repLat)
	res.WritesPerChange = (after.writes() - before.writes()) / float64(cfg.changes)
	res.TreeWritesPerChange = new((after.trees() - before.trees()) / float64(cfg.changes))
	cfg.progress("%d feedback changes at %.0f/s: -> hub Application %s; -> report %s; %.2f controller writes and %.2f resource-tree writes per change",
		cfg.changes, res.ChangesPerSecond, res.AppStatusLatency, res.ReportLatency, res.WritesPerChange, *res.TreeWritesPerChange)
	if n := ag.untimed(); n > 0 {
		cfg.progress("%d changes not timed at the report: their cluster was already left out of it as Synced and Healthy", n)
	}
	printBreakdown(cfg, before, after)

	if res.Controller, err = ctl.usage(); err != nil {
		return res, err
	}
	res.Requests = after.Requests
	res.ReportBytes, res.ReportNotes = ag.largestReport()
	res.AppBytesP50, res.AppBytesMax = ag.appSizes()
	cfg.progress("controller: peak RSS %.0f MiB, %.1f CPU seconds, %.0f API requests (%s)",
		res.Controller.PeakRSSMiB, res.Controller.CPUSeconds, total(after.Requests), formatRequests(after.Requests))

	if cfg.steady > 0 {
		if res.Steady, err = measureSteady(ctx, cfg, ag, reg, f, ctl); err != nil {
			return res, err
		}
	}

	// Restart at full size.
	ctl.Stop()
	ctl, err = startController(ctx, cfg.controller, kubeconfig, logPath, cfg.controllerArgs(), cfg.env)
	if err != nil {
		return res, err
	}
	var converged metricsSnapshot
	if err := waitFor(ctx, 10*time.Minute, "the restarted controller to converge", logPath, func() (bool, string) {
		m, err := ctl.scrape(ctx)
		if err != nil {
			return false, err.Error()
		}
		converged = m
		done := m.Reconciles["propagation"] >= float64(f.apps()) && m.Reconciles["appstatus"] >= float64(f.apps()) &&
			m.Reconciles["report"] >= float64(appSets) && m.QueueDepth == 0
		return done, fmt.Sprintf("reconciles %v, queued %.0f", m.Reconciles, m.QueueDepth)
	}); err != nil {
		return res, err
	}
	res.RestartSeconds = time.Since(ctl.started).Seconds()
	time.Sleep(3 * time.Second) // writes that follow the first pass, if any
	settled, err := ctl.scrape(ctx)
	if err != nil {
		return res, err
	}
	res.RestartWrites = settled.writes()
	cfg.progress("restart: converged in %.1fs with %.0f writes (%.0f reconciles)", res.RestartSeconds, res.RestartWrites, total(converged.Reconciles))
	return res, nil
}

// measureSteady runs the fleet at rest for cfg.steady with cfg.steadyRate changes a second, and
// measures what it costs the hub and how fast the changes arrive meanwhile.
func measureSteady(ctx context.Context, cfg config, ag *agents, reg *registrationAgents, f fleet, ctl *controllerProcess) (*steadyState, error) {
	st := &steadyState{ResyncSeconds: cfg.resync.Seconds()}
	ag.resetLatencies()
	before, err := ctl.scrape(ctx)
	if err != nil {
		return nil, err
	}
	cpuBefore, err := ctl.usage()
	if err != nil {
		return nil, err
	}
	writesBefore, leasesBefore := ag.writes.Load(), reg.writes.Load()
	clock := readCPUClock(ctl)
	ctl.profile(ctx, cfg, fmt.Sprintf("cpu-%d-steady.pprof", len(f.clusters)))
	began := time.Now()
	count := int(cfg.steadyRate * cfg.steady.Seconds())
	if st.ChangesPerSecond, err = makeChanges(ctx, ag, f, "s", count, cfg.steadyRate, cfg.workers); err != nil {
		return nil, err
	}
	if rest := cfg.steady - time.Since(began); rest > 0 {
		time.Sleep(rest)
	}
	// The last changes are part of the phase (and must not be left to the restart that follows).
	if err := waitFor(ctx, 5*time.Minute, "every steady-state change at the hub Applications and reports", "", func() (bool, string) {
		n := ag.unsettled()
		return n == 0, fmt.Sprintf("%d Applications whose last change has not arrived", n)
	}); err != nil {
		return nil, err
	}
	st.Seconds = time.Since(began).Seconds()
	after, err := ctl.scrape(ctx)
	if err != nil {
		return nil, err
	}
	cpuAfter, err := ctl.usage()
	if err != nil {
		return nil, err
	}
	st.CPU = readCPUClock(ctl).since(clock)
	st.AgentWritesPerSec = float64(ag.writes.Load()-writesBefore) / st.Seconds
	st.LeaseWritesPerSec = float64(reg.writes.Load()-leasesBefore) / st.Seconds
	st.ControllerWrites = (after.writes() - before.writes()) / st.Seconds
	st.TreeWritesPerSec = new((after.trees() - before.trees()) / st.Seconds)
	st.ControllerCPU = (cpuAfter.CPUSeconds - cpuBefore.CPUSeconds) / st.Seconds * 60
	appLat, repLat := ag.latencies()
	st.AppStatusLatency, st.ReportLatency = summarize(appLat), summarize(repLat)
	cfg.progress("steady state for %.0fs (Argo CD resync %s, %.0f changes/s): agents %.1f writes/s and %.1f lease writes/s, controller %.1f writes/s, %.2f resource-tree writes/s and %.1f CPU s/min; -> hub Application %s; -> report %s; CPU: %s",
		st.Seconds, cfg.resync, st.ChangesPerSecond, st.AgentWritesPerSec, st.LeaseWritesPerSec, st.ControllerWrites, *st.TreeWritesPerSec, st.ControllerCPU, st.AppStatusLatency, st.ReportLatency, st.CPU)
	return st, nil
}

// watch starts one cache for the simulated agents and the observers. As on a real hub, where each
// cluster's work agent watches the ManifestWorks of its own namespace, the agents' works come
// through one watch per cluster namespace.
func watch(ctx context.Context, rc *rest.Config, s *runtime.Scheme, f fleet, ag *agents) error {
	// Every work of the namespace, as the agent watches: the Applications' and the claim probe.
	perCluster := make(map[string]cache.Config, len(f.clusters))
	for _, cluster := range f.clusters {
		perCluster[cluster] = cache.Config{}
	}
	c, err := cache.New(rc, cache.Options{Scheme: s, ByObject: map[client.Object]cache.ByObject{
		&workv1.ManifestWork{}: {Namespaces: perCluster}}})
	if err != nil {
		return err
	}
	handle := func(obj client.Object, on func(any)) error {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return err
		}
		_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: on, UpdateFunc: func(_, n any) { on(n) }})
		return err
	}
	if err := handle(&workv1.ManifestWork{}, func(o any) {
		if w, ok := o.(*workv1.ManifestWork); ok {
			ag.workEvent(w)
		}
	}); err != nil {
		return err
	}
	if err := handle(argocd.NewApplication(), func(o any) {
		if app, ok := o.(*unstructured.Unstructured); ok {
			ag.appEvent(app)
		}
	}); err != nil {
		return err
	}
	if err := handle(&v1alpha1.MulticlusterApplicationSetReport{}, func(o any) {
		if r, ok := o.(*v1alpha1.MulticlusterApplicationSetReport); ok {
			data, _ := json.Marshal(r)
			ag.reportEvent(r, len(data))
		}
	}); err != nil {
		return err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return fmt.Errorf("the benchmark's cache did not sync")
	}
	return nil
}

// patience is how long a phase that writes or answers one work per Application may take: at
// least 15 minutes, and 10 works a second for a larger fleet.
func patience(works int) time.Duration {
	return max(15*time.Minute, time.Duration(works)*100*time.Millisecond)
}

// waitFor polls cond every 100ms, printing its state every 10s, until it holds or timeout ends.
func waitFor(ctx context.Context, timeout time.Duration, what, logPath string, cond func() (bool, string)) error {
	return waitForProgress(ctx, timeout, what, logPath, func() (bool, int, string) {
		ok, state := cond()
		return ok, 0, state
	})
}

// waitForProgress is waitFor whose deadline moves: it gives up once cond's progress (a count
// that only grows) has not grown for stall.
func waitForProgress(ctx context.Context, stall time.Duration, what, logPath string, cond func() (ok bool, progress int, state string)) error {
	deadline := time.Now().Add(stall)
	lastPrint := time.Now()
	last := 0
	for {
		ok, progress, state := cond()
		if ok {
			return nil
		}
		if progress > last {
			last, deadline = progress, time.Now().Add(stall)
		}
		if time.Now().After(deadline) {
			since := ""
			if last > 0 {
				since = " of its last progress"
			}
			return fmt.Errorf("waiting for %s: not within %s%s (%s); read %s", what, stall, since, state, logPath)
		}
		if time.Since(lastPrint) > 10*time.Second {
			fmt.Fprintf(os.Stderr, "    ... waiting for %s: %s\n", what, state)
			lastPrint = time.Now()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, context.Cause(ctx))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// breakdownControllers are the controllers whose reconciles a breakdown counts.
var breakdownControllers = []string{"propagation", "appstatus", "report"}

// reconcilesBetween are, per controller, the reconciles between two scrapes and where their time
// went: waiting in the queue, and working.
func reconcilesBetween(before, after metricsSnapshot) map[string]reconcileTimes {
	out := map[string]reconcileTimes{}
	for _, name := range breakdownControllers {
		wait, work := after.QueueWait[name].minus(before.QueueWait[name]), after.Work[name].minus(before.Work[name])
		out[name] = reconcileTimes{Count: work.Count, MeanQueuedMs: wait.meanMs(), MeanWorkingMs: work.meanMs()}
	}
	return out
}

// printBreakdown prints reconcilesBetween the two scrapes, and returns them.
func printBreakdown(cfg config, before, after metricsSnapshot) map[string]reconcileTimes {
	out := reconcilesBetween(before, after)
	for _, name := range breakdownControllers {
		t := out[name]
		cfg.progress("    %-11s %6.0f reconciles, mean %.0fms queued, %.1fms working", name, t.Count, t.MeanQueuedMs, t.MeanWorkingMs)
	}
	return out
}
