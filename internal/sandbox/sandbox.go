// Package sandbox runs a local pull-model lab with real components and no Docker: a hub and
// managed clusters (kube-apiserver + etcd each), the real OCM work agent per managed cluster, the
// real OCM placement controller and argocd-pull's controller on the hub, as processes on 127.0.0.1.
// `sandbox up` starts it and returns; `sandbox down` stops everything it started.
package sandbox

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/localproc"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitopsv1beta1 "github.com/argocd-pull/argocd-pull/api/v1beta1"
	"github.com/argocd-pull/argocd-pull/internal/assets"
	"github.com/argocd-pull/argocd-pull/internal/scheme"
)

// The documents' names: the Argo CD namespace on the hub and on every managed cluster, the
// Placement their ApplicationSet selects decisions of, and that ApplicationSet.
const (
	ArgoNamespace      = "openshift-gitops"
	PlacementName      = "aws-app-placement"
	ApplicationSetName = "guestbook-allclusters-app-set"
)

// A tenant of the lab: a hub namespace whose Applications the controller takes
// (--pull-namespaces), bound to the clusters' set, with an AppProject in the Argo CD namespace
// that lists it in sourceNamespaces and lets it deploy only into its own namespace. On the managed
// clusters its Applications land in the same namespace, which their Argo CD reconciles
// (--application-namespaces), as an operator configures Argo CD for Applications in any namespace.
const (
	TenantNamespace = "team-web"
	TenantProject   = "team-web"
)

// Options say what to start.
type Options struct {
	// Dir holds kubeconfigs, logs, data and the process list.
	Dir string
	// Clusters is the number of managed clusters, named cluster1, cluster2, ...
	Clusters int
	// Controller is the argocd-pull binary to run as the hub controller.
	Controller string
	// Out receives one progress line per step.
	Out io.Writer
	// ControllerArgs are extra flags for argocd-pull's controller (e.g. --stale-after).
	ControllerArgs []string
}

// Lab is a running sandbox.
type Lab struct {
	Hub     *Cluster
	Managed []*Cluster
	Dir     string
	RepoURL string
	// Revision is the commit the lab's Git repository started at.
	Revision string
	progress *progress
}

type progress struct {
	out   io.Writer
	start time.Time
}

func (p *progress) step(format string, args ...any) func() {
	begin := time.Now()
	fmt.Fprintf(p.out, "- "+format+" ...", args...)
	return func() { fmt.Fprintf(p.out, " done (%.1fs)\n", time.Since(begin).Seconds()) }
}

