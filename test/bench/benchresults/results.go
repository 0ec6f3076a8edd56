// Package benchresults is the schema of the scale benchmark's results file
// (test/bench/results/**/results.json) and its rendering as markdown: test/bench writes the files,
// and make docs (hack/gendocs) renders them into the docs, so that every published figure is read
// from a results file, never copied by hand.
package benchresults

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

// Report is one run of the benchmark: the machine, the command, and a result per size.
type Report struct {
	Run
	Results []Result `json:"results"`
}

// Run is what every results file says of the run that wrote it.
type Run struct {
	// Kind is what the file holds: KindScale or KindRollouts ("" in files written before it was
	// recorded: see KindOf).
	Kind    string `json:"kind,omitempty"`
	Machine string `json:"machine"`
	// CalibrationNs is how long a fixed CPU task took on the machine before the run began, with
	// nothing of the run started (CalibrationTask; 0 in files written before it was recorded): the
	// same CPU model name may be slower in one session than another.
	CalibrationNs float64 `json:"calibrationNsPerOp,omitempty"`
	Started       string  `json:"started"`
	Command       string  `json:"command"`
	// ControllerVersion is what the measured binary's 'argocd-pull version' printed: the release and
	// the commit it was built from (make build stamps them).
	ControllerVersion string  `json:"controllerVersion,omitempty"`
	Seconds           float64 `json:"seconds"`
}

// CalibrationTask is what CalibrationNs measures, one goroutine, nanoseconds per round.
const CalibrationTask = "a JSON encode and decode of a fixed 100-resource Application"

// MachineLine is the machine, with its calibration when the file has one.
func (r Run) MachineLine() string {
	if r.CalibrationNs == 0 {
		return r.Machine
	}
	return fmt.Sprintf("%s; calibration %s ns (%s)", r.Machine, Thousands(r.CalibrationNs), CalibrationTask)
}

// Load reads a results file.
func Load(path string) (Report, error) { return load[Report](path) }

