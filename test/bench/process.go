package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/argocd-pull/argocd-pull/internal/localproc"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"
)

// controllerProcess is `argocd-pull controller` running as its own process, so that its memory,
// CPU and API requests are its own.
type controllerProcess struct {
	*localproc.Process
	metrics string // URL of its metrics endpoint
	pprof   string // URL of its profiling endpoints
	started time.Time
}

// startController runs the controller binary against the hub kubeconfig with args and, besides
// the benchmark's environment, env, logging to logPath, and waits until its metrics endpoint
// answers.
func startController(ctx context.Context, binary, kubeconfig, logPath string, args, env []string) (*controllerProcess, error) {
	metricsPort, err := localproc.FreePort()
	if err != nil {
		return nil, err
	}
	probePort, err := localproc.FreePort()
	if err != nil {
		return nil, err
	}
	pprofPort, err := localproc.FreePort()
	if err != nil {
		return nil, err
	}
	all := append([]string{"controller", "--kubeconfig=" + kubeconfig,
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", metricsPort),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", probePort),
		fmt.Sprintf("--pprof-bind-address=127.0.0.1:%d", pprofPort)}, args...)
	p := &controllerProcess{
		metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort),
		pprof:   fmt.Sprintf("http://127.0.0.1:%d/debug/pprof", pprofPort),
		started: time.Now(),
	}
	if p.Process, err = localproc.Start(logPath, binary, all, env...); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if _, err := p.scrape(ctx); err == nil {
			return p, nil
		}
		select {
		case <-p.Done():
			return nil, fmt.Errorf("the controller exited: %v; read %s", p.Err(), logPath)
		case <-time.After(50 * time.Millisecond):
		}
	}
	p.Stop()
	return nil, fmt.Errorf("the controller's metrics endpoint did not answer within a minute; read %s", logPath)
}

// profile keeps, in the background, a CPU profile of the controller for cfg.profile in
// cfg.logDir/name; nothing when cfg.profile is 0. Read it with `go tool pprof`.
func (p *controllerProcess) profile(ctx context.Context, cfg config, name string) {
	if cfg.profile <= 0 {
		return
	}
	go keepProfile(ctx, cfg, p.pprof+"/"+cpuProfile(cfg), name)
}

// apiserverProfile keeps, in the background, the profile at pprof path (cpuProfile, allocsProfile)
// of the apiserver that rc reaches in cfg.logDir/name; nothing when cfg.profile is 0.
func apiserverProfile(ctx context.Context, cfg config, rc *rest.Config, path, name string) {
	if cfg.profile <= 0 {
		return
	}
	if hc, err := rest.HTTPClientFor(rc); err == nil {
		go keepProfileWith(ctx, cfg, hc, strings.TrimSuffix(rc.Host, "/")+"/debug/pprof/"+path, name)
	}
}

// profileChunk is the length of each of apiserverPhaseProfile's profiles.
const profileChunk = 15 * time.Second

// apiserverPhaseProfile keeps CPU profiles of the apiserver that rc reaches, one after another,
// each profileChunk long, in cfg.logDir/<name>-<n>.pprof, from now until the returned function is
// called, which waits for the profile running then (`go tool pprof` merges the files): a profile
// of a phase whose length is not known in advance, which never holds the apiserver's shutdown, as
// one longer profile did, and never overlaps the next phase's (the apiserver profiles one at a
// time). Nothing when cfg.profile is 0.
func apiserverPhaseProfile(ctx context.Context, cfg config, rc *rest.Config, name string) (stop func()) {
	hc, err := rest.HTTPClientFor(rc)
	if cfg.profile <= 0 || err != nil {
		return func() {}
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		for n := 0; ; n++ {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			default:
			}
			file := fmt.Sprintf("%s-%02d.pprof", name, n)
			keepProfileWith(ctx, cfg, hc, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", strings.TrimSuffix(rc.Host, "/"), int(profileChunk.Seconds())), file)
			if _, err := os.Stat(filepath.Join(cfg.logDir, file)); err != nil {
				return // said by keepProfileWith; not tried again
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(done) })
		<-finished
	}
}

// cpuProfile is the pprof path of a CPU profile as long as cfg asks.
func cpuProfile(cfg config) string {
	return fmt.Sprintf("profile?seconds=%d", int(cfg.profile.Seconds()))
}

