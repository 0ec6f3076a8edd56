package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The lab's nodes. Each managed cluster of a lab with OCM's channel runs one node: the upstream
// kubelet and kube-scheduler (built by hack/tools/kube) on its own containerd (Debian's, with
// runc and the CNI plugins; make sandbox-deps installs them). Its Pods run for real, so their
// logs, events and terminal in the hub's Argo CD are the cluster's own answer. The machine reaches
// no registry: the node's images are the lab's own (nodeimage.go).
//
// A node takes, on the machine: an address on the loopback interface (10.255.0.<n>, the kubelet's,
// which the cluster's apiserver dials for logs and exec), a bridge and a Pod subnet
// (argocd-lab<n>, 10.244.<n>.0/24) and a cgroup of its own. Like cluster-proxy's :8000, they make
// it one lab with the channel per machine.

// Node is the name of the Node of cluster.
func Node(cluster string) string { return cluster + "-node" }

// labNode is where one cluster's node lives.
type labNode struct {
	cluster string
	index   int    // n of cluster<n>
	dir     string // <lab>/<cluster>/node
	labDir  string
}

func newLabNode(labDir, cluster string) (labNode, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(cluster, "cluster"))
	if err != nil || n < 1 || n > 200 {
		return labNode{}, fmt.Errorf("a node runs on a managed cluster named cluster1 to cluster200, not %q", cluster)
	}
	abs, err := filepath.Abs(labDir)
	if err != nil {
		return labNode{}, err
	}
	return labNode{cluster: cluster, index: n, dir: filepath.Join(abs, cluster, "node"), labDir: abs}, nil
}

func (n labNode) ip() string        { return "10.255.0." + strconv.Itoa(n.index) }
func (n labNode) bridge() string    { return "argocd-lab" + strconv.Itoa(n.index) }
func (n labNode) podSubnet() string { return "10.244." + strconv.Itoa(n.index) + ".0/24" }
func (n labNode) socket() string    { return filepath.Join(n.dir, "containerd.sock") }

// cgroup is the node's cgroup root: the lab's directory and the cluster make it the lab's own.
func (n labNode) cgroup() string {
	sum := sha256.Sum256([]byte(n.labDir))
	return "argocd-pull-lab-" + hex.EncodeToString(sum[:4]) + "-" + n.cluster
}

// containerdConfig is the node's containerd: its own root, state and socket under the node's
// directory, the CRI plugin with runc on cgroupfs, the lab's pause image, and the CNI plugins of
// Debian's containernetworking-plugins. oom_score_adj stays at the lab's own (these machines do
// not let a process lower it, as the kubelet asks for the Pods' sandboxes).
func (n labNode) containerdConfig(cniBin string) string {
	return fmt.Sprintf(`version = 2
root = %q
state = %q
[grpc]
  address = %q
[ttrpc]
  address = %q
[plugins."io.containerd.grpc.v1.cri"]
  restrict_oom_score_adj = true
  sandbox_image = %q
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
`, filepath.Join(n.dir, "containerd"), filepath.Join(n.dir, "state"), n.socket(), n.socket()+".ttrpc", PauseImage, cniBin, filepath.Join(n.dir, "cni"))
}

// cniConfig is the Pods' network: a bridge with its own subnet, and port mapping.
func (n labNode) cniConfig() string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "argocd-lab",
  "plugins": [
    {"type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": %q}]], "dataDir": %q}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, n.bridge(), n.podSubnet(), filepath.Join(n.dir, "ipam"))
}

// kubeletConfig is the node's kubelet: on the node's address only, clients authenticated by the
// cluster's CA (its apiserver's client certificate) and authorized by the apiserver, cgroupfs
// under the node's cgroup on the machine's hybrid cgroups (v1: allowed again with failCgroupV1),
// the Pods' logs under the node's directory (not the machine's /var/log/pods, which another node
// would share), and no eviction or image collection the lab's disk would set off.
func (n labNode) kubeletConfig(port int, clientCA string) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
port: %d
readOnlyPort: 0
healthzPort: 0
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
cgroupRoot: /%s
cgroupsPerQOS: true
enforceNodeAllocatable: []
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %q}
authorization:
  mode: Webhook
