package sandbox

import (
	"slices"
	"strings"
)

// controllerContainer is the name of the lab's controller container (--controller-image).
const controllerContainer = "argocd-pull-sandbox"

// controllerInImage is the podman command line that runs the controller's args from image, with
// the security settings of the chart's Deployment: read-only root file system (and, as in a pod,
// no tmpfs on /tmp), the image's non-root uid, no capability, no privilege escalation. The hub's
// kubeconfig (a copy) is mounted, owned by the container's uid (:U), and cluster-proxy's CA as it is; the lab's apiservers and ports are on
// the loopback, so the container shares the host's network. runc and the ulimits are what podman
// needs on these machines (docs/development.md). SIGTERM to podman reaches the controller; a
// restart replaces a container left behind.
func controllerInImage(image, kubeconfig string, args []string) []string {
	const mounted = "/var/run/argocd-pull/kubeconfig"
	run := []string{"run", "--rm", "--replace", "--name", controllerContainer, "--pull", "never",
		"--runtime", "runc", "--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096", "--network", "host",
		"--read-only", "--read-only-tmpfs=false", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
		"--volume", kubeconfig + ":" + mounted + ":ro,U", image}
	const mountedCA = "/var/run/argocd-pull/cluster-proxy-ca.crt"
	const mountedToken = "/var/run/argocd-pull/argocd-server-token"
	var rest []string
	for _, a := range args {
		if strings.HasPrefix(a, "--kubeconfig=") {
			a = "--kubeconfig=" + mounted
		}
		// The CA of cluster-proxy's user server: readable by all, mounted as it is.
		if ca, ok := strings.CutPrefix(a, "--cluster-proxy-ca-file="); ok {
			run = slices.Insert(run, len(run)-1, "--volume", ca+":"+mountedCA+":ro")
			a = "--cluster-proxy-ca-file=" + mountedCA
		}
		// The Argo CD API token: the container's uid owns it, as a mounted Secret's key.
		if token, ok := strings.CutPrefix(a, "--argocd-server-token-file="); ok {
			run = slices.Insert(run, len(run)-1, "--volume", token+":"+mountedToken+":ro,U")
			a = "--argocd-server-token-file=" + mountedToken
		}
		rest = append(rest, a)
	}
	return append(run, rest...)
}
