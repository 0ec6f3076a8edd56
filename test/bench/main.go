// Command bench measures argocd-pull at scale against a real hub apiserver: the controller runs
// as its own process while simulated work agents answer its ManifestWorks on the hub side. For
// each size it prints and records propagation throughput beside the direct-create limit of the
// same apiserver, status latency percentiles, the controller's resources and API requests, the
// cost of a restart and the size of the largest report.
//
//	make bench                      # N=100,1000 clusters, 10 ApplicationSets
//	go run ./test/bench --clusters 100,1000,5000 --controller bin/argocd-pull
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/argocd-pull/argocd-pull/internal/assets"
	"github.com/argocd-pull/argocd-pull/internal/cli"
	"github.com/argocd-pull/argocd-pull/internal/controller"
	"github.com/argocd-pull/argocd-pull/test/bench/benchresults"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	ctrl.SetLogger(logr.Discard()) // the benchmark's own caches and clients: their logs are noise here
	var (
		sizes   = flag.String("clusters", "100,1000", "Comma-separated numbers of managed clusters, one run each")
		appSets = flag.Int("applicationsets", 10, "ApplicationSets, each with one pull-model Application per cluster")
		out     = flag.String("out", "test/bench/results", "Directory for results.json and results.md")
		logs    = flag.String("logs", "tmp/bench", "Directory for the controller logs and hub kubeconfigs")
		cfg     = config{}
	)
	flag.StringVar(&cfg.controller, "controller", "bin/argocd-pull", "The argocd-pull binary to run as the controller")
	flag.IntVar(&cfg.concurrency, "concurrency", controller.DefaultOptions().MaxConcurrentReconciles, "The controller's --concurrency, also the direct-create concurrency")
	qps := flag.Float64("kube-api-qps", cli.DefaultKubeAPIQPS, "The controller's --kube-api-qps, also the direct-create limit")
	flag.IntVar(&cfg.burst, "kube-api-burst", cli.DefaultKubeAPIBurst, "The controller's --kube-api-burst, also the direct-create burst")
	flag.IntVar(&cfg.changes, "changes", 1000, "Feedback changes timed per size")
	flag.Float64Var(&cfg.changeRate, "change-rate", 100, "Feedback changes written per second")
	flag.IntVar(&cfg.workers, "workers", 16, "Concurrent requests of the benchmark's own client (setup and simulated agents)")
	flag.DurationVar(&cfg.resync, "argocd-resync", 180*time.Second, "How often each simulated managed Argo CD reconciles an Application with nothing to do (Argo CD's timeout.reconciliation; 0: never)")
	flag.DurationVar(&cfg.jitter, "argocd-resync-jitter", 60*time.Second, "Up to this much is added to each reconciliation period (Argo CD's timeout.reconciliation.jitter)")
	flag.DurationVar(&cfg.steady, "steady", 5*time.Minute, "Length of the steady-state phase: the fleet at rest with --steady-change-rate changes a second (0: skipped)")
	flag.DurationVar(&cfg.lease, "lease-duration", 60*time.Second, "Each cluster's lease duration: its simulated registration agent renews its lease on the hub this often, plus up to a quarter of it (OCM's default; 0: no leases)")
	flag.Float64Var(&cfg.steadyRate, "steady-change-rate", 30, "Feedback changes a second during the steady-state phase")
	flag.DurationVar(&cfg.profile, "cpu-profile", 0, "Keep a CPU profile of the controller this long from the start of propagation and of the steady state, and of the controller, the ApplicationSet controller and the apiserver from the commit of the new revision and of the concurrent rollouts, with what the controller and the apiserver allocate meanwhile, in --logs (0: none)")
	scenarios := flag.String("scenarios", "fleet,rollouts", "Which scenarios to run at each size: fleet (propagation, status latency, steady state, restart), rollouts (RollingSync rollouts with the real ApplicationSet controller)")
	rolloutOut := flag.String("rollouts-out", "test/bench/results/rollouts", "Directory for the rollout scenarios' results.json and results.md")
	rc := rolloutConfig{}
	flag.DurationVar(&rc.syncFor, "sync-duration", 5*time.Second, "How long each simulated Argo CD's sync runs (rollouts)")
	flag.DurationVar(&rc.compare, "argocd-compare", 500*time.Millisecond, "How long each simulated Argo CD takes to compare a changed Application with Git before it writes the status (rollouts; its repo server: tens of milliseconds with the manifests cached, seconds for a new commit). Argo CD 3.4+'s ApplicationSet controller loses from its view a status written within milliseconds of its own patch (argo-cd#26578), which a real comparison never is")
	flag.IntVar(&rc.steps, "rollout-steps", 10, "RollingSync steps of the rollout ApplicationSets")
	flag.IntVar(&rc.concurrent, "concurrent-rollouts", 10, "RollingSync ApplicationSets rolling out a revision at once in the last rollout scenario (<2: skipped)")
	scenarioList := flag.String("rollout-scenarios", strings.Join(rolloutScenarios, ","), "Which rollout scenarios to run after the first rollout of a new ApplicationSet (which they all start from; empty: the first rollout alone)")
	flag.Float64Var(&rc.appSetQPS, "applicationset-client-qps", 50, "The ApplicationSet controller's client limit in requests per second (its ARGOCD_K8S_CLIENT_QPS, burst twice that; Argo CD's default is 50)")
	flag.IntVar(&rc.appSetMaxResources, "applicationset-max-resources-status-count", 0, "The most resources the ApplicationSet controller keeps in an ApplicationSet's status (its ARGOCD_APPLICATIONSET_CONTROLLER_MAX_RESOURCES_STATUS_COUNT; 0: every one, Argo CD's default). One entry per Application: at 5,000 Applications the status outgrows etcd's request limit")
	flag.StringVar(&rc.templating, "applicationset-templating", templatingGo, "How the rollout ApplicationSets' templates are rendered: go (goTemplate with sprig over the clusterDecisionResource generator, the step derived from the cluster's name) or default (Argo CD's default templating, as the documents' examples, over the cluster generator, the step from a cluster label)")
	flag.BoolVar(&rc.limit, "rollout-limit", true, "After the rollout scenarios at each size, run them again without the pull model: no argocd-pull, the simulated clusters' Argo CD syncing the hub Applications themselves, as push-model Argo CD does. That run is the limit each pull-model rollout is a ratio to")
	limitOnly := flag.Bool("rollout-limit-only", false, "Run only the limits of the rollout scenarios (no argocd-pull) and record them into the results file in --rollouts-out, beside its pull-model run of the same sizes (made before with --rollout-limit=false): the two halves of a run too long for one sitting")
	env := flag.String("controller-env", "", "Environment for the controller alone, space-separated NAME=VALUE (e.g. \"GOMEMLIMIT=270MiB\": the soft limit argocd-pull sets itself in a container limited to 300 MiB)")
	extra := flag.String("controller-args", "", "More flags for the controller, space-separated (e.g. \"--report-interval-per-cluster=2ms\")")
	flag.Parse()
	if rc.templating != templatingGo && rc.templating != templatingDefault {
		return fmt.Errorf("--applicationset-templating: %q is neither %s nor %s", rc.templating, templatingGo, templatingDefault)
	}
	cfg.qps = float32(*qps)
	var err error
	if rc.scenarios, err = parseRolloutScenarios(*scenarioList); err != nil {
		return err
	}
	cfg.extraArgs = strings.Fields(*extra)
	cfg.env = strings.Fields(*env)

	var counts []int
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("--clusters: %q is not a positive number", s)
		}
		counts = append(counts, n)
	}
	if _, err := os.Stat(cfg.controller); err != nil {
		return fmt.Errorf("the controller binary: %w (run 'make build' or pass --controller)", err)
	}
	for _, dir := range []string{*out, *logs} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	cfg.logDir = *logs
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	calibration := calibrate()
	started := time.Now()
	cfg.progress = func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "[%6.1fs] %s\n", time.Since(started).Seconds(), fmt.Sprintf(format, args...))
	}
	report := benchReport{Run: benchresults.Run{Kind: benchresults.KindScale, Machine: machine(), CalibrationNs: calibration, ControllerVersion: controllerVersion(cfg.controller), Started: started.UTC().Format(time.RFC3339),
		Command: strings.Join(append([]string{"go run ./test/bench"}, withoutMachinePaths(os.Args[1:])...), " ")}}
	// The results are written after each size, so that a larger size that fails (or is stopped)
	// keeps the smaller ones.
	runFleet, runRollouts := false, false
	for _, s := range strings.Split(*scenarios, ",") {
		switch strings.TrimSpace(s) {
		case "fleet":
			runFleet = true
		case "rollouts":
			runRollouts = true
		default:
			return fmt.Errorf("--scenarios: %q is neither fleet nor rollouts", s)
		}
	}
	rollouts := benchresults.RolloutReport{Run: report.Run, ArgoCDVersion: argoCDVersion()}
	rollouts.Kind = benchresults.KindRollouts
	if *limitOnly {
		if !runRollouts || runFleet {
			return fmt.Errorf("--rollout-limit-only: run it with --scenarios rollouts alone")
		}
		return measureLimitsApart(ctx, cfg, rc, counts, report.Run, *rolloutOut)
	}
	for _, n := range counts {
		if runFleet {
			cfg.progress("N=%d clusters, A=%d ApplicationSets: %d Applications", n, *appSets, n**appSets)
			res, err := measure(ctx, cfg, n, *appSets)
			if err != nil {
				return fmt.Errorf("at N=%d: %w", n, err)
			}
			report.Results = append(report.Results, res)
			report.Seconds = time.Since(started).Seconds()
			if err := writeResults(report, *out); err != nil {
				return err
			}
		}
		if runRollouts {
			cfg.progress("rollouts, N=%d clusters: RollingSync in %d steps, %s syncs", n, rc.steps, rc.syncFor)
			done := len(rollouts.Results)
			_, err := measureRollouts(ctx, cfg, rc, n, func(res benchresults.RolloutResult) error {
				rollouts.Results = append(rollouts.Results[:done], res)
				rollouts.Seconds = time.Since(started).Seconds()
				return writeRolloutResults(rollouts, *rolloutOut)
			})
			if err != nil {
				return fmt.Errorf("rollouts at N=%d: %w", n, err)
			}
			if rc.limit {
				cfg.progress("rollouts, N=%d clusters: the limit, the same scenarios without the pull model (no argocd-pull; the clusters' Argo CD syncs the hub Applications)", n)
				limit := rc
				limit.push = true
				_, err := measureRollouts(ctx, cfg, limit, n, func(res benchresults.RolloutResult) error {
					rollouts.Results[done].Limit = &res
					rollouts.Seconds = time.Since(started).Seconds()
					return writeRolloutResults(rollouts, *rolloutOut)
				})
				if err != nil {
					return fmt.Errorf("the limit rollouts at N=%d: %w", n, err)
				}
			}
		}
	}
	if runFleet {
		fmt.Print(report.Markdown())
	}
	if runRollouts {
		fmt.Print(rollouts.RolloutMarkdown())
	}
	switch {
	case runFleet && runRollouts:
		cfg.progress("done; results in %s and %s", *out, *rolloutOut)
	case runRollouts:
		cfg.progress("done; results in %s", *rolloutOut)
	default:
		cfg.progress("done; results in %s", *out)
	}
	return nil
}

