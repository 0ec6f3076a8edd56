// Package assets finds what the project builds or downloads for tests and the sandbox: the
// kube-apiserver, etcd, kubectl, helm and OCM binaries under bin/, and the CRDs of OCM and Argo CD
// in the Go module cache, at the versions the project pins.
package assets

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
)

// OCM CRD directories inside open-cluster-management.io/api: ManagedCluster, ManagedClusterSet,
// ManagedClusterSetBinding, Placement, PlacementDecision and ManifestWork.
var ocmCRDDirs = []string{"addon/v1alpha1", "cluster/v1", "cluster/v1beta1", "cluster/v1beta2", "work/v1"}

const argoCDModule = "github.com/argoproj/argo-cd/v3"

// HubCRDs returns the directories of every CRD a hub needs: ours (config/crd/bases), OCM's from
// the module version go.mod pins, and Argo CD's of the hub's version (ArgoCDVersion).
func HubCRDs(root string) ([]string, error) {
	version, err := ArgoCDVersion(root)
	if err != nil {
		return nil, err
	}
	return HubCRDsAt(root, version)
}

// HubCRDsAt is HubCRDs with Argo CD's CRDs of the given release.
func HubCRDsAt(root, argoCDVersion string) ([]string, error) {
	dirs := []string{filepath.Join(root, "config", "crd", "bases")}

	ocm, err := OCMAPIDir(root)
	if err != nil {
		return nil, err
	}
	for _, d := range ocmCRDDirs {
		dirs = append(dirs, filepath.Join(ocm, d))
	}

	argo, err := ArgoCDModuleDir(root, argoCDVersion)
	if err != nil {
		return nil, err
	}
	return append(dirs, filepath.Join(argo, "manifests", "crds")), nil
}

// ManagedClusterCRDs returns the CRDs a managed cluster needs: Argo CD's (its Argo CD runs there)
// and OCM's AppliedManifestWork (its work agent needs it). They are the CRDs of the managed
// clusters' Argo CD version (ManagedArgoCDVersion).
func ManagedClusterCRDs(root string) ([]string, error) {
	hub, err := ArgoCDVersion(root)
	if err != nil {
		return nil, err
	}
	version, err := ManagedArgoCDVersion(hub)
	if err != nil {
		return nil, err
	}
	return ManagedClusterCRDsAt(root, version)
}

// ManagedClusterCRDsAt is ManagedClusterCRDs with Argo CD's CRDs of the given release.
func ManagedClusterCRDsAt(root, argoCDVersion string) ([]string, error) {
	argo, err := ArgoCDModuleDir(root, argoCDVersion)
	if err != nil {
		return nil, err
	}
	ocm, err := OCMAPIDir(root)
	if err != nil {
		return nil, err
	}
	return []string{
		filepath.Join(argo, "manifests", "crds"),
		filepath.Join(ocm, "work", "v1", "0000_01_work.open-cluster-management.io_appliedmanifestworks.crd.yaml"),
	}, nil
}

// OCMAPIDir is the module directory of the open-cluster-management.io/api version go.mod pins.
func OCMAPIDir(root string) (string, error) {
	return goModuleDir(root, "open-cluster-management.io/api", "")
}

// The file that pins the Argo CD release the project builds, runs and installs the CRDs of by
// default; ARGOCD_VERSION (hub) and MANAGED_ARGOCD_VERSION (managed clusters) choose another.
const argoCDVersionFile = "hack/tools/argocd/VERSION"

var releaseVersion = regexp.MustCompile(`^v\d+\.\d+\.\d+$`)

// ArgoCDVersion is the Argo CD release of the hub (its API server, ApplicationSet controller,
// CLI and CRDs): $ARGOCD_VERSION, else the one hack/tools/argocd/VERSION pins.
func ArgoCDVersion(root string) (string, error) {
	if v := os.Getenv("ARGOCD_VERSION"); v != "" {
		return checkRelease("ARGOCD_VERSION", v)
	}
	return PinnedArgoCDVersion(root)
}

// ManagedArgoCDVersion is the Argo CD release the managed clusters run (their application
// controllers, repo-servers and CRDs): $MANAGED_ARGOCD_VERSION, else hub, the hub's. A fleet in
// the middle of an upgrade runs another version there than on the hub.
func ManagedArgoCDVersion(hub string) (string, error) {
	if v := os.Getenv("MANAGED_ARGOCD_VERSION"); v != "" {
		return checkRelease("MANAGED_ARGOCD_VERSION", v)
	}
	return hub, nil
}

// PinnedArgoCDVersion is the version hack/tools/argocd/VERSION pins: the project's default.
func PinnedArgoCDVersion(root string) (string, error) {
	data, err := os.ReadFile(filepath.Join(root, argoCDVersionFile))
	if err != nil {
		return "", fmt.Errorf("reading the pinned Argo CD version: %w", err)
	}
	return checkRelease(argoCDVersionFile, strings.TrimSpace(string(data)))
}

func checkRelease(from, v string) (string, error) {
	if !releaseVersion.MatchString(v) {
		return "", fmt.Errorf("%s: %q is not an Argo CD release version (want vMAJOR.MINOR.PATCH, e.g. v3.5.1)", from, v)
	}
	return v, nil
}

