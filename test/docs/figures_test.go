package docs

import (
	"io/fs"
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
	for _, path := range resultsFiles(t) {
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

// resultsFiles lists every results.json under test/bench/results, at any depth (make docs
// renders each).
func resultsFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(filepath.Join("..", "..", "test", "bench", "results"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "results.json" {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// docs/benchmarks.md states no measured figure of its own: every latency, duration, rate, ratio,
// share, memory and CPU figure on it is filled from a results file (a bench-table or a bench
// figure), in backticks too. A figure that is not a measurement (a flag's default, a setting of the
// run, a goal, a design's polling period) says so with the marker <!-- given --> on its line;
// commands and flags in backticks are not figures.
func TestBenchmarksPageQuotesOnlyGeneratedFigures(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range unmeasuredFigures(string(data)) {
		t.Errorf("docs/benchmarks.md: %q is not filled from a results file, nor marked <!-- given -->: %s", line[0], line[1])
		_ = i
	}
}

// measuredFigure is a figure with a unit of measure: 12 ms, 3.5 s, 1.25x, 30%, 360 MiB, 2 cores.
var measuredFigure = regexp.MustCompile(`\d[\d,.]*\s?(ms|s|x|%|MiB|GiB|KiB|works/s|changes/s|cores)(\W|$)`)

// unmeasuredFigures lists the figures of a page (each with its line) that neither a bench marker
// fills nor a given marker excuses.
func unmeasuredFigures(page string) [][2]string {
	text := regexp.MustCompile(`(?s)<!-- bench-table .*?<!-- end bench-table -->`).ReplaceAllString(page, "")
	text = regexp.MustCompile(`<!-- bench [^>]*-->.*?<!-- /bench -->`).ReplaceAllString(text, "")
	// Commands and flags quoted in backticks are not figures.
	text = regexp.MustCompile("`(go run|make|--)[^`]*`").ReplaceAllString(text, "")
	var out [][2]string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "<!-- given -->") {
			continue
		}
		if m := measuredFigure.FindString(line); m != "" {
			out = append(out, [2]string{strings.TrimSpace(m), strings.TrimSpace(line)})
		}
	}
	return out
}

func TestTheFiguresGuardFindsEveryKindOfFigure(t *testing.T) {
	for _, figure := range []string{"took 254 s", "5.09x the agents'", "a 41% slowdown", "`1.5 MiB`", "12 ms", "0.29 cores", "3,828 s"} {
		if got := unmeasuredFigures("A sentence: " + figure + ".\n"); len(got) != 1 {
			t.Errorf("%q: found %v", figure, got)
		}
	}
	for _, fine := range []string{"`go run ./test/bench --cpu-profile 120s`", "`--lease-duration 60s`", "OCM's default 60 s <!-- given -->",
		"<!-- bench x.json a -->254<!-- /bench --> s", "10 steps", "1,000 clusters"} {
		if got := unmeasuredFigures(fine + "\n"); len(got) != 0 {
			t.Errorf("%q: found %v", fine, got)
		}
	}
}
