// Package sandbox runs a local pull-model lab with real components and no Docker: a hub and
// managed clusters (kube-apiserver + etcd each), the real OCM work agent per managed cluster, the
// real OCM placement controller and argocd-pull's controller on the hub, and OCM's add-ons that
// give the hub a way to each cluster (cluster-proxy, clusterproxy.go; managed-serviceaccount,
// managedserviceaccount.go), as processes on 127.0.0.1.
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

	"k8s.io/apimachinery/pkg/api/meta"
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
	// ControllerImage, when set, runs the controller from this image with podman, as the chart's
	// Deployment runs it (see controllerInImage), instead of the Controller binary.
	ControllerImage string
	// ArgoCDVersion is the Argo CD release of the hub (default: ARGOCD_VERSION, else the pinned
	// one), ManagedArgoCDVersion that of the managed clusters (default: MANAGED_ARGOCD_VERSION,
	// else the hub's). Each must be built under bin/argocd (make argocd-assets).
	ArgoCDVersion, ManagedArgoCDVersion string
	// Ports is the range the lab's listeners take their ports from on its first start (zero: any
	// free port the konnectivity server accepts).
	Ports PortRange
	// NoChannel starts the lab without OCM's channel (cluster-proxy and managed-serviceaccount):
	// cluster-proxy's user server binds :8000 for its probes, which it does not let one move, so
	// one lab with the channel runs on a machine at a time. make test's second shard, whose tests
	// do not use the channel, runs without it (LAB_CHANNEL=off).
	NoChannel bool
}

