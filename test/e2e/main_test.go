// Package e2e runs the pull model end to end: a hub apiserver with argocd-pull's controller, a
// second apiserver as the managed cluster, and the real OCM work agent between them. The test
// stands in for the managed cluster's Argo CD by writing the Application's status there.
package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/argocd-pull/argocd-pull/internal/localproc"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/internal/assets"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

const (
	argoNamespace = "argocd"
	clusterName   = "cluster1"
)

// lab is the running hub, managed cluster and agent, shared by the package's tests.
var lab struct {
	hub, spoke *testenv.Env
	dir        string // kubeconfigs and process logs
	agentLog   string
	startErr   error

	// The controller runs as a process of its own, so that a test can stop and start it.
	controllerBin, hubKubeconfig string
	controller                   *localproc.Process
	controllerStarts             int
}

// startController starts argocd-pull's controller against the hub, its log in the lab directory.
func startController() error {
	lab.controllerStarts++
	logLevel := "error" // ARGOCD_PULL_TEST_LOGS=1 shows the controller's progress too
	if os.Getenv("ARGOCD_PULL_TEST_LOGS") != "" {
		logLevel = "info"
	}
	p, err := localproc.Start(filepath.Join(lab.dir, fmt.Sprintf("controller-%d.log", lab.controllerStarts)), lab.controllerBin, []string{
		"controller", "--kubeconfig", lab.hubKubeconfig, "--argocd-namespace", argoNamespace,
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--zap-log-level", logLevel})
	if err != nil {
		return err
	}
	lab.controller = p
	return nil
}

// buildController builds argocd-pull into the lab directory.
func buildController() (string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(lab.dir, "argocd-pull")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/argocd-pull")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building argocd-pull: %w: %s", err, out)
	}
	return bin, nil
}

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	stop, err := startLab()
	lab.startErr = err
	code := m.Run()
	stop()
	testenv.RemoveUnlessFailed(lab.dir, code)
	os.Exit(code)
}

// startLab starts everything and returns a function that stops it in reverse order.
func startLab() (stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	defer func() {
		if err != nil {
			stop()
			stop = func() {}
		}
	}()
	agent, err := workAgentBinary()
	if err != nil {
		return stop, err
	}
	if lab.dir, err = os.MkdirTemp("", "argocd-pull-e2e-"); err != nil {
		return stop, err
	}
	if lab.hub, err = testenv.Start(); err != nil {
		return stop, fmt.Errorf("starting the hub: %w", err)
	}
	stops = append(stops, func() { _ = lab.hub.Stop() })
	if lab.spoke, err = testenv.StartManagedCluster(); err != nil {
		return stop, fmt.Errorf("starting the managed cluster: %w", err)
	}
	stops = append(stops, func() { _ = lab.spoke.Stop() })
	hubKubeconfig, spokeKubeconfig := filepath.Join(lab.dir, "hub.kubeconfig"), filepath.Join(lab.dir, "cluster1.kubeconfig")
	if err := lab.hub.WriteKubeconfig(hubKubeconfig); err != nil {
		return stop, err
	}
	if err := lab.spoke.WriteKubeconfig(spokeKubeconfig); err != nil {
		return stop, err
	}
	if err := registerCluster(); err != nil {
		return stop, err
	}

	lab.agentLog = filepath.Join(lab.dir, "work-agent.log")
	listen, err := localproc.FreeAddr() // its HTTPS endpoint defaults to :8443 on every interface
	if err != nil {
		return stop, err
	}
	agentProcess, err := localproc.Start(lab.agentLog, agent, []string{
		"--listen=" + listen,
		"--spoke-cluster-name=" + clusterName,
		"--workload-source-config=" + hubKubeconfig,
		"--kubeconfig=" + spokeKubeconfig,
		"--feature-gates=RawFeedbackJsonString=true",
		"--status-sync-interval=1s",
		"--disable-leader-election",
		"--namespace=open-cluster-management-agent",
	})
	if err != nil {
		return stop, err
	}
	stops = append(stops, agentProcess.Stop)

	if lab.controllerBin, err = buildController(); err != nil {
		return stop, err
	}
	lab.hubKubeconfig = hubKubeconfig
	if err := startController(); err != nil {
		return stop, err
	}
	stops = append(stops, func() { lab.controller.Stop() })
	return stop, nil
}

// registerCluster creates on the hub what OCM registration would: the ManagedCluster, its
// namespace, and a set bound to the Argo CD namespace; and on the managed cluster the namespace
// its Argo CD runs in.
func registerCluster() error {
	ctx := context.Background()
	hubObjects := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: argoNamespace}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterName}},
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "gitops"}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: clusterName, Labels: map[string]string{clusterv1beta2.ClusterSetLabel: "gitops"}},
			Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}},
		&clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: "gitops", Namespace: argoNamespace},
			Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "gitops"}},
	}
	for _, o := range hubObjects {
		if err := lab.hub.Client.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %T %s on the hub: %w", o, o.GetName(), err)
		}
	}
	if err := lab.spoke.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: argoNamespace}}); err != nil {
		return fmt.Errorf("creating namespace %s on the managed cluster: %w", argoNamespace, err)
	}
	return nil
}

// workAgentBinary is the work agent the Makefile built (or $OCM_ASSETS/work-agent).
func workAgentBinary() (string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	dir, err := assets.OCMBinDir(root)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "work-agent"), nil
}

// requireLab fails the test when the lab did not start, and skips it under -short.
func requireLab(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: needs apiservers and the OCM work agent; run without -short")
	}
	if lab.startErr != nil {
		t.Fatalf("the end-to-end lab did not start: %v", lab.startErr)
	}
}

// eventually polls cond until it holds or the timeout ends, then fails naming what to read.
func eventually(t *testing.T, what string, timeout time.Duration, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		last = err
		return ok, nil
	})
	if err != nil {
		t.Fatalf("%s: not within %s (last error: %v); the work agent's log is %s", what, timeout, last, lab.agentLog)
	}
}