// Up starts the lab. On error, what was started keeps running: Down stops it.
func Up(ctx context.Context, o Options) (*Lab, error) {
	if o.Clusters < 1 {
		return nil, fmt.Errorf("a sandbox needs at least one managed cluster, got %d", o.Clusters)
	}
	if procs, _ := Processes(o.Dir); anyRunning(procs) {
		return nil, fmt.Errorf("a sandbox already runs in %s: run 'argocd-pull sandbox down --dir %s' first", o.Dir, o.Dir)
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	root, err := assets.RepoRoot()
	if err != nil {
		return nil, err
	}
	kubeBin, err := assets.KubeBinDir(root)
	if err != nil {
		return nil, err
	}
	ocmBin, err := assets.OCMBinDir(root)
	if err != nil {
		return nil, err
	}
	argoBinDir, err := assets.ArgoCDBinDir(root)
	if err != nil {
		return nil, err
	}
	argoBin := filepath.Join(argoBinDir, "argocd")
	lab := &Lab{Dir: o.Dir, progress: &progress{out: o.Out, start: time.Now()}}
	done := lab.progress.step("hub: kube-apiserver and etcd")
	if lab.Hub, err = startCluster(ctx, o.Dir, kubeBin, "hub"); err != nil {
		return lab, err
	}
	done()
	for i := 1; i <= o.Clusters; i++ {
		name := "cluster" + strconv.Itoa(i)
		done := lab.progress.step("%s: kube-apiserver and etcd", name)
		c, err := startCluster(ctx, o.Dir, kubeBin, name)
		if err != nil {
			return lab, err
		}
		lab.Managed = append(lab.Managed, c)
		done()
	}

	done = lab.progress.step("CRDs: OCM, Argo CD and argocd-pull on the hub; Argo CD and AppliedManifestWork on the managed clusters")
	hubCRDs, err := assets.HubCRDs(root)
	if err != nil {
		return lab, err
	}
	ocmAPI, err := assets.OCMAPIDir(root)
	if err != nil {
		return lab, err
	}
	// The placement controller also reads AddOnPlacementScores.
	hubCRDs = append(hubCRDs, filepath.Join(ocmAPI, "cluster", "v1alpha1"))
	if err := installCRDs(ctx, lab.Hub.Config, hubCRDs); err != nil {
		return lab, fmt.Errorf("installing CRDs on the hub: %w", err)
	}
	managedCRDs, err := assets.ManagedClusterCRDs(root)
	if err != nil {
		return lab, err
	}
	for _, c := range lab.Managed {
		if err := installCRDs(ctx, c.Config, managedCRDs); err != nil {
			return lab, fmt.Errorf("installing CRDs on %s: %w", c.Name, err)
		}
	}
	done()

	done = lab.progress.step("hub: namespaces, ManagedClusters (accepted and available), ManagedClusterSet and binding, Placement, GitOpsCluster")
	if err := lab.register(ctx); err != nil {
		return lab, err
	}
	done()

	done = lab.progress.step("Argo CD base config and default AppProject on every cluster; the documents' RBAC on the managed clusters")
	for _, c := range append([]*Cluster{lab.Hub}, lab.Managed...) {
		cl, err := c.Client()
		if err != nil {
			return lab, err
		}
		if err := installArgoConfig(ctx, cl, root); err != nil {
			return lab, fmt.Errorf("%s: %w", c.Name, err)
		}
		if err := createDefaultProject(ctx, cl); err != nil {
			return lab, fmt.Errorf("%s: %w", c.Name, err)
		}
		if c != lab.Hub {
			if err := installDocumentsRBAC(ctx, cl); err != nil {
				return lab, fmt.Errorf("%s: %w", c.Name, err)
			}
		}
	}
	done()

	for _, c := range lab.Managed {
		done := lab.progress.step("%s: OCM work agent", c.Name)
		port, err := localproc.FreePort()
		if err != nil {
			return lab, err
		}
		if _, err := start(o.Dir, c.Name+"-work-agent", filepath.Join(ocmBin, "work-agent"), []string{
			"--spoke-cluster-name=" + c.Name, "--workload-source-config=" + lab.Hub.Kubeconfig, "--kubeconfig=" + c.Kubeconfig,
			"--feature-gates=RawFeedbackJsonString=true", "--disable-leader-election", "--namespace=open-cluster-management-agent",
			"--listen=127.0.0.1:" + strconv.Itoa(port),
		}); err != nil {
			return lab, err
		}
		done()
	}

	for _, c := range lab.Managed {
		done := lab.progress.step("%s: Argo CD application controller, repo-server and redis", c.Name)
		if err := startManagedArgoCD(o.Dir, argoBin, c); err != nil {
			return lab, err
		}
		done()
	}

	done = lab.progress.step("hub: OCM placement controller")
	port, err := localproc.FreePort()
	if err != nil {
		return lab, err
	}
	if _, err := start(o.Dir, "hub-placement", filepath.Join(ocmBin, "placement"), []string{
		"--kubeconfig=" + lab.Hub.Kubeconfig, "--disable-leader-election", "--listen=127.0.0.1:" + strconv.Itoa(port),
	}); err != nil {
		return lab, err
	}
	done()

	done = lab.progress.step("hub: argocd-pull controller")
	metrics, err := localproc.FreePort()
	if err != nil {
		return lab, err
	}
	probes, err := localproc.FreePort()
	if err != nil {
		return lab, err
	}
	if _, err := start(o.Dir, "hub-argocd-pull", o.Controller, append([]string{
		"controller", "--kubeconfig=" + lab.Hub.Kubeconfig, "--argocd-namespace=" + ArgoNamespace,
		"--pull-namespaces=" + ArgoNamespace + "," + TenantNamespace,
		"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(metrics), "--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(probes),
	}, o.ControllerArgs...)); err != nil {
		return lab, err
	}
	done()

	done = lab.progress.step("hub: Argo CD ApplicationSet controller")
	if err := startApplicationSetController(o.Dir, argoBin, lab.Hub); err != nil {
		return lab, err
	}
	done()

	// The documents' order: the GitOpsCluster registers the clusters (and the placement generator
	// ConfigMap the ApplicationSet names) before the ApplicationSet exists.
	done = lab.progress.step("waiting for the GitOpsCluster to register the clusters")
	if err := lab.waitGitOpsClusterReady(ctx, 2*time.Minute); err != nil {
		return lab, err
	}
	done()

	done = lab.progress.step("a local Git repository with the sample app, and the documents' pull-model ApplicationSet")
	repoURL, err := initGitRepo(o.Dir)
	if err != nil {
		return lab, err
	}
	hub, err := lab.Hub.Client()
	if err != nil {
		return lab, err
	}
	if _, err := applyDocumentsApplicationSet(ctx, hub, root, repoURL); err != nil {
		return lab, err
	}
	lab.RepoURL = repoURL
	if lab.Revision, err = gitHead(o.Dir); err != nil {
		return lab, err
	}
	done()
	return lab, nil
}

func (l *Lab) waitGitOpsClusterReady(ctx context.Context, timeout time.Duration) error {
	hub, err := l.Hub.Client()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		gc := &gitopsv1beta1.GitOpsCluster{}
		if err := hub.Get(ctx, client.ObjectKey{Namespace: ArgoNamespace, Name: "argo-ocm-importer"}, gc); err == nil &&
			meta.IsStatusConditionTrue(gc.Status.Conditions, gitopsv1beta1.ReadyCondition) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the GitOpsCluster was not Ready within %s; read %s/logs/hub-placement.log and hub-argocd-pull.log", timeout, l.Dir)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Stop stops one process of the lab by name (e.g. "cluster1-work-agent").
func (l *Lab) Stop(name string) error {
	procs, err := Processes(l.Dir)
	if err != nil {
		return err
	}
	for _, p := range procs {
		if p.Name == name {
			p.stop(10 * time.Second)
			return nil
		}
	}
	return fmt.Errorf("no process %s in the lab", name)
}

// Restart starts a stopped process of the lab again.
func (l *Lab) Restart(name string) error {
	_, err := restart(l.Dir, name)
	return err
}

// Client returns a client for the cluster.
func (c *Cluster) Client() (client.Client, error) {
	s, err := scheme.New()
	if err != nil {
		return nil, err
	}
	return client.New(c.Config, client.Options{Scheme: s})
}

// register creates on the hub what OCM registration and the documents' setup would. The
// ManagedClusters are created accepted and marked available directly: OCM's registration needs a
// CSR signer (kube-controller-manager), which this sandbox does not run.
func (l *Lab) register(ctx context.Context) error {
	s, err := scheme.New()
	if err != nil {
		return err
	}
	hub, err := client.New(l.Hub.Config, client.Options{Scheme: s})
	if err != nil {
		return err
	}
	objects := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ArgoNamespace}},
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "gitops"}},
		&clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: "gitops", Namespace: ArgoNamespace},
			Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "gitops"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: TenantNamespace}},
		&clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: "gitops", Namespace: TenantNamespace},
			Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "gitops"}},
		tenantProject(),
		&clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: PlacementName, Namespace: ArgoNamespace},
			Spec: clusterv1beta1.PlacementSpec{ClusterSets: []string{"gitops"}}},
		&gitopsv1beta1.GitOpsCluster{ObjectMeta: metav1.ObjectMeta{Name: "argo-ocm-importer", Namespace: ArgoNamespace},
			Spec: gitopsv1beta1.GitOpsClusterSpec{
				ArgoServer:   gitopsv1beta1.ArgoServerSpec{Cluster: "notused", ArgoNamespace: ArgoNamespace},
				PlacementRef: &corev1.ObjectReference{Kind: "Placement", APIVersion: "cluster.open-cluster-management.io/v1beta1", Name: PlacementName},
			}},
	}
	for _, c := range l.Managed {
		objects = append(objects,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.Name}},
			&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: c.Name, Labels: map[string]string{clusterv1beta2.ClusterSetLabel: "gitops", "name": c.Name}},
				Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true, ManagedClusterClientConfigs: []clusterv1.ClientConfig{{URL: c.URL}}}})
	}
	for _, o := range objects {
		if err := hub.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s on the hub: %w", o, o.GetName(), err)
		}
	}
	for _, c := range l.Managed {
		mc := &clusterv1.ManagedCluster{}
		if err := hub.Get(ctx, client.ObjectKey{Name: c.Name}, mc); err != nil {
			return err
		}
		now := metav1.Now()
		mc.Status.Conditions = []metav1.Condition{
			{Type: clusterv1.ManagedClusterConditionHubAccepted, Status: metav1.ConditionTrue, Reason: "SandboxAccepted", Message: "accepted by argocd-pull sandbox", LastTransitionTime: now},
			{Type: clusterv1.ManagedClusterConditionJoined, Status: metav1.ConditionTrue, Reason: "SandboxJoined", Message: "registered by argocd-pull sandbox", LastTransitionTime: now},
			{Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionTrue, Reason: "SandboxAvailable", Message: "its work agent runs in the sandbox", LastTransitionTime: now},
		}
		if err := hub.Status().Update(ctx, mc); err != nil {
			return fmt.Errorf("marking ManagedCluster %s available: %w", c.Name, err)
		}
		spoke, err := client.New(c.Config, client.Options{Scheme: s})
		if err != nil {
			return err
		}
		for _, ns := range []string{ArgoNamespace, TenantNamespace} {
			if err := spoke.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating namespace %s on %s: %w", ns, c.Name, err)
			}
		}
	}
	return nil
}

// tenantProject is the lab tenant's AppProject, in the hub's Argo CD namespace: it travels to the
// managed clusters' Argo CD namespace with the tenant's Applications.
func tenantProject() *unstructured.Unstructured {
	p := argocd.NewAppProject()
	p.SetName(TenantProject)
	p.SetNamespace(ArgoNamespace)
	p.Object["spec"] = map[string]any{
		"sourceRepos":      []any{"*"},
		"sourceNamespaces": []any{TenantNamespace},
		"destinations":     []any{map[string]any{"server": argocd.LocalServer, "namespace": TenantNamespace}},
	}
	return p
}

func anyRunning(procs []Process) bool {
	for _, p := range procs {
		if p.Running() {
			return true
		}
	}
	return false
}
