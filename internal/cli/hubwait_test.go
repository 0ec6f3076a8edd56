package cli

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/assets"
	"github.com/argocd-pull/argocd-pull/internal/controller"
	"github.com/argocd-pull/argocd-pull/internal/propagation"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

// A controller rolled out on a hub before Argo CD waits instead of crash-looping: /healthz
// answers, /readyz and the log say what is missing and how to install it; once Argo CD's CRDs are
// installed it becomes ready and works, without a restart.
func TestControllerWaitsForTheHubAPIs(t *testing.T) {
	testenv.Get(t) // skips under -short
	g := NewWithT(t)
	root, err := testenv.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	crds, err := assets.HubCRDs(root)
	g.Expect(err).NotTo(HaveOccurred())
	argoCRDs := crds[len(crds)-1] // HubCRDs ends with Argo CD's
	hub, err := testenv.StartWithCRDs(crds[:len(crds)-1]...)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = hub.Stop() }()

	probeAddr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := NewRootCommand()
	cmd.SetArgs([]string{"controller", "--kubeconfig", hub.Kubeconfig(t),
		"--health-probe-bind-address", probeAddr, "--metrics-bind-address", "0"})
	var stderr syncBuffer
	cmd.SetErr(&stderr)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()

	g.Eventually(func() (int, error) { return httpStatus("http://" + probeAddr + "/healthz") }, 20*time.Second, 100*time.Millisecond).
		Should(Equal(http.StatusOK), "alive while it waits")
	readyz := func() (string, error) {
		resp, err := http.Get("http://" + probeAddr + "/readyz")
		if err != nil {
			return "", err
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		return resp.Status + " " + string(body), err
	}
	g.Eventually(readyz, 20*time.Second, 100*time.Millisecond).Should(And(
		HavePrefix("503"),
		ContainSubstring("Argo CD APIs on the hub not served: applications.argoproj.io, applicationsets.argoproj.io, appprojects.argoproj.io"),
		ContainSubstring("install Argo CD on the hub"),
	), "/readyz says what the controller waits for")
	g.Consistently(done, 2*time.Second).ShouldNot(Receive(), "it waits, it does not exit")

	_, err = envtest.InstallCRDs(hub.Config, envtest.CRDInstallOptions{Paths: []string{argoCRDs}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(readyz, 60*time.Second, 200*time.Millisecond).Should(HavePrefix("200"), func() string {
		return "ready once Argo CD's CRDs are served; the command said: " + stderr.String()
	})

	// The controllers work: a pull-model Application naming a cluster the hub does not have is
	// refused with the reason on its status.
	app := argocd.NewApplication()
	app.SetNamespace(hub.Namespace(t))
	app.SetName("guestbook")
	app.SetLabels(map[string]string{api.PullLabel: "true"})
	app.SetAnnotations(map[string]string{api.ClusterAnnotation: "cluster1"})
	app.Object["spec"] = map[string]any{"project": "default", "destination": map[string]any{"server": argocd.LocalServer}}
	g.Expect(hub.Client.Create(ctx, app)).To(Succeed())
	g.Eventually(func() (string, error) {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(argocd.ApplicationGVK)
		err := hub.Client.Get(ctx, client.ObjectKeyFromObject(app), got)
		conditions, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conditions {
			if m, ok := c.(map[string]any); ok && m["type"] == controller.PropagationErrorCondition {
				msg, _ := m["message"].(string)
				return msg, err
			}
		}
		return "", err
	}, 30*time.Second, 200*time.Millisecond).Should(HavePrefix(propagation.ReasonNamespaceNotAllowed+":"),
		"the propagation controller runs (the Application's namespace is not the Argo CD namespace)")

	cancel()
	g.Eventually(done, 20*time.Second).Should(Receive(BeNil()))
}

// A hub that does not answer at all when the controller starts (a wrong kubeconfig, an
// unreachable apiserver) is not waited for: the command exits with an error naming it.
func TestControllerExitsWhenTheHubDoesNotAnswer(t *testing.T) {
	g := NewWithT(t)
	addr := freeAddr(t) // nothing listens there
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: hub, cluster: {server: "https://`+addr+`", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: hub, user: u}}]
current-context: c
`), 0o600)).To(Succeed())
	cmd := NewRootCommand()
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{"controller", "--kubeconfig", kubeconfig, "--metrics-bind-address", "0", "--health-probe-bind-address", "0"})
	err := cmd.ExecuteContext(context.Background())
	g.Expect(err).To(MatchError(ContainSubstring("the hub apiserver https://" + addr + " did not answer")))
}
