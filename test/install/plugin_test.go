package install

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/argocd-pull/argocd-pull/internal/cli"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

// The same binary is a kubectl plugin under the name kubectl-argocd_pull ('make build' links it):
// the real kubectl finds it on PATH, runs 'kubectl argocd-pull status' against the hub, and its
// help speaks of 'kubectl argocd-pull'.
func TestKubectlPlugin(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	g.Expect(os.Symlink(argocdPull(t), filepath.Join(dir, cli.PluginBinary))).To(Succeed())
	env := []string{"PATH=" + dir + string(os.PathListSeparator) + os.Getenv("PATH")}

	g.Expect(string(run(t, env, kubectl(t), "plugin", "list"))).To(ContainSubstring(cli.PluginBinary))
	help := string(run(t, env, kubectl(t), "argocd-pull", "--help"))
	g.Expect(help).To(ContainSubstring("kubectl argocd-pull [command]"))
	g.Expect(help).NotTo(ContainSubstring("\n  argocd-pull [command]"))

	hub := testenv.Get(t)
	out := string(run(t, env, kubectl(t), "argocd-pull", "status", "-A", "--kubeconfig", hub.Kubeconfig(t)))
	g.Expect(out).To(Or(ContainSubstring("No reports"), ContainSubstring("NAMESPACE")), "the reports of the shared apiserver, or none")
}