// Lab is a running sandbox.
type Lab struct {
	Hub     *Cluster
	Managed []*Cluster
	Dir     string
	RepoURL string
	// PrivateRepoURL is the same repository over HTTP, to the GitUser with the password in
	// GitPasswordFile only (gitserver.go).
	PrivateRepoURL string
	// Revision is the commit the lab's Git repository started at.
	Revision string
	// ArgoCD is the hub's Argo CD API server, and ArgoCDCLI the argocd CLI built with it.
	ArgoCD    ArgoCDServer
	ArgoCDCLI string
	// HubArgoCDVersion is the Argo CD release on the hub, ManagedArgoCDVersion the one on the
	// managed clusters (the same unless MANAGED_ARGOCD_VERSION says otherwise).
	HubArgoCDVersion, ManagedArgoCDVersion string
	// ClusterProxy is the hub's channel to each cluster: cluster-proxy's user server.
	ClusterProxy ClusterProxy
	progress     *progress
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
	proxyBin, err := assets.ClusterProxyBinDir(root)
	if err != nil {
		return nil, err
	}
	msaBin, err := assets.ManagedServiceAccountBinDir(root)
	if err != nil {
		return nil, err
	}
	proxyPKI, err := newClusterProxyPKI(filepath.Join(o.Dir, "cluster-proxy"))
	if err != nil {
		return nil, err
	}
	hubArgo, managedArgo, err := argoCDReleases(root, o)
	if err != nil {
		return nil, err
	}
	ports, err := loadPorts(o.Dir)
	if err != nil {
		return nil, err
	}
	ports.within = o.Ports
	if err := ports.checkFree(); err != nil {
		return nil, fmt.Errorf("%w; stop that program, or start a new lab here with 'argocd-pull sandbox down --purge --dir %s'", err, o.Dir)
	}
	lab := &Lab{Dir: o.Dir, ArgoCDCLI: hubArgo.bin, HubArgoCDVersion: hubArgo.version, ManagedArgoCDVersion: managedArgo.version, progress: &progress{out: o.Out, start: time.Now()}}
	done := lab.progress.step("hub: kube-apiserver, etcd and kube-controller-manager")
	if lab.Hub, err = startCluster(ctx, o.Dir, kubeBin, "hub", ports); err != nil {
		return lab, err
	}
	done()
	for i := 1; i <= o.Clusters; i++ {
		name := "cluster" + strconv.Itoa(i)
		done := lab.progress.step("%s: kube-apiserver, etcd and kube-controller-manager", name)
		c, err := startCluster(ctx, o.Dir, kubeBin, name, ports, clusterProxySNI(proxyPKI))
		if err != nil {
			return lab, err
		}
		lab.Managed = append(lab.Managed, c)
		done()
	}

	done = lab.progress.step("CRDs: OCM, Argo CD and argocd-pull on the hub; Argo CD, AppliedManifestWork and ClusterClaim on the managed clusters")
	hubCRDs, err := assets.HubCRDsAt(root, hubArgo.version)
	if err != nil {
		return lab, err
	}
	ocmAPI, err := assets.OCMAPIDir(root)
	if err != nil {
		return lab, err
	}
	// The placement controller also reads AddOnPlacementScores; the registration controller
	// watches the add-on APIs.
	hubCRDs = append(hubCRDs, filepath.Join(ocmAPI, "cluster", "v1alpha1"), filepath.Join(ocmAPI, "addon", "v1alpha1"), ManagedServiceAccountCRD(msaBin))
	if err := installCRDs(ctx, lab.Hub.Config, hubCRDs); err != nil {
		return lab, fmt.Errorf("installing CRDs on the hub: %w", err)
	}
	if err := installAdmissionPolicies(ctx, lab.Hub.Config, root); err != nil {
		return lab, fmt.Errorf("installing the admission policies on the hub: %w", err)
	}
	managedCRDs, err := assets.ManagedClusterCRDsAt(root, managedArgo.version)
	if err != nil {
		return lab, err
	}
	// The registration agent reports the cluster's ClusterClaims.
	managedCRDs = append(managedCRDs, filepath.Join(ocmAPI, "cluster", "v1alpha1", "0000_02_clusters.open-cluster-management.io_clusterclaims.crd.yaml"))
	for _, c := range lab.Managed {
		if err := installCRDs(ctx, c.Config, managedCRDs); err != nil {
			return lab, fmt.Errorf("installing CRDs on %s: %w", c.Name, err)
		}
	}
	done()

	done = lab.progress.step("hub: OCM registration controller, bootstrap service account; namespaces, ManagedClusterSet and bindings, Placement, GitOpsCluster")
	if err := startRegistrationController(o.Dir, ocmBin, lab.Hub, ports); err != nil {
		return lab, err
	}
	if err := lab.setUp(ctx); err != nil {
		return lab, err
	}
	done()

	done = lab.progress.step("Argo CD base config and default AppProject on every cluster; the documents' RBAC on the managed clusters")
	for _, c := range append([]*Cluster{lab.Hub}, lab.Managed...) {
		cl, err := c.Client()
		if err != nil {
			return lab, err
		}
		version := lab.ManagedArgoCDVersion
		if c == lab.Hub {
			version = lab.HubArgoCDVersion
		}
		if err := InstallArgoConfig(ctx, cl, root, version, ArgoNamespace); err != nil {
			return lab, fmt.Errorf("%s: %w", c.Name, err)
		}
		if err := CreateDefaultProject(ctx, cl, ArgoNamespace); err != nil {
			return lab, fmt.Errorf("%s: %w", c.Name, err)
		}
		if c != lab.Hub {
			if err := installDocumentsRBAC(ctx, cl); err != nil {
				return lab, fmt.Errorf("%s: %w", c.Name, err)
			}
		}
	}
	done()

	done = lab.progress.step("managed clusters: OCM registration agents join the hub with a bootstrap token")
	for _, c := range lab.Managed {
		if err := lab.startRegistrationAgent(ctx, ocmBin, c, ports); err != nil {
			return lab, err
		}
	}
	done()
	for _, c := range lab.Managed {
		done := lab.progress.step("%s: CSR approved and cluster accepted (as clusteradm accept); OCM work agent on the issued certificate", c.Name)
		if err := lab.accept(ctx, c, 2*time.Minute); err != nil {
			return lab, err
		}
		if err := lab.startWorkAgent(ocmBin, c, ports); err != nil {
			return lab, err
		}
		done()
	}

	for _, c := range lab.Managed {
		done := lab.progress.step("%s: Argo CD application controller, repo-server and redis", c.Name)
		if err := startManagedArgoCD(o.Dir, managedArgo, c, ports); err != nil {
			return lab, err
		}
		done()
	}

	if !o.NoChannel {
		// Real Pods, whose logs and terminal the hub's views reach through the channel (node.go).
		for _, c := range lab.Managed {
			done := lab.progress.step("%s: node %s: containerd, kubelet and kube-scheduler", c.Name, Node(c.Name))
			if err := lab.startNode(ctx, kubeBin, c, ports); err != nil {
				return lab, err
			}
			done()
		}
		if err := lab.startClusterProxy(ctx, proxyBin, proxyPKI, ports); err != nil {
			return lab, err
		}
		if err := lab.startManagedServiceAccount(ctx, msaBin); err != nil {
			return lab, err
		}
	}

	done = lab.progress.step("hub: OCM placement controller")
	listen, err := ports.addr("hub-placement")
	if err != nil {
		return lab, err
	}
	if _, err := start(o.Dir, "hub-placement", filepath.Join(ocmBin, "placement"), []string{
		"--kubeconfig=" + lab.Hub.Kubeconfig, "--disable-leader-election", "--listen=" + listen,
	}); err != nil {
		return lab, err
	}
	done()

	done = lab.progress.step("hub: Argo CD API server (the argocd CLI's and the UI's), its redis and repo-server")
	argoCDServer, err := startHubArgoCDServer(ctx, o.Dir, hubArgo, lab.Hub, ports)
	if err != nil {
		return lab, err
	}
	if lab.ArgoCD, err = lab.waitArgoCDServer(ctx, argoCDServer, 2*time.Minute); err != nil {
		return lab, err
	}
	done()
	argoCDToken := filepath.Join(o.Dir, "argocd-pull-argocd-token")
	if err := hubArgoCDToken(ctx, lab.ArgoCD, argoCDToken); err != nil {
		return lab, err
	}
	if lab.ArgoCD.NoWebUI = hubArgo.noWebUI(); lab.ArgoCD.NoWebUI != "" {
		fmt.Fprintf(o.Out, "  no web UI: %s\n", lab.ArgoCD.NoWebUI)
	}

	// The documents' order: the GitOpsCluster registers the clusters (and the placement generator
	// ConfigMap the ApplicationSet names) before the ApplicationSet exists.
	done = lab.progress.step("hub: argocd-pull controller")
	metrics, err := ports.addr("hub-argocd-pull-metrics")
	if err != nil {
		return lab, err
	}
	probes, err := ports.addr("hub-argocd-pull-probes")
	if err != nil {
		return lab, err
	}
	hubRedis, err := ports.addr("hub-redis")
	if err != nil {
		return lab, err
	}
	bin, args := o.Controller, append([]string{
		"controller", "--kubeconfig=" + lab.Hub.Kubeconfig, "--argocd-namespace=" + ArgoNamespace,
		"--pull-namespaces=" + ArgoNamespace + "," + TenantNamespace,
		"--metrics-bind-address=" + metrics, "--health-probe-bind-address=" + probes,
		// The hub Argo CD's redis, where argocd-pull writes the resource trees the UI shows, as
		// its own ACL user, which may write the trees only.
		"--argocd-redis=" + hubRedis, "--argocd-redis-username=" + HubRedisTreeUser, "--argocd-redis-secret=" + HubRedisTreeSecret,
		// The Git side of the managed resources' diff, from the hub's API server, as argocd-pull's
		// own Argo CD account.
		"--argocd-server=http://" + lab.ArgoCD.Addr, "--argocd-server-token-file=" + argoCDToken,
	}, o.ControllerArgs...)
	if !o.NoChannel {
		args = append(args, "--cluster-proxy-url="+lab.ClusterProxy.URL, "--cluster-proxy-ca-file="+lab.ClusterProxy.CA, "--cluster-probe-interval=2m") // OCM's channel
	}
	if o.ControllerImage != "" {
		// A copy for the container's uid to own: the lab's own kubeconfig stays the user's.
		kubeconfig := filepath.Join(o.Dir, "hub-controller-image.kubeconfig")
		data, err := os.ReadFile(lab.Hub.Kubeconfig)
		if err == nil {
			err = os.WriteFile(kubeconfig, data, 0o600)
		}
		if err != nil {
			return lab, fmt.Errorf("the kubeconfig of the controller's container: %w", err)
		}
		bin, args = "podman", controllerInImage(o.ControllerImage, kubeconfig, args)
	}
	if _, err := start(o.Dir, "hub-argocd-pull", bin, args); err != nil {
		return lab, err
	}
	done()

	done = lab.progress.step("hub: Argo CD ApplicationSet controller")
	if err := startApplicationSetController(o.Dir, hubArgo.bin, lab.Hub, ports); err != nil {
		return lab, err
	}
	done()

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

	done = lab.progress.step("the same repository over HTTP with a password (a private repository)")
	if lab.PrivateRepoURL, err = startGitServer(o.Dir, o.Controller, ports); err != nil {
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
		if err := hub.Get(ctx, client.ObjectKey{Namespace: ArgoNamespace, Name: GitOpsClusterName}, gc); err == nil &&
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

// Stop stops a component of the lab (a cluster, "<cluster>-agents", "argocd-pull", ...; see
// Components) or one process by name, as `argocd-pull sandbox stop` does.
func (l *Lab) Stop(component string) error {
	_, err := StopComponent(l.Dir, component)
	return err
}

// Start starts a stopped component of the lab again, as `argocd-pull sandbox start` does.
func (l *Lab) Start(ctx context.Context, component string) error {
	_, err := StartComponent(ctx, l.Dir, component)
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

func anyRunning(procs []Process) bool {
	for _, p := range procs {
		if p.Running() {
			return true
		}
	}
	return false
}