// allocsProfile is the pprof path of what a process allocates in as long as cfg asks (a delta
// of its allocation profile: `go tool pprof -sample_index=alloc_space`).
func allocsProfile(cfg config) string {
	return fmt.Sprintf("allocs?seconds=%d", int(cfg.profile.Seconds()))
}

// heapProfile keeps the controller's heap profile now in cfg.logDir/name, when profiles are on.
func (p *controllerProcess) heapProfile(ctx context.Context, cfg config, name string) {
	if cfg.profile > 0 {
		keepProfile(ctx, cfg, p.pprof+"/heap", name)
	}
}

// keepProfile writes what a pprof endpoint (url) answers into cfg.logDir/name.
func keepProfile(ctx context.Context, cfg config, url, name string) {
	keepProfileWith(ctx, cfg, http.DefaultClient, url, name)
}

// keepProfileWith is keepProfile through an HTTP client of its own (the apiserver's asks for
// credentials).
func keepProfileWith(ctx context.Context, cfg config, hc *http.Client, url, name string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return
	}
	resp, err := hc.Do(req)
	if err != nil {
		cfg.progress("profile %s: %v", name, err)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = errors.New(resp.Status)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(cfg.logDir, name), data, 0o644)
	}
	if err != nil {
		cfg.progress("profile %s: %v", name, err)
	}
}

// usage is what the kernel counted for the process: peak resident memory and CPU time.

// usage reads /proc/<pid>: VmHWM (peak RSS) and utime+stime.
func (p *controllerProcess) usage() (usage, error) { return procUsage(p.PID()) }

// procUsage reads /proc/<pid>: VmHWM (peak RSS) and utime+stime.
func procUsage(pid int) (usage, error) {
	var u usage
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	status, err := os.Open(filepath.Join(dir, "status"))
	if err != nil {
		return u, err
	}
	defer func() { _ = status.Close() }()
	sc := bufio.NewScanner(status)
	for sc.Scan() {
		if kb, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			v, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(kb), "kB")), 64)
			u.PeakRSSMiB = v / 1024
		}
	}
	_, fields, err := procStat(pid)
	if err != nil {
		return u, err
	}
	ut, _ := strconv.ParseFloat(fields[11], 64)
	st, _ := strconv.ParseFloat(fields[12], 64)
	const clockTicks = 100 // USER_HZ on Linux
	u.CPUSeconds = (ut + st) / clockTicks
	return u, nil
}

// procStat reads /proc/<pid>/stat: the command name, and the fields after it (the state is
// fields[0], the parent's pid fields[1], utime and stime fields[11] and fields[12]).
func procStat(pid int) (string, []string, error) {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return "", nil, err
	}
	s := string(stat)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open || end+2 > len(s) {
		return "", nil, errors.New("malformed /proc stat")
	}
	fields := strings.Fields(s[end+2:])
	if len(fields) < 13 {
		return "", nil, errors.New("short /proc stat")
	}
	return s[open+1 : end], fields, nil
}

// cpuClock takes the CPU seconds used so far by the hub's processes: the apiserver and etcd (the
// benchmark's children), the controller, and the benchmark process.
type cpuClock struct {
	at                                     time.Time
	apiserver, etcd, controller, benchmark float64
	appSets                                float64 // the ApplicationSet controller, in the rollouts
}

func readCPUClock(ctl *controllerProcess) cpuClock {
	c := cpuClock{at: time.Now()}
	cpu := func(pid int) float64 {
		u, _ := procUsage(pid)
		return u.CPUSeconds
	}
	c.benchmark = cpu(os.Getpid())
	if ctl != nil {
		c.controller = cpu(ctl.PID())
	}
	entries, _ := os.ReadDir("/proc")
	parent := strconv.Itoa(os.Getpid())
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		name, fields, err := procStat(pid)
		if err != nil || fields[1] != parent {
			continue
		}
		switch name {
		case "kube-apiserver":
			c.apiserver += cpu(pid)
		case "etcd":
			c.etcd += cpu(pid)
		}
	}
	return c
}

// since is the CPU each process used from start to c.
func (c cpuClock) since(start cpuClock) cpuShare {
	return cpuShare{
		Seconds:    c.at.Sub(start.at).Seconds(),
		APIServer:  c.apiserver - start.apiserver,
		Etcd:       c.etcd - start.etcd,
		Controller: c.controller - start.controller,
		Benchmark:  c.benchmark - start.benchmark,

		ApplicationSetController: c.appSets - start.appSets,
	}
}

