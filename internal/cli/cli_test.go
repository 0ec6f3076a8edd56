package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/argocd-pull/argocd-pull/internal/localproc"

	. "github.com/onsi/gomega"

	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv(loggerProbeEnv); ok {
		probeLogger(args)
		return
	}
	testenv.Main(m)
}

func TestVersionPrintsVersionAndPlatform(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	cmd := NewRootCommand()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"version"})
	g.Expect(cmd.Execute()).To(Succeed())
	g.Expect(out.String()).To(MatchRegexp(`^argocd-pull \S+ \((revision \S+, )?go1\.\d+.*, \w+/\w+\)\n$`))
}

func TestControllerHelpListsEveryFlag(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	cmd := NewRootCommand()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"controller", "--help"})
	g.Expect(cmd.Execute()).To(Succeed())
	for _, flag := range []string{"--kubeconfig", "--metrics-bind-address", "--health-probe-bind-address",
		"--leader-elect", "--leader-election-namespace", "--argocd-namespace", "--pull-namespaces", "--gitops-namespaces", "--grant-argocd-namespaces", "--concurrency", "--zap-log-level"} {
		g.Expect(out.String()).To(ContainSubstring(flag))
	}
	controller, _, err := cmd.Find([]string{"controller"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(controller.Flags().Lookup("pprof-bind-address").DefValue).To(BeEmpty(), "profiling must be off unless asked for")
}

func TestControllerRejectsBadOptionsBeforeStarting(t *testing.T) {
	env := testenv.Get(t)
	tests := map[string]struct {
		args []string
		want string
	}{
		"no worker":         {[]string{"--concurrency", "0"}, "max concurrent reconciles must be at least 1"},
		"a malformed grant": {[]string{"--grant-argocd-namespaces", "team-a"}, "--grant-argocd-namespaces: grant \"team-a\": want NAMESPACE=NS1[,NS2...]"},
		"a grant of a namespace the install does not name": {[]string{"--argocd-namespace", "openshift-gitops",
			"--grant-argocd-namespaces", "team-a=openshift-gitops", "--grant-argocd-namespaces", "team-b=kube-system"},
			"the grant team-b=kube-system names kube-system, which is not an Argo CD namespace of this install"},
		"a renew deadline past the lease": {[]string{"--leader-election-renew-deadline", "20s"},
			"leader election needs 0 < --leader-election-retry-period (500ms) < --leader-election-renew-deadline (20s) < --leader-election-lease-duration (15s)"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			cmd := NewRootCommand()
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			cmd.SetArgs(append([]string{"controller", "--kubeconfig", env.Kubeconfig(t),
				"--metrics-bind-address", "0", "--health-probe-bind-address", "0"}, tt.args...))
			err := cmd.ExecuteContext(context.Background())
			g.Expect(err).To(MatchError(ContainSubstring(tt.want)))
		})
	}
}

// A pod without its service-account token (automountServiceAccountToken: false, or a missing
// volume) and no kubeconfig: the loading chain alone says "no configuration has been provided,
// try setting KUBERNETES_MASTER"; the controller names what is missing.
func TestControllerWithoutAnyConfigurationSaysWhatIsMissing(t *testing.T) {
	g := NewWithT(t)
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
	t.Setenv("KUBERNETES_SERVICE_PORT", "6443")
	_, err := runRoot(t, "controller", "--metrics-bind-address", "0", "--health-probe-bind-address", "0")
	g.Expect(err).To(MatchError(And(
		ContainSubstring("no Kubernetes configuration: no --kubeconfig, $KUBECONFIG or ~/.kube/config"),
		ContainSubstring("/var/run/secrets/kubernetes.io/serviceaccount/token"),
		ContainSubstring("check that the service-account token is mounted"))))
}

// The controller command serves probes and metrics against a real apiserver and stops cleanly
// when its context ends.
func TestControllerServesProbesAndMetricsAndStops(t *testing.T) {
	env := testenv.Get(t)
	g := NewWithT(t)
	probeAddr, metricsAddr, pprofAddr, dashboardAddr := freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := NewRootCommand()
	cmd.SetArgs([]string{"controller", "--kubeconfig", env.Kubeconfig(t),
		"--health-probe-bind-address", probeAddr, "--metrics-bind-address", metricsAddr, "--pprof-bind-address", pprofAddr,
		"--dashboard-bind-address", dashboardAddr, "--leader-elect", "--leader-election-namespace", env.Namespace(t)})
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()

	for _, url := range []string{"http://" + probeAddr + "/healthz", "http://" + probeAddr + "/readyz"} {
		g.Eventually(func() (int, error) { return httpStatus(url) }, 20*time.Second, 100*time.Millisecond).
			Should(Equal(http.StatusOK), "GET %s", url)
	}
	g.Eventually(func() (string, error) { return httpBody("http://" + metricsAddr + "/metrics") }, 20*time.Second, 100*time.Millisecond).
		Should(ContainSubstring("leader_election_master_status"))
	g.Eventually(func() (string, error) { return httpBody("http://" + pprofAddr + "/debug/pprof/") }, 20*time.Second, 100*time.Millisecond).
		Should(ContainSubstring("goroutine"), "the profiles asked for with --pprof-bind-address")
	g.Eventually(func() (string, error) { return httpBody("http://" + dashboardAddr + "/api/snapshot") }, 20*time.Second, 100*time.Millisecond).
		Should(ContainSubstring(`"clusters":`), "the fleet view asked for with --dashboard-bind-address")
	g.Eventually(func() (string, error) { return httpBody("http://" + dashboardAddr + "/") }, 20*time.Second, 100*time.Millisecond).
		Should(ContainSubstring("argocd-pull fleet"))

	cancel()
	g.Eventually(done, 20*time.Second).Should(Receive(BeNil()))
}

func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := localproc.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

func httpStatus(url string) (int, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	return resp.StatusCode, nil
}

func httpBody(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	var b strings.Builder
	_, err = io.Copy(&b, resp.Body)
	return b.String(), err
}
