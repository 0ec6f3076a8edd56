package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/argocd-pull/argocd-pull/test/bench/benchresults"
)

// The benchmark figures the README and docs/ quote are the results files' (make docs fills them),
// and each results.md is its results.json as markdown: a figure edited by hand, or a results file
// replaced without make docs, fails here as it fails make verify.
func TestTheBenchmarkFiguresAreTheResultsFiles(t *testing.T) {
	root := filepath.Join("..", "..")
	results := filepath.Join(root, "test", "bench", "results")
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range append(pages, filepath.Join(root, "README.md")) {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		filled, err := benchresults.Fill(string(data), results)
		if err != nil {
			t.Errorf("%s: %v", page, err)
			continue
		}
		if filled != string(data) {
			t.Errorf("%s quotes a figure that is not its results file's: run make docs", page)
		}
	}
	files, err := filepath.Glob(filepath.Join(results, "*", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range append(files, filepath.Join(results, "results.json")) {
		want, err := benchresults.RenderFile(path)
		if err != nil {
			t.Fatal(err)
		}
		md, err := os.ReadFile(filepath.Join(filepath.Dir(path), "results.md"))
		if err != nil || string(md) != want {
			t.Errorf("%s is not its results.json (%v): run make docs", filepath.Join(filepath.Dir(path), "results.md"), err)
		}
	}
}

// docs/benchmarks.md states no measured figure of its own: every latency, rate, memory and CPU
// figure on it is filled from a results file (a bench-table or a bench figure).
func TestBenchmarksPageQuotesOnlyGeneratedFigures(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := regexp.MustCompile(`(?s)<!-- bench-table .*?<!-- end bench-table -->`).ReplaceAllString(string(data), "")
	text = regexp.MustCompile(`<!-- bench [^>]*-->.*?<!-- /bench -->`).ReplaceAllString(text, "")
	text = regexp.MustCompile("`[^`]*`").ReplaceAllString(text, "")
	measured := regexp.MustCompile(`\d[\d,.]*\s?(ms|MiB|GiB|KiB|works/s|changes/s|cores)\b`)
	for i, line := range strings.Split(text, "\n") {
		if m := measured.FindString(line); m != "" {
			t.Errorf("docs/benchmarks.md, paragraph line %d: %q (%s) is not filled from a results file", i+1, m, strings.TrimSpace(line))
		}
	}
}
