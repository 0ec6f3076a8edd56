package testenv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// OCM CRD directories inside open-cluster-management.io/api: ManagedCluster, ManagedClusterSet,
// ManagedClusterSetBinding, Placement, PlacementDecision and ManifestWork.
var ocmCRDDirs = []string{"cluster/v1", "cluster/v1beta1", "cluster/v1beta2", "work/v1"}

const argoCDModule = "github.com/argoproj/argo-cd/v3"

// CRDDirectories returns the directories of every CRD the tests install: ours (config/crd/bases),
// OCM's from the module version go.mod pins, and Argo CD's from the version hack/tools/argocd pins.
func CRDDirectories(root string) ([]string, error) {
	dirs := []string{filepath.Join(root, "config", "crd", "bases")}

	ocm, err := goModuleDir(root, "open-cluster-management.io/api", "")
	if err != nil {
		return nil, err
	}
	for _, d := range ocmCRDDirs {
		dirs = append(dirs, filepath.Join(ocm, d))
	}

	argo, err := ArgoCDModuleDir(root)
	if err != nil {
		return nil, err
	}
	return append(dirs, filepath.Join(argo, "manifests", "crds")), nil
}

// ArgoCDModuleDir returns the module directory of the Argo CD version hack/tools/argocd pins,
// downloading it through the module proxy when needed.
func ArgoCDModuleDir(root string) (string, error) {
	version, err := requiredVersion(filepath.Join(root, "hack", "tools", "argocd", "go.mod"), argoCDModule)
	if err != nil {
		return "", err
	}
	return goModuleDir(root, argoCDModule, version)
}

// requiredVersion reads the version a go.mod requires of a module.
func requiredVersion(goMod, module string) (string, error) {
	data, err := os.ReadFile(goMod)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", goMod, err)
	}
	re := regexp.MustCompile(`(?m)^\s*(?:require\s+)?` + regexp.QuoteMeta(module) + `\s+(v\S+)`)
	m := re.FindSubmatch(data)
	if m == nil {
		return "", fmt.Errorf("%s does not require %s", goMod, module)
	}
	return string(m[1]), nil
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
