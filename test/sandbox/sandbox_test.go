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

	// A pull-model Application on the hub reaches cluster1 through its work agent.
	app := argocd.NewApplication()
	app.SetName("guestbook-cluster1")
	app.SetNamespace(sandbox.ArgoNamespace)
	app.SetLabels(map[string]string{argocd.PullLabel: "true"})
	app.SetAnnotations(map[string]string{argocd.ClusterAnnotation: "cluster1", argocd.SkipReconcileAnnotation: "true"})
	app.Object["spec"] = map[string]any{"project": "default",
		"source":      map[string]any{"repoURL": "https://git.example/apps", "path": "guestbook", "targetRevision": "main"},
		"destination": map[string]any{"name": "cluster1", "namespace": "guestbook"}}
	g.Expect(hub.Create(context.Background(), app)).To(Succeed())
	g.Eventually(func() error {
		return spoke.Get(context.Background(), client.ObjectKeyFromObject(app), argocd.NewApplication())
	}, 60*time.Second, 250*time.Millisecond).Should(Succeed(), "Application on cluster1; read %s/cluster1-work-agent.log", logs)

	procs, err := sandbox.Down(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(procs).To(HaveLen(7), "hub and cluster1 apiserver+etcd, work agent, placement, argocd-pull")
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
