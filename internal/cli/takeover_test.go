package cli

import (
	"context"
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/takeover"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
	"github.com/argocd-pull/argocd-pull/internal/test/upstreamwork"
)

func takeoverCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return runRoot(t, append([]string{"takeover"}, args...)...)
}

// takeover --dry-run lists each upstream work with what the controller does with it: one to
// adopt, one blocked (its cluster is not bound to the Application's namespace), one left (its
// hub Application is gone). Nothing is written.
func TestTakeoverDryRunListsWhatTheControllerDoes(t *testing.T) {
	env := testenv.Get(t)
	g := NewWithT(t)
	ctx := context.Background()
	c := env.Client
	ns := env.Namespace(t)
	create := func(o client.Object) {
		t.Helper()
		g.Expect(c.Create(ctx, o)).To(Succeed())
		t.Cleanup(func() { _ = c.Delete(ctx, o) })
	}
	cluster := func(bound bool) string {
		name := "to-" + utilrand.String(6)
		labels := map[string]string{}
		if bound {
			labels[clusterv1beta2.ClusterSetLabel] = "set-" + name
			create(&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "set-" + name}})
			create(&clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: "set-" + name, Namespace: ns},
				Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "set-" + name}})
		}
		create(&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}})
		create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
		return name
	}
	app := func(name, cluster string) *unstructured.Unstructured {
		a := argocd.NewApplication()
		a.SetNamespace(ns)
		a.SetName(name)
		a.SetLabels(map[string]string{api.PullLabel: "true"})
		a.SetAnnotations(map[string]string{api.ClusterAnnotation: cluster})
		a.Object["spec"] = map[string]any{"project": "default",
			"source":      map[string]any{"repoURL": "https://git.example/apps", "path": "guestbook"},
			"destination": map[string]any{"server": argocd.LocalServer, "namespace": "guestbook"}}
		create(a)
		return a
	}
	upstream := func(writer upstreamwork.Writer, a *unstructured.Unstructured) {
		w, err := upstreamwork.Work(writer, a, nil, "")
		g.Expect(err).NotTo(HaveOccurred())
		create(w)
	}
	bound, unbound := cluster(true), cluster(false)
	upstream(upstreamwork.RHACM, app("adopt-me", bound))
	upstream(upstreamwork.OCMBasic, app("blocked", unbound))
	gone := app("gone", bound)
	upstream(upstreamwork.OCMBasic, gone)
	g.Expect(c.Delete(ctx, gone)).To(Succeed())

	// versions is every ManifestWork and Application the command could write, with its
	// resourceVersion: unchanged after, nothing written.
	versions := func() map[string]string {
		out := map[string]string{}
		for _, namespace := range []string{bound, unbound} {
			works := &workv1.ManifestWorkList{}
			g.Expect(c.List(ctx, works, client.InNamespace(namespace))).To(Succeed())
			for _, w := range works.Items {
				out["work "+w.Namespace+"/"+w.Name] = w.ResourceVersion
			}
		}
		apps := argocd.NewApplicationList()
		g.Expect(c.List(ctx, apps, client.InNamespace(ns))).To(Succeed())
		for _, a := range apps.Items {
			out["application "+a.GetName()] = a.GetResourceVersion()
		}
		return out
	}
	before := versions()
	g.Expect(before).To(HaveLen(5), "three upstream works, two Applications")
	t.Cleanup(func() { g.Expect(versions()).To(Equal(before), "takeover --dry-run wrote nothing") })

	_, err := takeoverCmd(t, "-n", ns, "--kubeconfig", env.Kubeconfig(t))
	g.Expect(err).To(MatchError(ContainSubstring("give --dry-run")))

	out, err := takeoverCmd(t, "--dry-run", "-n", ns, "--kubeconfig", env.Kubeconfig(t))
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("takeover --dry-run:\n%s", out)
	g.Expect(out).To(HavePrefix("CLUSTER"))
	g.Expect(out).To(MatchRegexp(`(?m)^` + bound + `\s+` + ns + `/adopt-me\s+adopt-me-\S+\s+RHACM\s+adopt\s+argocd-pull writes its ManifestWork`))
	g.Expect(out).To(MatchRegexp(`(?m)^` + unbound + `\s+` + ns + `/blocked\s+blocked-\S+\s+OCM basic mode\s+blocked\s+ClusterNotBoundToNamespace: ManagedCluster ` + unbound + ` is not bound`))
	g.Expect(out).To(MatchRegexp(`(?m)^` + bound + `\s+` + ns + `/gone\s+gone-\S+\s+OCM basic mode\s+left\s+its hub Application does not exist`))
	g.Expect(out).To(HaveSuffix("\n3 upstream ManifestWorks: 1 to adopt, 0 adopting, 1 blocked, 1 left\n"))

	// Without -n, the Argo CD namespace is the kubeconfig context's, as kubectl's namespace is.
	withNamespace := withContextNamespace(t, env.Kubeconfig(t), ns)
	fromContext, err := takeoverCmd(t, "--dry-run", "--kubeconfig", withNamespace)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fromContext).To(Equal(out))

	out, err = takeoverCmd(t, "--dry-run", "-n", ns, "--kubeconfig", env.Kubeconfig(t), "-o", "json")
	g.Expect(err).NotTo(HaveOccurred())
	var entries []takeover.Entry
	g.Expect(json.Unmarshal([]byte(out), &entries)).To(Succeed())
	g.Expect(entries).To(HaveLen(3))
}
