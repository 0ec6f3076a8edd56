package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An argocd binary whose web UI did not build (no npm registry, a package that does not resolve)
// still runs the lab, which says why it serves no UI and how to build it.
func TestAnArgoCDBuiltWithoutItsWebUISaysWhy(t *testing.T) {
	dir := t.TempDir()
	r := argoCDRelease{version: "v3.5.1", bin: filepath.Join(dir, "argocd")}
	if got := r.noWebUI(); got != "" {
		t.Fatalf("a build with its UI: %q, want none", got)
	}
	why := "its build failed: ERR_PNPM_FETCH_404 GET https://registry.npmjs.org/argo-ui: Not Found - 404 (the whole log: " + dir + "/ui-build.log)\n"
	if err := os.WriteFile(filepath.Join(dir, "ui-build-error.txt"), []byte(why), 0o644); err != nil {
		t.Fatal(err)
	}
	got := r.noWebUI()
	for _, want := range []string{"Argo CD v3.5.1's web UI its build failed: ERR_PNPM_FETCH_404", "rm -rf " + dir + " && make argocd-assets ARGOCD_VERSION=v3.5.1"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q does not say %q", got, want)
		}
	}
	if strings.Contains(got, "\n") {
		t.Errorf("%q is not one line", got)
	}
}

// Each Argo CD install of the lab has its own ask-pass socket, in its own directory while that path
// fits a socket's address, and in the temporary directory, still its own, where it does not.
func TestEachRepoServerHasItsOwnAskPassSocket(t *testing.T) {
	short := "/tmp/argocd-pull-lab-123"
	if got, want := AskPassSocket(short, "cluster1"), short+"/cluster1/repo-server/askpass.sock"; got != want {
		t.Errorf("AskPassSocket(%q, cluster1) = %q, want %q", short, got, want)
	}
	long := "/home/someone/src/github.com/some-organisation/some-team/argocd-pull/.sandbox-of-a-long-name"
	seen := map[string]string{}
	for _, dir := range []string{short, long} {
		for _, install := range []string{"hub", "cluster1", "cluster2"} {
			got := AskPassSocket(dir, install)
			if len(got) >= 104 {
				t.Errorf("AskPassSocket(%q, %s) = %q: %d bytes, longer than a socket's address may be", dir, install, got, len(got))
			}
			if other, ok := seen[got]; ok {
				t.Errorf("AskPassSocket(%q, %s) = %q, the same as %s's", dir, install, got, other)
			}
			seen[got] = dir + " " + install
		}
	}
	if got := AskPassSocket(long, "hub"); !strings.HasPrefix(got, os.TempDir()) {
		t.Errorf("AskPassSocket(%q, hub) = %q, not in the temporary directory", long, got)
	}
}