// write writes results.json and results.md into dir.
func writeResults(report benchReport, dir string) error {
	data, err := json.MarshalIndent(report, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "results.md"), []byte(report.Markdown()), 0o644)
}

// argoCDVersion is the version of the Argo CD binaries the rollouts run (ARGOCD_VERSION, else
// the pinned one).
func argoCDVersion() string {
	root, err := assets.RepoRoot()
	if err != nil {
		return "unknown"
	}
	v, err := assets.ArgoCDVersion(root)
	if err != nil {
		return "unknown"
	}
	return v
}

// controllerVersion is what the measured binary says it is: its release and commit.
func controllerVersion(binary string) string {
	out, err := exec.Command(binary, "version").Output()
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return strings.TrimSpace(string(out))
}

// machine describes where the figures come from.
func machine() string {
	model := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	return fmt.Sprintf("%d cores (%s), %s/%s, %s", runtime.NumCPU(), model, runtime.GOOS, runtime.GOARCH, runtime.Version())
}

// calibrate times benchresults.CalibrationTask on one goroutine, in nanoseconds a round: a
// figure of the machine's speed now, beside its CPU's name, taken before anything of the run
// starts.
func calibrate() float64 {
	resources := make([]any, 100)
	for i := range resources {
		resources[i] = map[string]any{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "guestbook",
			"name": fmt.Sprintf("guestbook-ui-%03d", i), "status": "Synced", "health": map[string]any{"status": "Healthy"}}
	}
	app := map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": "calibration", "namespace": "argocd", "labels": map[string]any{"app": "calibration"}},
		"spec":     map[string]any{"project": "default", "source": map[string]any{"repoURL": "https://github.com/argoproj/argocd-example-apps.git", "path": "guestbook", "targetRevision": "HEAD"}},
		"status":   map[string]any{"resources": resources, "sync": map[string]any{"status": "Synced", "revision": strings.Repeat("a", 40)}}}
	res := testing.Benchmark(func(b *testing.B) {
		for b.Loop() {
			data, err := json.Marshal(app)
			if err != nil {
				b.Fatal(err)
			}
			var back map[string]any
			if err := json.Unmarshal(data, &back); err != nil {
				b.Fatal(err)
			}
		}
	})
	return float64(res.NsPerOp())
}

