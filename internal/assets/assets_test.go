package assets

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argocd-pull/argocd-pull/internal/argocd"
)

// The one pin (hack/tools/argocd/VERSION) is a supported release, and the CRDs the tests and the
// lab install are that release's, on the hub and on the managed clusters (make verify runs this).
func TestTheTestsInstallThePinnedArgoCDsCRDs(t *testing.T) {
	t.Setenv("ARGOCD_VERSION", "")
	t.Setenv("MANAGED_ARGOCD_VERSION", "")
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	pinned, err := PinnedArgoCDVersion(root)
	if err != nil {
		t.Fatal(err)
	}
	if !argocd.Supported(pinned) {
		t.Errorf("hack/tools/argocd/VERSION pins %s, outside argocd.SupportedRange (%s)", pinned, argocd.SupportedRange)
	}
	want := filepath.Join("github.com", "argoproj", "argo-cd", "v3@"+pinned, "manifests", "crds")
	hub, err := HubCRDs(root)
	if err != nil {
		t.Fatal(err)
	}
	managed, err := ManagedClusterCRDs(root)
	if err != nil {
		t.Fatal(err)
	}
	for name, dirs := range map[string][]string{"hub": hub, "managed clusters": managed} {
		found := false
		for _, d := range dirs {
			found = found || strings.HasSuffix(d, want)
		}
		if !found {
			t.Errorf("the %s' CRDs %v hold no %s", name, dirs, want)
		}
	}
}

func TestAnArgoCDVersionThatIsNoRelease(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("ARGOCD_VERSION", "3.5.1")
	if _, err := ArgoCDVersion(root); err == nil || !strings.Contains(err.Error(), `ARGOCD_VERSION: "3.5.1" is not an Argo CD release version (want vMAJOR.MINOR.PATCH, e.g. v3.5.1)`) {
		t.Errorf("ARGOCD_VERSION=3.5.1: %v", err)
	}
	t.Setenv("ARGOCD_VERSION", "v3.4.7")
	t.Setenv("MANAGED_ARGOCD_VERSION", "")
	hub, err := ArgoCDVersion(root)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := ManagedArgoCDVersion(hub); err != nil || v != "v3.4.7" {
		t.Errorf("the managed clusters follow the hub: %q, %v", v, err)
	}
}

// A version the module proxy does not serve, or that is no release, stops the Argo CD build with
// what to try instead.
func TestTheArgoCDBuildRefusesWhatItCannotBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("asks the Go module proxy")
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for version, want := range map[string][]string{
		"v3.9.9": {"argocd v3.9.9: the Go module proxy does not serve github.com/argoproj/argo-cd/v3@v3.9.9", "Versions it serves, newest last: v3."},
		"3.5":    {"argocd 3.5: not a release version (want vMAJOR.MINOR.PATCH, e.g. v3.5.1)"},
	} {
		out := t.TempDir()
		cmd := exec.Command("bash", filepath.Join(root, "hack", "tools", "argocd", "build.sh"), version, out)
		msg, err := cmd.CombinedOutput()
		if err == nil {
			t.Errorf("%s: built", version)
		}
		for _, w := range want {
			if !strings.Contains(string(msg), w) {
				t.Errorf("%s: %q, want it to say %q", version, msg, w)
			}
		}
		if _, err := os.Stat(filepath.Join(out, "argocd-server")); err == nil {
			t.Errorf("%s: the Makefile's sign of a whole build is there", version)
		}
	}
}
