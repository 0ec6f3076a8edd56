package cli

import (
	"bytes"
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

// pauseFixture is a namespace of the test apiserver and the kubeconfig to reach it, with what
// the pause tests create and read there.
type pauseFixture struct {
	g      Gomega
	env    *testenv.Env
	ns, kc string
}

func newPauseFixture(t *testing.T) pauseFixture {
	env := testenv.Get(t)
	return pauseFixture{g: NewWithT(t), env: env, ns: env.Namespace(t), kc: env.Kubeconfig(t)}
}

// application creates the Application name, owned by the ApplicationSet set when one is given.
func (f pauseFixture) application(name string, set *unstructured.Unstructured) {
	app := argocd.NewApplication()
	app.SetNamespace(f.ns)
	app.SetName(name)
	if set != nil {
		app.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "argoproj.io/v1alpha1", Kind: "ApplicationSet", Name: set.GetName(), UID: set.GetUID()}})
	}
	app.Object["spec"] = map[string]any{"project": "default", "destination": map[string]any{}, "source": map[string]any{"repoURL": "x"}}
	f.g.Expect(f.env.Client.Create(context.Background(), app)).To(Succeed())
}

// marker is the pause annotation of the Application name.
func (f pauseFixture) marker(name string) string {
	got := argocd.NewApplication()
	f.g.Expect(f.env.Client.Get(context.Background(), types.NamespacedName{Namespace: f.ns, Name: name}, got)).To(Succeed())
	return got.GetAnnotations()[api.PausedAnnotation]
}

// pause and resume set the markers the controller reads (internal/controller's
// TestPauseAtEachScope shows what it does with them), kubectl-like.
func TestPauseAndResumeSetTheMarkers(t *testing.T) {
	f := newPauseFixture(t)
	g, env, ns, kc := f.g, f.env, f.ns, f.kc
	ctx := context.Background()
	f.application("web", nil)
	marker := func() string { return f.marker("web") }

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

// The ApplicationSet controller replaces the annotations of the Applications it generates but for
// those it keeps: pausing one of them is refused, with what to do instead, unless its
// ApplicationSet or the controller's global list keeps the pause annotation. Resuming is never
// refused. (The lab's TestAPausedStepHoldsItsRollout shows the real controller keeping it.)
func TestPausingAnApplicationItsApplicationSetWouldResumeIsRefused(t *testing.T) {
	f := newPauseFixture(t)
	g, env, ns, kc := f.g, f.env, f.ns, f.kc
	ctx := context.Background()
	appSet := func(name string, preserved ...any) *unstructured.Unstructured {
		s := argocd.NewApplicationSet()
		s.SetNamespace(ns)
		s.SetName(name)
		s.Object["spec"] = map[string]any{"generators": []any{}, "template": map[string]any{"metadata": map[string]any{}, "spec": map[string]any{
			"project": "default", "destination": map[string]any{}, "source": map[string]any{"repoURL": "x"}}}}
		if preserved != nil {
			s.Object["spec"].(map[string]any)["preservedFields"] = map[string]any{"annotations": preserved}
		}
		g.Expect(env.Client.Create(ctx, s)).To(Succeed())
		return s
	}
	generated, marker := f.application, f.marker

	generated("plain-cluster1", appSet("plain"))
	out, err := run(t, "pause", "app", "plain-cluster1", "-n", ns, "--kubeconfig", kc, "--reason", "INC-4711")
	g.Expect(err).To(MatchError(And(
		ContainSubstring("generated by the ApplicationSet plain"),
		ContainSubstring("the pause would not hold"),
		ContainSubstring("argocd-pull pause applicationset plain -n "+ns),
		ContainSubstring("spec.preservedFields.annotations: ["+api.PausedAnnotation+"]"))), out)
	g.Expect(marker("plain-cluster1")).To(BeEmpty(), "a refused pause writes nothing")
	out, err = run(t, "resume", "app", "plain-cluster1", "-n", ns, "--kubeconfig", kc)
	g.Expect(err).NotTo(HaveOccurred(), out)

	generated("keeps-cluster1", appSet("keeps", api.PausedAnnotation))
	out, err = run(t, "pause", "app", "keeps-cluster1", "-n", ns, "--kubeconfig", kc, "--reason", "INC-4711")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(marker("keeps-cluster1")).To(Equal("INC-4711"))

	g.Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: argocd.CmdParamsConfigMap},
		Data: map[string]string{argocd.GlobalPreservedAnnotationsKey: "example.com/a," + api.PausedAnnotation}})).To(Succeed())
	out, err = run(t, "pause", "app", "plain-cluster1", "-n", ns, "--kubeconfig", kc)
	g.Expect(err).NotTo(HaveOccurred(), "the ApplicationSet controller's global list keeps it: %s", out)
	g.Expect(marker("plain-cluster1")).To(Equal("true"))
}