// makeChanges writes count feedback changes (revisions <prefix>1, <prefix>2, ...), each to a different Application spread over the
// fleet, at rate per second, and returns the rate achieved.
func makeChanges(ctx context.Context, ag *agents, f fleet, prefix string, count int, rate float64, workers int) (float64, error) {
	jobs := make(chan int)
	errs := make(chan error, workers)
	for range workers {
		go func() {
			var first error
			for i := range jobs {
				// A stride coprime with the fleet's size visits every Application before any twice.
				k := (i * 7919) % f.apps()
				set, cluster := f.appSets[k/len(f.clusters)], f.clusters[k%len(f.clusters)]
				if err := ag.change(ctx, set, cluster, fmt.Sprintf("%s%d", prefix, i+1)); err != nil && first == nil {
					first = err
				}
			}
			errs <- first
		}()
	}
	start := time.Now()
	interval := time.Duration(float64(time.Second) / rate)
	for i := range count {
		if wait := time.Until(start.Add(time.Duration(i) * interval)); wait > 0 {
			time.Sleep(wait)
		}
		jobs <- i
	}
	close(jobs)
	for range workers {
		if err := <-errs; err != nil {
			return 0, err
		}
	}
	return float64(count) / time.Since(start).Seconds(), nil
}

// withoutMachinePaths writes paths inside the working directory relative to it, so that the
// recorded command says nothing of the machine it ran on.
func withoutMachinePaths(args []string) []string {
	wd, err := os.Getwd()
	if err != nil {
		return args
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.ReplaceAll(a, wd+string(os.PathSeparator), "")
	}
	return out
}