evictionHard: {memory.available: "100Mi", nodefs.available: "1%%", imagefs.available: "1%%"}
imageGCHighThresholdPercent: 100
containerRuntimeEndpoint: unix://%s
podLogsDir: %q
serializeImagePulls: false
localStorageCapacityIsolation: false
`, n.ip(), port, n.cgroup(), clientCA, n.socket(), filepath.Join(n.dir, "pod-logs"))
}

// prepareHost gives the node what the machine must hold before its kubelet starts: its address on
// the loopback interface and its cgroup root in every hierarchy (with the machine's cpus and
// memory nodes, which a cgroup v1 cpuset starts without). Both stay until the machine restarts.
func (n labNode) prepareHost() error {
	if out, err := exec.Command("ip", "addr", "replace", n.ip()+"/32", "dev", "lo").CombinedOutput(); err != nil {
		return fmt.Errorf("the node's address %s on the loopback interface: %v: %s", n.ip(), err, out)
	}
	const root = "/sys/fs/cgroup"
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil { // cgroup v2
		dir := filepath.Join(root, n.cgroup())
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("the node's cgroup: %w", err)
		}
		controllers, _ := os.ReadFile(filepath.Join(root, "cgroup.subtree_control"))
		var enable []string
		for _, c := range strings.Fields(string(controllers)) {
			enable = append(enable, "+"+c)
		}
		return os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(strings.Join(enable, " ")), 0o644)
	}
	hierarchies, err := os.ReadDir(root)
	if err != nil {
		return fmt.Errorf("the machine's cgroups: %w", err)
	}
	for _, h := range hierarchies {
		if !h.IsDir() || h.Name() == "unified" {
			continue
		}
		dir := filepath.Join(root, h.Name(), n.cgroup())
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("the node's cgroup: %w", err)
		}
		if h.Name() != "cpuset" {
			continue
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			parent, err := os.ReadFile(filepath.Join(root, h.Name(), f))
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, f), parent, 0o644); err != nil {
				return fmt.Errorf("the node's %s: %w", f, err)
			}
		}
	}
	return nil
}

// startNode starts cluster c's node: its containerd with the lab's images, its kube-scheduler and
// its kubelet, and waits until the Node is Ready.
func (l *Lab) startNode(ctx context.Context, kubeBin string, c *Cluster, ports *portBook) error {
	n, err := newLabNode(l.Dir, c.Name)
	if err != nil {
		return err
	}
	for _, bin := range []string{"kubelet", "kube-scheduler", "lab-workload"} {
		if _, err := os.Stat(filepath.Join(kubeBin, bin)); err != nil {
			return fmt.Errorf("the lab's nodes need %s: run 'make node-assets' (%w)", bin, err)
		}
	}
	containerd, err := exec.LookPath("containerd")
	if err != nil {
		return fmt.Errorf("a lab with OCM's channel runs a node on each managed cluster, with Debian's containerd: run 'make sandbox-deps' (%w)", err)
	}
	const cniBin = "/usr/lib/cni" // Debian's containernetworking-plugins
	if _, err := os.Stat(filepath.Join(cniBin, "bridge")); err != nil {
		return fmt.Errorf("the node's Pod network needs Debian's containernetworking-plugins: run 'make sandbox-deps' (%w)", err)
	}
	if err := n.prepareHost(); err != nil {
		return err
	}
	for _, d := range []string{n.dir, filepath.Join(n.dir, "cni"), filepath.Join(n.dir, "kubelet")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	kubeletPort, err := ports.port(c.Name + "-kubelet")
	if err != nil {
		return err
	}
	schedulerPort, err := ports.port(c.Name + "-kube-scheduler")
	if err != nil {
		return err
	}
	files := map[string]string{
		"containerd.toml":            n.containerdConfig(cniBin),
		"cni/10-argocd-lab.conflist": n.cniConfig(),
		"kubelet.yaml":               n.kubeletConfig(kubeletPort, filepath.Join(l.Dir, c.Name, "pki", "ca.crt")),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(n.dir, name), []byte(data), 0o644); err != nil {
			return err
		}
	}
	if _, err := start(l.Dir, c.Name+"-containerd", containerd, []string{"--config", filepath.Join(n.dir, "containerd.toml")}); err != nil {
		return err
	}
	if err := waitFile(ctx, n.socket(), 30*time.Second); err != nil {
		return fmt.Errorf("%s's containerd: %w; read %s", c.Name, err, filepath.Join(l.Dir, "logs", c.Name+"-containerd.log"))
	}
	images := filepath.Join(n.dir, "images.tar")
	if err := writeNodeImages(images, filepath.Join(kubeBin, "lab-workload"), append([]string{PauseImage}, StandInImages...)); err != nil {
		return fmt.Errorf("the node's images: %w", err)
	}
	if out, err := exec.CommandContext(ctx, "ctr", "--address", n.socket(), "--namespace", "k8s.io", "images", "import", images).CombinedOutput(); err != nil {
		return fmt.Errorf("importing the node's images into %s's containerd: %v: %s", c.Name, err, out)
	}
	if _, err := start(l.Dir, c.Name+"-kube-scheduler", filepath.Join(kubeBin, "kube-scheduler"), []string{
		"--kubeconfig=" + c.Kubeconfig, "--authentication-kubeconfig=" + c.Kubeconfig, "--authorization-kubeconfig=" + c.Kubeconfig,
		"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(schedulerPort),
	}); err != nil {
		return err
	}
	if _, err := start(l.Dir, c.Name+"-kubelet", filepath.Join(kubeBin, "kubelet"), []string{
		"--config=" + filepath.Join(n.dir, "kubelet.yaml"), "--kubeconfig=" + c.Kubeconfig,
		"--root-dir=" + filepath.Join(n.dir, "kubelet"), "--hostname-override=" + Node(c.Name), "--node-ip=" + n.ip(),
	}); err != nil {
		return err
	}
	cl, err := c.Client()
	if err != nil {
		return err
	}
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		node := &corev1.Node{}
		if err := cl.Get(ctx, client.ObjectKey{Name: Node(c.Name)}, node); err != nil {
			return false, nil
		}
		return slices.ContainsFunc(node.Status.Conditions, func(c corev1.NodeCondition) bool {
			return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
		}), nil
	}); err != nil {
		return fmt.Errorf("%s's Node %s was not Ready within 2m; read %s", c.Name, Node(c.Name), filepath.Join(l.Dir, "logs", c.Name+"-kubelet.log"))
	}
	return nil
}

func waitFile(ctx context.Context, path string, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		_, err := os.Stat(path)
		return err == nil, nil
	})
}

// nodesOf are the nodes of the lab in dir: the clusters whose kubelet it started.
func nodesOf(dir string, procs []Process) []labNode {
	var nodes []labNode
	for _, p := range procs {
		if cluster, ok := strings.CutSuffix(p.Name, "-kubelet"); ok {
			if n, err := newLabNode(dir, cluster); err == nil {
				nodes = append(nodes, n)
			}
		}
	}
	return nodes
}

// drainNodes ends every Pod of the lab's nodes, before their containerd stops: a Pod's containers
// outlive containerd (each has its own shim), and its network namespace and mounts outlive both.
// Each kubelet stops first, so that it starts nothing again; then containerd stops and removes
// each Pod sandbox (its containers, its network through the CNI plugins, its mounts); a process
// left in the node's cgroups is killed; what stays mounted under the node's directory is unmounted.
func drainNodes(dir string, procs []Process) {
	for _, n := range nodesOf(dir, procs) {
		for _, p := range procs {
			if p.Name == n.cluster+"-kubelet" {
				p.stop(10 * time.Second)
			}
		}
		if err := removeSandboxes(n.socket(), 30*time.Second); err != nil {
			fmt.Fprintf(os.Stderr, "%s's node: removing its Pods through containerd: %v\n", n.cluster, err)
		}
		n.killCgroup()
	}
}

// removeSandboxes stops and removes every Pod sandbox of the containerd at socket, as
// `crictl rmp --force --all` does.
func removeSandboxes(socket string, timeout time.Duration) error {
	if _, err := os.Stat(socket); err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	rt := criv1.NewRuntimeServiceClient(conn)
	list, err := rt.ListPodSandbox(ctx, &criv1.ListPodSandboxRequest{})
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range list.Items {
		if _, err := rt.StopPodSandbox(ctx, &criv1.StopPodSandboxRequest{PodSandboxId: s.Id}); err != nil {
			errs = append(errs, err)
		}
		if _, err := rt.RemovePodSandbox(ctx, &criv1.RemovePodSandboxRequest{PodSandboxId: s.Id}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// killCgroup kills every process left in the node's cgroups.
func (n labNode) killCgroup() {
	for _, h := range []string{"/sys/fs/cgroup/pids", "/sys/fs/cgroup"} {
		_ = filepath.WalkDir(filepath.Join(h, n.cgroup()), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.Name() != "cgroup.procs" {
				return nil
			}
			data, _ := os.ReadFile(path)
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			return nil
		})
	}
}

// unmountUnder detaches every mount below dir, deepest first (what a node's Pods leave: volumes,
// root file systems), so that the lab's directory can be deleted.
func unmountUnder(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	var points []string
	for line := range strings.Lines(string(data)) {
		fields := strings.Fields(line)
		if len(fields) < 5 {
			continue
		}
		p := strings.ReplaceAll(fields[4], `\040`, " ")
		if strings.HasPrefix(p, abs+"/") {
			points = append(points, p)
		}
	}
	slices.SortFunc(points, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	var errs []error
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}
