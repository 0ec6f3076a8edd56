package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"
)

// loggerProbeEnv makes the test binary run one argocd-pull command (its arguments, separated by
// spaces) and say whether controller-runtime's logger was set by then, instead of running tests:
// the logger is set once per process, so each command needs a process of its own.
const loggerProbeEnv = "ARGOCD_PULL_LOGGER_PROBE"

// probeLogger runs the command loggerProbeEnv names and prints "logger set" or "logger unset".
// Until SetLogger is called, ctrl.Log hands out deferred sinks; controller-runtime prints its stack
// trace when one of them is used 30 s into the process.
func probeLogger(args string) {
	cmd := NewRootCommand()
	cmd.SetArgs(strings.Fields(args))
	cmd.SetOut(os.Stderr)
	_ = cmd.Execute() // the commands fail: nothing answers at the kubeconfig's server
	if strings.Contains(fmt.Sprintf("%T", ctrl.Log.WithName("probe").GetSink()), "delegatingLogSink") {
		fmt.Println("logger unset")
		return
	}
	fmt.Println("logger set")
}

// Regression: 'make demo' printed "[controller-runtime] log.SetLogger(...) was never called" and a
// 30-line stack trace while 'sandbox up' waited for the GitOpsCluster.
func TestEveryCommandSetsALoggerBeforeItsClients(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	// A server where nothing listens: every command that builds a client fails at once.
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	k := "--kubeconfig=" + kubeconfig
	for _, args := range []string{
		"sandbox up --wait=0 --dir=" + filepath.Join(dir, "file", "lab"), // under a file: fails before it starts anything
		"status " + k,
		"status guestbook " + k,
		"doctor " + k,
		"pause applicationset guestbook " + k,
		"resume applicationset guestbook " + k,
		"takeover --dry-run " + k,
		"dashboard --address=127.0.0.1:0 " + k,
		"controller --metrics-bind-address=0 --health-probe-bind-address=0 " + k,
	} {
		var name []string
		for _, f := range strings.Fields(args) {
			if !strings.HasPrefix(f, "-") {
				name = append(name, f)
			}
		}
		t.Run(strings.Join(name, " "), func(t *testing.T) {
			if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			probe := exec.Command(os.Args[0])
			probe.Env = append(os.Environ(), loggerProbeEnv+"="+args)
			out, err := probe.Output()
			if err != nil {
				t.Fatalf("%s: %v", args, err)
			}
			if got := strings.TrimSpace(string(out)); got != "logger set" {
				t.Errorf("argocd-pull %s: %s: controller-runtime prints a stack trace at its first log line 30 s in", args, got)
			}
		})
	}
}