// measureLimitsApart measures the limits of the rollout scenarios at each size, with nothing of
// argocd-pull, into the results file in dir, whose pull-model run of the same sizes and scenarios
// was made before without its limits: each size's result gains its Limit, and the file the
// sitting that measured them (LimitRun). The pull-model run stays as it was.
func measureLimitsApart(ctx context.Context, cfg config, rc rolloutConfig, counts []int, run benchresults.Run, dir string) error {
	rollouts, err := benchresults.LoadRollouts(filepath.Join(dir, "results.json"))
	if err != nil {
		return fmt.Errorf("--rollout-limit-only needs the pull-model run's results first: %w", err)
	}
	started := time.Now()
	rollouts.LimitRun = &run
	for _, n := range counts {
		i := slices.IndexFunc(rollouts.Results, func(r benchresults.RolloutResult) bool { return r.Clusters == n })
		if i < 0 {
			return fmt.Errorf("--rollout-limit-only: %s has no pull-model run at N=%d", dir, n)
		}
		cfg.progress("rollouts, N=%d clusters: the limit alone, the scenarios without the pull model (no argocd-pull; the clusters' Argo CD syncs the hub Applications)", n)
		limit := rc
		limit.push = true
		if _, err := measureRollouts(ctx, cfg, limit, n, func(res benchresults.RolloutResult) error {
			rollouts.Results[i].Limit = &res
			rollouts.LimitRun.Seconds = time.Since(started).Seconds()
			return writeRolloutResults(rollouts, dir)
		}); err != nil {
			return fmt.Errorf("the limit rollouts at N=%d: %w", n, err)
		}
	}
	fmt.Print(rollouts.RolloutMarkdown())
	cfg.progress("done; the limits in %s", dir)
	return nil
}
