// Package install tests the install manifests: config/default (kustomize) and the Helm chart in
// charts/argocd-pull render the same objects, the Deployment keeps its contract (probes,
// resources, non-root, read-only root file system, leader election), the chart lints, and both
// install into a real apiserver, where the controller runs with exactly the installed RBAC.
//
// kubectl and helm come from KUBECTL and HELM (make test sets them), else from bin/ ('make
// install-tools'). Under -short the tests that need a missing binary or the apiserver are skipped.
package install

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/argocd-pull/argocd-pull/internal/assets"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

// The default install, as docs/install.md and the documents describe it.
const (
	installNamespace = "open-cluster-management"
	deploymentName   = "multicluster-integrations"
	serviceAccount   = "multicluster-integrations"
	metricsService   = "multicluster-integrations-metrics"
	clusterRole      = "argocd-pull"
	// resourceViewsPolicy names the ValidatingAdmissionPolicy of config/admission and its binding.
	resourceViewsPolicy = "argocd-pull-resource-views"
	// viewHoldersPolicy names the one that keeps a name made again on its tree's destination.
	viewHoldersPolicy = "argocd-pull-resource-view-holders"
	leaderElection    = "argocd-pull-leader-election"
	// argocd-pull's Role and RoleBinding in each Argo CD namespace of the install.
	argoCDNamespaceRole = "argocd-pull"
	argoCDNamespace     = "openshift-gitops"
	chartDir            = "charts/argocd-pull"
	release             = "argocd-pull"
	// The label both installs put on every object they create (not on the pods: the selector is
	// the same in both, so either install can replace the other).
	partOfLabel = "app.kubernetes.io/name=argocd-pull"
)

func TestMain(m *testing.M) {
	// The test's own clients: the apiserver's warnings (Argo CD's finalizer name) are noise here.
	ctrl.SetLogger(logr.Discard())
	testenv.Main(m, func() { testenv.RemoveUnlessFailed(binaryDir, 0) })
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := assets.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// tool finds kubectl or helm: skipped under -short when missing, else a failure naming the make
// target that builds it.
func tool(t *testing.T, find func(root string) (string, error)) string {
	t.Helper()
	path, err := find(repoRoot(t))
	if err == nil {
		_, err = os.Stat(path)
	}
	if err != nil {
		if testing.Short() {
			t.Skipf("%v (skipped under -short)", err)
		}
		t.Fatalf("%v ('make install-tools' builds kubectl and helm into bin/)", err)
	}
	return path
}

func kubectl(t *testing.T) string { return tool(t, assets.Kubectl) }
func helm(t *testing.T) string    { return tool(t, assets.Helm) }

// run runs a command from the repository root and returns its standard output; it fails the test
// with the command's standard error when the command fails.
func run(t *testing.T, env []string, name string, args ...string) []byte {
	t.Helper()
	out, err := runErr(env, name, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func runErr(env []string, name string, args ...string) ([]byte, error) {
	root, err := assets.RepoRoot()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(name, args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, errors.New(filepath.Base(name) + " " + strings.Join(args, " ") + ": " + err.Error() + "\n" + stderr.String() + string(out))
	}
	return out, nil
}

// helmEnv keeps helm's configuration, cache and data in the test's temporary directory.
func helmEnv(t *testing.T) []string {
	dir := t.TempDir()
	return []string{
		"HELM_CACHE_HOME=" + filepath.Join(dir, "cache"),
		"HELM_CONFIG_HOME=" + filepath.Join(dir, "config"),
		"HELM_DATA_HOME=" + filepath.Join(dir, "data"),
	}
}

// renderKustomize is 'kubectl kustomize config/default'.
func renderKustomize(t *testing.T) []byte {
	t.Helper()
	return run(t, nil, kubectl(t), "kustomize", "config/default")
}

// renderHelm is 'helm template' of the chart into the default namespace, CRDs included (helm
// install applies them from crds/ first).
func renderHelm(t *testing.T, args ...string) []byte {
	t.Helper()
	base := []string{"template", release, chartDir, "--namespace", installNamespace, "--include-crds"}
	return run(t, helmEnv(t), helm(t), append(base, args...)...)
}

// decode splits a multi-document YAML rendering into objects.
func decode(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return objs
			}
			t.Fatalf("decoding the rendering: %v", err)
		}
		if len(obj) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: obj})
		}
	}
}

func key(o *unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return o.GetKind() + "/" + o.GetName()
	}
	return o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
}

func byKey(objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	m := make(map[string]*unstructured.Unstructured, len(objs))
	for _, o := range objs {
		m[key(o)] = o
	}
	return m
}

// find returns the one object of a kind and name in a rendering, failing the test without it.
func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string, into any) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
				t.Fatalf("converting %s: %v", key(o), err)
			}
			return
		}
	}
	t.Fatalf("the rendering has no %s %s", kind, name)
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
