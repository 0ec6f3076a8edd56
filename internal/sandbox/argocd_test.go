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