// ArgoCDModuleDir returns the module directory of an Argo CD release (its manifests: CRDs, base
// config), downloading it through the module proxy when needed.
func ArgoCDModuleDir(root, version string) (string, error) {
	return goModuleDir(root, argoCDModule, version)
}

// goModuleDir returns where the module cache holds a module: the version the main module builds
// with when version is empty, else that version (downloaded if missing).
func goModuleDir(root, module, version string) (string, error) {
	arg := module
	if version != "" {
		arg += "@" + version
	}
	cmd := exec.Command("go", "mod", "download", "-json", arg)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var res struct{ Dir, Error string }
	if jsonErr := json.Unmarshal(out, &res); jsonErr == nil && res.Error != "" {
		return "", fmt.Errorf("downloading %s: %s", arg, res.Error)
	}
	if err != nil {
		return "", fmt.Errorf("downloading %s: %w: %s", arg, err, strings.TrimSpace(stderr.String()))
	}
	if res.Dir == "" {
		return "", fmt.Errorf("downloading %s: the go command reported no directory", arg)
	}
	return res.Dir, nil
}

// RepoRoot is the directory of the argocd-pull module, found from this source file (tests and
// developer tools run from a checkout).
func RepoRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("locating the repository: no caller information")
	}
	root := filepath.Join(filepath.Dir(file), "..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return "", fmt.Errorf("locating the repository from %s: %w", file, err)
	}
	return root, nil
}

// KubeBinDir is $KUBEBUILDER_ASSETS, else the newest bin/k8s/<version> the Makefile built.
func KubeBinDir(root string) (string, error) {
	return builtDir(root, "KUBEBUILDER_ASSETS", "k8s", "kube-apiserver", "kube-assets")
}

// OCMBinDir is $OCM_ASSETS, else the newest bin/ocm/<version> the Makefile built.
func OCMBinDir(root string) (string, error) {
	return builtDir(root, "OCM_ASSETS", "ocm", "work-agent", "ocm-assets")
}

// ClusterProxyBinDir is $CLUSTER_PROXY_ASSETS, else the newest bin/cluster-proxy/<version> the
// Makefile built: OCM's cluster-proxy, the konnectivity server and agent, its addon-agent, and the
// lab's pod-loopback.
func ClusterProxyBinDir(root string) (string, error) {
	return builtDir(root, "CLUSTER_PROXY_ASSETS", "cluster-proxy", "addon-agent", "addon-assets")
}

// ManagedServiceAccountBinDir is $MSA_ASSETS, else the newest bin/managed-serviceaccount/<version>
// the Makefile built: the add-on's manager, the lab's build of its agent, and its CRD.
func ManagedServiceAccountBinDir(root string) (string, error) {
	return builtDir(root, "MSA_ASSETS", "managed-serviceaccount", "agent", "addon-assets")
}

// ArgoCDBinDir is where the Makefile built an Argo CD release: bin/argocd/<version>.
func ArgoCDBinDir(root, version string) (string, error) {
	if _, err := checkRelease("Argo CD version", version); err != nil {
		return "", err
	}
	dir := filepath.Join(root, "bin", "argocd", version)
	if _, err := os.Stat(filepath.Join(dir, "argocd-git-ask-pass")); err != nil {
		return "", fmt.Errorf("no Argo CD %s built under bin/argocd: run 'make argocd-assets ARGOCD_VERSION=%s'", version, version)
	}
	return dir, nil
}

// Kubectl is $KUBECTL, else the newest bin/k8s/<version>/kubectl the Makefile built.
func Kubectl(root string) (string, error) {
	return builtBinary(root, "KUBECTL", "k8s", "kubectl", "install-tools")
}

// Helm is $HELM, else the newest bin/helm/<version>/helm the Makefile built.
func Helm(root string) (string, error) {
	return builtBinary(root, "HELM", "helm", "helm", "install-tools")
}

// builtDir is the directory $env names, else the newest bin/<tool>/<version> holding binary.
func builtDir(root, env, tool, binary, target string) (string, error) {
	if dir := os.Getenv(env); dir != "" {
		return dir, nil
	}
	return newestBuilt(root, env, tool, binary, target)
}

// builtBinary is the binary $env names, else binary in the newest bin/<tool>/<version>.
func builtBinary(root, env, tool, binary, target string) (string, error) {
	if path := os.Getenv(env); path != "" {
		return path, nil
	}
	dir, err := newestBuilt(root, env, tool, binary, target)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, binary), nil
}

// newestBuilt is the newest bin/<tool>/<version> holding binary; the error says which make target
// builds it and which variable points elsewhere.
func newestBuilt(root, env, tool, binary, target string) (string, error) {
	return newest(root, filepath.Join("bin", tool, "*", binary),
		fmt.Sprintf("no %s found under bin/%s: run 'make %s' (or 'make test'), or set %s", binary, tool, target, env))
}

func newest(root, pattern, missing string) (string, error) {
	found, _ := filepath.Glob(filepath.Join(root, pattern))
	if len(found) == 0 {
		return "", errors.New(missing)
	}
	sort.Strings(found)
	return filepath.Dir(found[len(found)-1]), nil
}
