package testenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

// Browser starts Debian's headless Chromium (`make chromium` installs it; $CHROMIUM names another
// binary) and returns a context whose actions run in one tab of it. Without Chromium the test is
// skipped, unless $REQUIRE_CHROMIUM is set (make test sets it): then it fails.
func Browser(t testing.TB, ctx context.Context) context.Context {
	t.Helper()
	bin := os.Getenv("CHROMIUM")
	if bin == "" {
		bin, _ = exec.LookPath("chromium")
	}
	if bin == "" {
		if os.Getenv("REQUIRE_CHROMIUM") != "" {
			t.Fatal("no chromium on PATH: run `make chromium` (Debian's chromium package)")
		}
		t.Skip("no chromium on PATH: `make chromium` installs it")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.WindowSize(1366, 768), // a laptop screen
		chromedp.Flag("disable-dev-shm-usage", true),
		// A page navigated away from stays in the back/forward cache with its requests open:
		// the Argo CD UI's watch streams (server-sent events) of the pages before held the six
		// HTTP/1.1 connections Chromium allows a host for about a minute each, and each new
		// page's requests waited for one (35 s a click in the UI test, a delete stalled for
		// minutes). A person's next page is a link inside the UI's single page, not a new load.
		chromedp.Flag("disable-features", "Translate,BlinkGenPropertyTrees,BackForwardCache"), // the first two: chromedp's default
		chromedp.UserDataDir(t.TempDir()),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses its sandbox to root
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	tab, cancelTab := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	// Start the browser now, so that a test's first action does not pay for it. (The browser
	// lives as long as the context of this first call: no timeout on it.)
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("starting chromium %s: %v", bin, err)
	}
	return tab
}

// Artifacts is the directory tests keep what a person looks at afterwards (screenshots):
// $ARTIFACTS, else tmp/artifacts in the repository.
func Artifacts(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("ARTIFACTS")
	if dir == "" {
		root, err := RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, "tmp", "artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Screenshot keeps a PNG of the whole page in Artifacts under name.
func Screenshot(t testing.TB, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(Artifacts(t), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}