// load reads a results file of either kind.
func load[T any](path string) (T, error) {
	var r T
	data, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// Result is what one size measured.
type Result struct {
	Clusters        int      `json:"clusters"`
	ApplicationSets int      `json:"applicationSets"`
	Applications    int      `json:"applications"`
	ControllerFlags []string `json:"controllerFlags"`
	// ControllerEnv is the environment given to the controller alone (--controller-env), such as
	// the GOMEMLIMIT argocd-pull sets itself in a container with a memory limit.
	ControllerEnv []string `json:"controllerEnv,omitempty"`

	// Propagation: from the controller's start until all works exist.
	PropagationSeconds   float64 `json:"propagationSeconds"`
	FirstWorkSeconds     float64 `json:"firstWorkSeconds"`
	PropagationPerSecond float64 `json:"propagationWorksPerSecond"`
	// The same works created by a plain client with the controller's concurrency and limits, and
	// without client limits.
	DirectPerSecond            float64 `json:"directWorksPerSecond"`
	DirectUnthrottledPerSecond float64 `json:"directUnthrottledWorksPerSecond"`
	// PropagationRatio is PropagationPerSecond / DirectPerSecond.
	PropagationRatio float64 `json:"propagationRatio"`
	// DirectAnsweredPerSecond is the direct rate while the simulated agents answer every work, and
	// PropagationToAnswered PropagationPerSecond / DirectAnsweredPerSecond.
	DirectAnsweredPerSecond float64 `json:"directAnsweredWorksPerSecond"`
	PropagationToAnswered   float64 `json:"propagationToAnsweredRatio"`
	// Both sides timed to their last answer: DirectToLastAnswerPerSecond is the direct create's
	// works over the time from its first create to the agents' last answer of them, and
	// PropagationToLastAnswerSeconds the time from the controller's start until the agents first
	// answered its last work; PropagationToLastAnswerRatio is the propagation's rate so timed over
	// the direct one (0 in files made before they were measured).
	DirectToLastAnswerPerSecond    float64 `json:"directToLastAnswerWorksPerSecond,omitempty"`
	PropagationToLastAnswerSeconds float64 `json:"propagationToLastAnswerSeconds,omitempty"`
	PropagationToLastAnswerRatio   float64 `json:"propagationToLastAnswerRatio,omitempty"`
	// RequestsPerApplication is the controller's API requests from its start until every report
	// is complete, per Application.
	RequestsPerApplication float64 `json:"requestsPerApplication"`
	// CPU used by each process while the works were created directly as the agents answered them,
	// and from the controller's start until every report was complete.
	DirectAnsweredCPU CPUShare `json:"directAnsweredCPU"`
	PropagationCPU    CPUShare `json:"propagationCPU"`

	InitialReportSeconds float64 `json:"initialReportSeconds"`
	// FirstDelivery is, per Application, the time from the controller's start until its hub
	// Application showed its cluster's first answer (the initial revision): its first delivery.
	FirstDelivery    Percentiles `json:"firstDelivery"`
	AppStatusLatency Percentiles `json:"appStatusLatency"`
	ReportLatency    Percentiles `json:"reportLatency"`
	ChangesPerSecond float64     `json:"changesPerSecond"`
	WritesPerChange  float64     `json:"controllerWritesPerChange"`
	// TreeWritesPerChange is the resource-tree writes to the hub Argo CD's redis per feedback
	// change (internal/resourcetree); TreeWritesAtStart those of the first deliveries. Nil in
	// files written before the tree.
	TreeWritesPerChange *float64 `json:"treeWritesPerChange,omitempty"`
	TreeWritesAtStart   *float64 `json:"treeWritesAtStart,omitempty"`

	// PropagationReconciles is, per controller (propagation, appstatus, report), its reconciles
	// from the controller's start until every work existed, with their mean time queued and
	// working. Nil in files written before it.
	PropagationReconciles map[string]ReconcileTimes `json:"reconcileBreakdown,omitempty"`

	Controller Usage              `json:"controller"`
	Requests   map[string]float64 `json:"controllerRequests"`

	RestartSeconds float64 `json:"restartSeconds"`
	RestartWrites  float64 `json:"restartWrites"`

	ReportBytes int `json:"largestReportBytes"`
	// AppBytesP50 and AppBytesMax are the sizes (JSON) of the hub Applications, with the status
	// copied from their clusters' feedback (history, resources, summary).
	AppBytesP50 int `json:"hubApplicationBytesP50,omitempty"`
	AppBytesMax int `json:"hubApplicationBytesMax,omitempty"`
	// ReportNotes are the largest report's notes: what it could not show, and the steps that
	// bounded its size.
	ReportNotes []string `json:"largestReportNotes,omitempty"`

	Steady *SteadyState `json:"steadyState,omitempty"`

	// WatchesPerCluster says how the simulated work agents watched the hub: 1, a watch of its own
	// namespace for each cluster (as OCM's work agents do); 0 in files written before, when they
	// shared one watch of every ManifestWork.
	WatchesPerCluster int `json:"watchesPerCluster"`
	// LeaseDurationSeconds is the clusters' lease duration: each simulated registration agent
	// renewed its lease that often from the agents' start (0: no leases).
	LeaseDurationSeconds float64 `json:"leaseDurationSeconds"`

	// Prices is what each kind of write costs the apiserver, measured on its own.
	Prices Prices `json:"prices"`
}

// SteadyState is a fleet at rest with a background of real changes: the simulated Argo CDs
// reconcile every Application each resync period (reconciledAt), and changeRate feedback changes
// a second arrive.
type SteadyState struct {
	Seconds           float64 `json:"seconds"`
	ResyncSeconds     float64 `json:"argocdResyncSeconds"`
	ChangesPerSecond  float64 `json:"changesPerSecond"`
	AgentWritesPerSec float64 `json:"agentWritesPerSecond"`
	LeaseWritesPerSec float64 `json:"leaseWritesPerSecond"`
	ControllerWrites  float64 `json:"controllerWritesPerSecond"`
	// TreeWritesPerSec is the resource-tree writes a second (changed trees and TTL renewals); nil
	// in files written before the tree.
	TreeWritesPerSec *float64    `json:"treeWritesPerSecond,omitempty"`
	ControllerCPU    float64     `json:"controllerCPUSecondsPerMinute"`
	AppStatusLatency Percentiles `json:"appStatusLatency"`
	ReportLatency    Percentiles `json:"reportLatency"`
	CPU              CPUShare    `json:"cpu"`
}

// CPUShare is the CPU seconds each process of the hub used during one phase, all on the same
// cores: the apiserver, etcd, the controller, and the benchmark itself (its simulated agents,
// observers and clients).
type CPUShare struct {
	Seconds    float64 `json:"seconds"` // the phase's wall-clock length
	APIServer  float64 `json:"apiserverCPUSeconds"`
	Etcd       float64 `json:"etcdCPUSeconds"`
	Controller float64 `json:"controllerCPUSeconds"`
	Benchmark  float64 `json:"benchmarkCPUSeconds"`
	// ApplicationSetController is the ApplicationSet controller's, in the rollout scenarios.
	ApplicationSetController float64 `json:"applicationSetControllerCPUSeconds,omitempty"`
}

// String gives the shares as cores busy on average: CPU seconds per wall-clock second.
func (s CPUShare) String() string {
	if s.Seconds <= 0 {
		return "-"
	}
	appSets := ""
	if s.ApplicationSetController > 0 {
		appSets = fmt.Sprintf(" / ApplicationSet controller %.2f", s.ApplicationSetController/s.Seconds)
	}
	return fmt.Sprintf("apiserver %.2f / etcd %.2f / controller %.2f%s / benchmark %.2f cores",
		s.APIServer/s.Seconds, s.Etcd/s.Seconds, s.Controller/s.Seconds, appSets, s.Benchmark/s.Seconds)
}

// Percentiles summarises latencies.
type Percentiles struct {
	Count int     `json:"count"`
	P50ms float64 `json:"p50ms"`
	P90ms float64 `json:"p90ms"`
	P99ms float64 `json:"p99ms"`
	MaxMs float64 `json:"maxMs"`
}

func (p Percentiles) String() string {
	return fmt.Sprintf("p50 %.0fms, p90 %.0fms, p99 %.0fms, max %.0fms over %d", p.P50ms, p.P90ms, p.P99ms, p.MaxMs, p.Count)
}

// Prices is what one write of each kind costs the apiserver in CPU, one request at a time on a
// fresh apiserver.
type Prices struct {
	// WorkCreateMs is the create of a new (pending) work; ClaimAnswerMs its agent's answer that
	// the name is free, HoldMs the hold, HeldAnswerMs the agent's answer with the Application's
	// first status (see manifestwork/claim.go). Files before these fields have only the create.
	WorkCreateMs  float64 `json:"workCreateApiserverCPUMs"`
	ClaimAnswerMs float64 `json:"claimAnswerApiserverCPUMs,omitempty"`
	HoldMs        float64 `json:"holdApiserverCPUMs,omitempty"`
	HeldAnswerMs  float64 `json:"heldAnswerApiserverCPUMs,omitempty"`
	// HeldWorkCreateMs is the create of a work that carries its Application from the start, as a
	// controller without the claim writes it.
	HeldWorkCreateMs float64 `json:"heldWorkCreateApiserverCPUMs,omitempty"`
	// DeliveryMs is what the writes that deliver one Application cost, one at a time (the report
	// aside): the pending work's create and answer, the hold and its answer, the hub Application's
	// status patch; UnclaimedDeliveryMs the same without the claim: the held work's create, its
	// answer and the patch. Zero in files before them.
	DeliveryMs          float64 `json:"deliveryApiserverCPUMs,omitempty"`
	UnclaimedDeliveryMs float64 `json:"unclaimedDeliveryApiserverCPUMs,omitempty"`
	// ProbeWriteMs, ProbeAnswerMs and ProbeDeleteMs are a cluster's claim probe asking about
	// ProbeEntries Applications: its create, its agent's answer (every name free) and its delete;
	// ProbedDeliveryMs what delivering one Application costs through it, as the controller
	// delivers now: its share of the probe, the held work's create, its answer and the status
	// patch. Zero in files before them.
	ProbeEntries        int     `json:"probeEntries,omitempty"`
	ProbeWriteMs        float64 `json:"probeWriteApiserverCPUMs,omitempty"`
	ProbeAnswerMs       float64 `json:"probeAnswerApiserverCPUMs,omitempty"`
	ProbeDeleteMs       float64 `json:"probeDeleteApiserverCPUMs,omitempty"`
	ProbedDeliveryMs    float64 `json:"probedDeliveryApiserverCPUMs,omitempty"`
	AppStatusPatchMs    float64 `json:"applicationStatusPatchApiserverCPUMs"`
	ReportEntryMs       float64 `json:"reportEntryApiserverCPUMs"`
	ReportEntryEtcdMs   float64 `json:"reportEntryEtcdCPUMs"`
	ReportEntriesProbed int     `json:"reportEntriesProbed"`
}

func (p Prices) String() string {
	s := fmt.Sprintf("apiserver CPU per ManifestWork create %.1f ms, per Application status patch %.1f ms, per report entry written %.3f ms (a report of 1,000 clusters: %.0f ms, and %.0f ms of etcd)",
		p.WorkCreateMs, p.AppStatusPatchMs, p.ReportEntryMs, p.ReportEntryMs*1000, p.ReportEntryEtcdMs*1000)
	if p.DeliveryMs > 0 {
		s += fmt.Sprintf("; per Application delivered %.1f ms (pending create %.1f, its answer %.1f, hold %.1f, its answer %.1f, status patch %.1f), %.1f ms without the claim (a held work's create %.1f)",
			p.DeliveryMs, p.WorkCreateMs, p.ClaimAnswerMs, p.HoldMs, p.HeldAnswerMs, p.AppStatusPatchMs, p.UnclaimedDeliveryMs, p.HeldWorkCreateMs)
	}
	if p.ProbedDeliveryMs > 0 {
		s += fmt.Sprintf("; through a claim probe shared by %d Applications %.1f ms (the probe's create %.1f, its answer %.1f, its delete %.1f)",
			p.ProbeEntries, p.ProbedDeliveryMs, p.ProbeWriteMs, p.ProbeAnswerMs, p.ProbeDeleteMs)
	}
	return s
}

// Usage is a process's peak RSS and CPU time.
type Usage struct {
	PeakRSSMiB float64 `json:"peakRSSMiB"`
	CPUSeconds float64 `json:"cpuSeconds"`
}

// Total is the sum of a request count by method.
func Total(m map[string]float64) float64 {
	var t float64
	for _, v := range m {
		t += v
	}
	return t
}

// FormatRequests lists request counts by method, in order: "GET 21, PATCH 2000".
func FormatRequests(m map[string]float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %.0f", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// ReconcileTimes is what one controller's reconciles took: how many, and their mean time queued
// and working (controller-runtime's workqueue and reconcile histograms).
type ReconcileTimes struct {
	Count         float64 `json:"count"`
	MeanQueuedMs  float64 `json:"meanQueuedMs"`
	MeanWorkingMs float64 `json:"meanWorkingMs"`
}