// metricsSnapshot is the part of the controller's metrics the benchmark reads.
type metricsSnapshot struct {
	// Requests counts API requests by HTTP method.
	Requests map[string]float64
	// ByResource counts them by verb and resource ("patch applications"), from
	// argocd_pull_api_requests_total; empty for binaries without it.
	ByResource map[string]float64
	// Reconciles counts reconciles by controller.
	Reconciles map[string]float64
	// QueueDepth is the summed depth of all work queues.
	QueueDepth float64
	// QueueWait and Work are, by controller, the summed seconds items waited in the queue and
	// were worked on, with their counts: where a latency goes.
	QueueWait, Work map[string]sumCount
	// TreeWrites counts the resource-tree writes to redis that succeeded, by operation.
	TreeWrites map[string]float64
}

// trees is the resource-tree writes of every operation.
func (m metricsSnapshot) trees() float64 { return total(m.TreeWrites) }

type sumCount struct{ Sum, Count float64 }

func (s sumCount) minus(o sumCount) sumCount { return sumCount{s.Sum - o.Sum, s.Count - o.Count} }

func (s sumCount) meanMs() float64 {
	if s.Count == 0 {
		return 0
	}
	return s.Sum / s.Count * 1000
}

func (m metricsSnapshot) writes() float64 {
	return m.Requests["POST"] + m.Requests["PUT"] + m.Requests["PATCH"] + m.Requests["DELETE"]
}

func (p *controllerProcess) scrape(ctx context.Context) (metricsSnapshot, error) {
	snap := metricsSnapshot{Requests: map[string]float64{}, ByResource: map[string]float64{}, Reconciles: map[string]float64{}, QueueWait: map[string]sumCount{}, Work: map[string]sumCount{}, TreeWrites: map[string]float64{}}
	families, err := fetchMetrics(ctx, http.DefaultClient, p.metrics)
	if err != nil {
		return snap, err
	}
	for _, m := range families["rest_client_requests_total"].GetMetric() {
		snap.Requests[label(m, "method")] += m.GetCounter().GetValue()
	}
	for _, m := range families["argocd_pull_api_requests_total"].GetMetric() {
		if v := m.GetCounter().GetValue(); v > 0 {
			snap.ByResource[label(m, "verb")+" "+label(m, "resource")] += v
		}
	}
	for _, m := range families["controller_runtime_reconcile_total"].GetMetric() {
		snap.Reconciles[label(m, "controller")] += m.GetCounter().GetValue()
	}
	for _, m := range families["argocd_pull_resource_tree_writes_total"].GetMetric() {
		if label(m, "result") == "ok" {
			snap.TreeWrites[label(m, "operation")] += m.GetCounter().GetValue()
		}
	}
	for _, m := range families["workqueue_depth"].GetMetric() {
		snap.QueueDepth += m.GetGauge().GetValue()
	}
	for _, m := range families["workqueue_queue_duration_seconds"].GetMetric() {
		snap.QueueWait[label(m, "name")] = sumCount{m.GetHistogram().GetSampleSum(), float64(m.GetHistogram().GetSampleCount())}
	}
	for _, m := range families["workqueue_work_duration_seconds"].GetMetric() {
		snap.Work[label(m, "name")] = sumCount{m.GetHistogram().GetSampleSum(), float64(m.GetHistogram().GetSampleCount())}
	}
	return snap, nil
}

// fetchMetrics reads and parses what a metrics endpoint (url) answers, through hc.
func fetchMetrics(ctx context.Context, hc *http.Client, url string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metrics %s: %s", url, resp.Status)
	}
	return parseMetrics(resp.Body)
}

// label is the value of a metric's label name, "" when it has none.
func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func parseMetrics(r io.Reader) (map[string]*dto.MetricFamily, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(r)
}

// startRedis runs Debian's redis-server on a free loopback port (make sandbox-deps installs it),
// as the hub Argo CD's redis, and returns its address and how to stop it.
func startRedis(logPath string) (string, func(), error) {
	port, err := localproc.FreePort()
	if err != nil {
		return "", nil, err
	}
	p, err := localproc.Start(logPath, "redis-server", []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"})
	if err != nil {
		return "", nil, fmt.Errorf("%w (install Debian's redis-server: make sandbox-deps)", err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			_ = c.Close()
			return addr, p.Stop, nil
		}
	}
	p.Stop()
	return "", nil, fmt.Errorf("redis-server did not listen on %s within 30s; read %s", addr, logPath)
}
