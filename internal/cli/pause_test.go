package cli

import (
	"bytes"
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

// run runs `argocd-pull args...` and returns what it printed.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := NewRootCommand()
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

// pause and resume set the markers the controller reads (internal/controller's
// TestPauseAtEachScope shows what it does with them), kubectl-like.
func TestPauseAndResumeSetTheMarkers(t *testing.T) {
	g := NewWithT(t)
	env := testenv.Get(t)
	ns := env.Namespace(t)
	kc := env.Kubeconfig(t)
	ctx := context.Background()

	app := argocd.NewApplication()
	app.SetNamespace(ns)
	app.SetName("web")
	app.Object["spec"] = map[string]any{"project": "default", "destination": map[string]any{}, "source": map[string]any{"repoURL": "x"}}
	g.Expect(env.Client.Create(ctx, app)).To(Succeed())
	marker := func() string {
		got := argocd.NewApplication()
		g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web"}, got)).To(Succeed())
		return got.GetAnnotations()[api.PausedAnnotation]
	}

	out, err := run(t, "pause", "app", "web", "-n", ns, "--kubeconfig", kc, "--reason", "INC-4711")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(Equal("applications.argoproj.io/web paused (INC-4711)\n"))
	g.Expect(marker()).To(Equal("INC-4711"))
	out, err = run(t, "resume", "application", "web", "-n", ns, "--kubeconfig", kc)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(Equal("applications.argoproj.io/web resumed\n"))
	g.Expect(marker()).To(Equal("false"))

	out, err = run(t, "pause", "--all", "-n", ns, "--kubeconfig", kc)
	g.Expect(err).NotTo(HaveOccurred(), out)
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: api.PauseConfigMap}, cm)).To(Succeed())
	g.Expect(cm.Data).To(HaveKeyWithValue(api.PauseKey, "true"))
	out, err = run(t, "resume", "--all", "-n", ns, "--kubeconfig", kc)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: api.PauseConfigMap}, cm)).To(Succeed())
	g.Expect(cm.Data).To(HaveKeyWithValue(api.PauseKey, "false"))

	for args, want := range map[string][]string{
		"no such Application":      {"pause", "app", "nope", "-n", ns, "--kubeconfig", kc},
		"unknown kind":             {"pause", "deployment", "web", "-n", ns, "--kubeconfig", kc},
		"--all with a name":        {"pause", "--all", "app", "web", "-n", ns, "--kubeconfig", kc},
		"nothing named":            {"resume", "-n", ns, "--kubeconfig", kc},
		"an empty reason":          {"pause", "app", "web", "--reason", "", "-n", ns, "--kubeconfig", kc},
		"resume takes no --reason": {"resume", "app", "web", "--reason", "x", "-n", ns, "--kubeconfig", kc},
	} {
		out, err := run(t, want...)
		g.Expect(err).To(HaveOccurred(), "%s: %s", args, out)
	}
	g.Expect(marker()).To(Equal("false"), "a refused command changes nothing")
}
