// Package sandbox_test brings the local lab up as `argocd-pull sandbox up` does, checks the
// documents' flow through its real components, and checks that down leaves nothing behind.
package sandbox_test

import (
	"bytes"
	"context"
	"net"
	"net/url"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitopsv1beta1 "github.com/argocd-pull/argocd-pull/api/v1beta1"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/assets"
	"github.com/argocd-pull/argocd-pull/internal/sandbox"
	"github.com/argocd-pull/argocd-pull/internal/scheme"
)

func TestSandboxUpRunsTheFlowAndDownLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts apiservers and agents as processes; run without -short")
	}
	g := NewWithT(t)
	root, err := assets.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	bin := filepath.Join(t.TempDir(), "argocd-pull")
	build := exec.Command("go", "build", "-o", bin, "./cmd/argocd-pull")
	build.Dir = root
	out, err := build.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "building argocd-pull: %s", out)

	dir := t.TempDir()
	var progress bytes.Buffer
	lab, err := sandbox.Up(context.Background(), sandbox.Options{Dir: dir, Clusters: 1, Controller: bin, Out: &progress})
	t.Cleanup(func() { _, _ = sandbox.Down(dir) })
	g.Expect(err).NotTo(HaveOccurred(), "sandbox up; progress:\n%s", progress.String())
	g.Expect(progress.String()).To(ContainSubstring("- cluster1: OCM work agent ... done"))
	logs := filepath.Join(dir, "logs")

	s, err := scheme.New()
	g.Expect(err).NotTo(HaveOccurred())
	hub, err := client.New(lab.Hub.Config, client.Options{Scheme: s})
	g.Expect(err).NotTo(HaveOccurred())
	spoke, err := client.New(lab.Managed[0].Config, client.Options{Scheme: s})
	g.Expect(err).NotTo(HaveOccurred())

	// The real placement controller selects cluster1; the GitOpsCluster registers it.
	g.Eventually(func() bool {
		gc := &gitopsv1beta1.GitOpsCluster{}
		return hub.Get(context.Background(), types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: "argo-ocm-importer"}, gc) == nil &&
			meta.IsStatusConditionTrue(gc.Status.Conditions, gitopsv1beta1.ReadyCondition)
	}, 60*time.Second, 250*time.Millisecond).Should(BeTrue(), "GitOpsCluster Ready; read %s/hub-placement.log and hub-argocd-pull.log", logs)
	g.Expect(hub.Get(context.Background(), types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: "cluster1-cluster-secret"}, &corev1.Secret{})).To(Succeed())

	// The documents' ApplicationSet -> Application -> ManifestWork -> Application on cluster1 ->
	// its Argo CD syncs the sample app from the local Git repository -> the report.
	report, err := lab.WaitForReport(context.Background(), &progress, 2*time.Minute)
	g.Expect(err).NotTo(HaveOccurred(), "report; progress:\n%s", progress.String())
	g.Expect(report.Statuses.ClusterConditions).To(HaveLen(1))
	g.Expect(report.Statuses.ClusterConditions[0].Cluster).To(Equal("cluster1"))
	g.Expect(report.Statuses.Resources).To(ContainElement(HaveField("Name", "guestbook-ui")))
	deployed := &corev1.ConfigMap{}
	g.Expect(spoke.Get(context.Background(), types.NamespacedName{Namespace: "guestbook", Name: "guestbook-ui"}, deployed)).To(Succeed(),
		"the sample app deployed on cluster1 by its own Argo CD; read %s/cluster1-argocd-application-controller.log", logs)
	onSpoke := argocd.NewApplication()
	g.Expect(spoke.Get(context.Background(), types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: "cluster1-guestbook-app"}, onSpoke)).To(Succeed())
	server, _, _ := unstructured.NestedString(onSpoke.Object, "spec", "destination", "server")
	g.Expect(server).To(Equal(argocd.LocalServer))

	procs, err := sandbox.Down(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(procs).To(HaveLen(11), "apiserver+etcd of hub and cluster1, work agent, redis, repo-server, application controller, placement, argocd-pull, applicationset controller")
	for _, p := range procs {
		g.Expect(p.Running()).To(BeFalse(), "%s (pid %d) still runs", p.Name, p.PID)
	}
	for _, c := range append([]*sandbox.Cluster{lab.Hub}, lab.Managed...) {
		u, _ := url.Parse(c.URL)
		conn, err := net.DialTimeout("tcp", u.Host, time.Second)
		if err == nil {
			_ = conn.Close()
		}
		g.Expect(err).To(HaveOccurred(), "%s's port %s is still open", c.Name, u.Host)
	}
}
