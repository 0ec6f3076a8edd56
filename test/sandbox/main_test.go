// Package sandbox_test brings the local lab up once, as `argocd-pull sandbox up` does, and checks
// the documents' flow and argocd-pull's own behaviour through its real components: OCM's placement
// controller and work agents, Argo CD's ApplicationSet and application controllers. The tests run
// in file order on one lab; the last one deletes the ApplicationSet. make test runs them as two
// shards side by side, each on a lab of its own (LAB_VIEWS_TESTS in the Makefile), so no test may
// count on another having run before it.
package sandbox_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/argocd-pull/argocd-pull/internal/assets"
	"github.com/argocd-pull/argocd-pull/internal/sandbox"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

var (
	lab *sandbox.Lab
	// labOptions started the lab; TestRestartedLabKeepsItsIdentity starts it again with them.
	labOptions sandbox.Options
	labDir     string
	progress   bytes.Buffer
	upErr      error
)

// staleAfter is short so that the stale-cluster test runs in seconds.
const staleAfter = 15 * time.Second

func TestMain(m *testing.M) {
	flag.Parse()
	// The tests' own clients log nothing worth reading: the lab's processes log to its directory.
	ctrl.SetLogger(logr.Discard())
	if testing.Short() {
		os.Exit(m.Run())
	}
	code := func() int {
		dir, err := os.MkdirTemp("", "argocd-pull-lab-")
		if err != nil {
			upErr = err
			return m.Run()
		}
		labDir = dir
		defer func() { _, _ = sandbox.Down(dir) }()
		bin, err := buildArgocdPull(dir)
		if err != nil {
			upErr = err
			return m.Run()
		}
		// LAB_PORTS: make test runs the tests as two shards, each on a lab of its own, with
		// ports from a range of its own.
		ports, err := sandbox.ParsePortRange(os.Getenv("LAB_PORTS"))
		if err != nil {
			upErr = fmt.Errorf("LAB_PORTS: %w", err)
			return m.Run()
		}
		// LAB_CHANNEL=off: the shard whose tests do not use OCM's channel runs a lab without it
		// (one lab with the channel per machine: sandbox.Options.NoChannel).
		labOptions = sandbox.Options{Dir: dir, Clusters: 2, Controller: bin, Out: &progress, Ports: ports, NoChannel: os.Getenv("LAB_CHANNEL") == "off",
			ControllerArgs: []string{"--stale-after=" + staleAfter.String(), "--adopt-upstream-works"}}
		lab, upErr = sandbox.Up(context.Background(), labOptions)
		return m.Run()
	}()
	testenv.RemoveUnlessFailed(labDir, code)
	os.Exit(code)
}

func buildArgocdPull(dir string) (string, error) {
	root, err := assets.RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "argocd-pull")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/argocd-pull")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building argocd-pull: %w: %s", err, out)
	}
	return bin, nil
}

// requireLab skips under -short and fails when the lab did not come up.
func requireLab(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a lab of apiservers, OCM and Argo CD processes; run without -short")
	}
	if upErr != nil {
		t.Fatalf("the lab did not come up: %v\nprogress:\n%s", upErr, progress.String())
	}
}

// eventually polls cond every 500ms until it holds, or fails naming the log to read.
func eventually(t testing.TB, what string, timeout time.Duration, log string, cond func() (bool, error)) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			if took := time.Since(start); took >= 5*time.Second {
				// Where a lab test spends its time (go test -v, or a failure's output).
				t.Logf("%s: %s", what, took.Round(100*time.Millisecond))
			}
			return
		}
		last = err
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("%s: not within %s (last error: %v); read %s", what, timeout, last, filepath.Join(labDir, "logs", log))
}
