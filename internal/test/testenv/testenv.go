// Package testenv runs one real kube-apiserver and etcd per test package, with the CRDs of
// argocd-pull, OCM and Argo CD installed. Every controller test uses it:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		env := testenv.Get(t)
//		ns := env.Namespace(t)
//		...
//	}
//
// The binaries come from KUBEBUILDER_ASSETS (make test sets it), else from bin/k8s/<version>/
// built by `make kube-assets`. With -short no apiserver is started and Get skips the test.
package testenv

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/argocd-pull/argocd-pull/internal/assets"
	"github.com/argocd-pull/argocd-pull/internal/scheme"
)

// Env is a running apiserver with a client for it.
type Env struct {
	Config *rest.Config
	Client client.Client

	env *envtest.Environment
}

var (
	current  *Env
	startErr error
)

// Main starts the package's apiserver, runs the tests and stops it, then runs cleanups (what the
// tests left on disk). Call it from TestMain.
func Main(m *testing.M, cleanups ...func()) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	current, startErr = Start()
	code := m.Run()
	for _, cleanup := range cleanups {
		cleanup()
	}
	stopManaged()
	if current != nil {
		if err := current.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the test apiserver: %v\n", err)
		}
	}
	os.Exit(code)
}

// RemoveUnlessFailed removes a lab's directory after its tests passed (a lab holds hundreds of
// megabytes of data and binaries), and keeps it, naming it, for reading the logs after a failure.
func RemoveUnlessFailed(dir string, code int) {
	if dir == "" {
		return
	}
	if code != 0 {
		fmt.Fprintf(os.Stderr, "the lab's files and logs are kept in %s\n", dir)
		return
	}
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintf(os.Stderr, "removing the lab's directory: %v\n", err)
	}
}

// Get returns the package's apiserver. It skips the test under -short and fails it when the
// apiserver could not start.
func Get(t testing.TB) *Env {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a real apiserver; run without -short")
	}
	if startErr != nil {
		t.Fatalf("the test apiserver did not start: %v", startErr)
	}
	if current == nil {
		t.Fatal("testenv.Get called without testenv.Main in TestMain")
	}
	return current
}

// Start runs a hub apiserver and etcd with all CRDs installed (ours, OCM's, Argo CD's) and waits
// until they are served.
func Start() (*Env, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	crdDirs, err := assets.HubCRDs(root)
	if err != nil {
		return nil, err
	}
	return StartWithCRDs(crdDirs...)
}

// StartManagedCluster runs an apiserver standing in for a managed cluster: Argo CD's CRDs (its
// Argo CD runs there) and OCM's AppliedManifestWork CRD (its work agent needs it).
func StartManagedCluster() (*Env, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	crds, err := assets.ManagedClusterCRDs(root)
	if err != nil {
		return nil, err
	}
	return StartWithCRDs(crds...)
}

// StartWithCRDs runs an apiserver and etcd with the CRDs of the given files or directories.
func StartWithCRDs(paths ...string) (*Env, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	binDir, err := assets.KubeBinDir(root)
	if err != nil {
		return nil, err
	}
	s, err := scheme.New()
	if err != nil {
		return nil, err
	}
	te := &envtest.Environment{
		BinaryAssetsDirectory: binDir,
		CRDDirectoryPaths:     paths,
		ErrorIfCRDPathMissing: true,
		Scheme:                s,
	}
	cfg, err := te.Start()
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", binDir, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("creating client: %w", err), te.Stop())
	}
	return &Env{Config: cfg, Client: c, env: te}, nil
}

// Stop stops the apiserver and etcd.
func (e *Env) Stop() error {
	return e.env.Stop()
}

var invalidNameChars = regexp.MustCompile(`[^a-z0-9-]+`)

// Namespace creates a namespace for one test, named after it, and deletes it when the test ends.
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	prefix := strings.Trim(invalidNameChars.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(prefix) > 40 {
		prefix = strings.TrimRight(prefix[:40], "-")
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Client.Create(ctx, ns); err != nil {
		t.Fatalf("creating namespace for %s: %v", t.Name(), err)
	}
	t.Cleanup(func() {
		// The test apiserver runs no namespace controller: the namespace stays Terminating,
		// which is enough to keep tests apart.
		_ = e.Client.Delete(context.Background(), ns)
	})
	return ns.Name
}

// RepoRoot is the directory of the argocd-pull module.
func RepoRoot() (string, error) { return assets.RepoRoot() }

// Kubeconfig writes a kubeconfig for a cluster-admin user of the test apiserver into the test's
// temporary directory and returns its path, for code under test that takes a kubeconfig file.
func (e *Env) Kubeconfig(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := e.WriteKubeconfig(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// WriteKubeconfig writes a kubeconfig for a cluster-admin user of the apiserver to path.
func (e *Env) WriteKubeconfig(path string) error {
	user, err := e.env.AddUser(envtest.User{Name: "test-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("adding a test user: %w", err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return fmt.Errorf("rendering kubeconfig: %w", err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	return nil
}
