package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/argocd-pull/argocd-pull/internal/localproc"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// controllerProcess is `argocd-pull controller` running as its own process, so that its memory,
// CPU and API requests are its own.
type controllerProcess struct {
	*localproc.Process
	metrics string // URL of its metrics endpoint
	started time.Time
}

// startController runs the controller binary against the hub kubeconfig with args, logging to
// logPath, and waits until its metrics endpoint answers.
func startController(ctx context.Context, binary, kubeconfig, logPath string, args []string) (*controllerProcess, error) {
	metricsPort, err := localproc.FreePort()
	if err != nil {
		return nil, err
	}
	probePort, err := localproc.FreePort()
	if err != nil {
		return nil, err
	}
	all := append([]string{"controller", "--kubeconfig=" + kubeconfig,
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", metricsPort),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", probePort)}, args...)
	p := &controllerProcess{metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort), started: time.Now()}
	if p.Process, err = localproc.Start(logPath, binary, all); err != nil {
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

// usage is what the kernel counted for the process: peak resident memory and CPU time.
type usage struct {
	PeakRSSMiB float64 `json:"peakRSSMiB"`
	CPUSeconds float64 `json:"cpuSeconds"`
}

// usage reads /proc/<pid>: VmHWM (peak RSS) and utime+stime.
func (p *controllerProcess) usage() (usage, error) {
	var u usage
	dir := filepath.Join("/proc", strconv.Itoa(p.PID()))
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
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return u, err
	}
	// Fields after the command name in parentheses; utime and stime are fields 14 and 15.
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+2:])
	fields := strings.Fields(rest)
	if len(fields) < 13 {
		return u, errors.New("short /proc stat")
	}
	ut, _ := strconv.ParseFloat(fields[11], 64)
	st, _ := strconv.ParseFloat(fields[12], 64)
	const clockTicks = 100 // USER_HZ on Linux
	u.CPUSeconds = (ut + st) / clockTicks
	return u, nil
}

// metricsSnapshot is the part of the controller's metrics the benchmark reads.
type metricsSnapshot struct {
	// Requests counts API requests by HTTP method.
	Requests map[string]float64
	// Reconciles counts reconciles by controller.
	Reconciles map[string]float64
	// QueueDepth is the summed depth of all work queues.
	QueueDepth float64
	// QueueWait and Work are, by controller, the summed seconds items waited in the queue and
	// were worked on, with their counts: where a latency goes.
	QueueWait, Work map[string]sumCount
}

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
	snap := metricsSnapshot{Requests: map[string]float64{}, Reconciles: map[string]float64{}, QueueWait: map[string]sumCount{}, Work: map[string]sumCount{}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.metrics, nil)
	if err != nil {
		return snap, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return snap, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return snap, fmt.Errorf("metrics: %s", resp.Status)
	}
	families, err := parseMetrics(resp.Body)
	if err != nil {
		return snap, err
	}
	label := func(m *dto.Metric, name string) string {
		for _, l := range m.GetLabel() {
			if l.GetName() == name {
				return l.GetValue()
			}
		}
		return ""
	}
	for _, m := range families["rest_client_requests_total"].GetMetric() {
		snap.Requests[label(m, "method")] += m.GetCounter().GetValue()
	}
	for _, m := range families["controller_runtime_reconcile_total"].GetMetric() {
		snap.Reconciles[label(m, "controller")] += m.GetCounter().GetValue()
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

func parseMetrics(r io.Reader) (map[string]*dto.MetricFamily, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(r)
}
