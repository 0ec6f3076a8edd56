package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docs/development.md's layout names every Go package of the module, and every path it names
// exists, so that a newcomer's map cannot drift from the tree.
func TestTheLayoutNamesEveryPackage(t *testing.T) {
	root := filepath.Join("..", "..")
	data, err := os.ReadFile(filepath.Join(root, "docs", "development.md"))
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)## Layout\n\n```\n(.*?)```").FindSubmatch(data)
	if block == nil {
		t.Fatal("docs/development.md has no ## Layout code block")
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(string(block[1]), "\n") {
		if line == "" || line[0] == ' ' {
			continue // a description's next line
		}
		path := strings.Fields(line)[0]
		for _, p := range expandBraces(path) {
			p = strings.TrimSuffix(p, "/")
			listed[p] = true
			if strings.HasSuffix(p, ".go") {
				listed[filepath.ToSlash(filepath.Dir(p))] = true // a package of one file
			}
			if _, err := os.Stat(filepath.Join(root, p)); err != nil {
				t.Errorf("the layout names %s, which does not exist", p)
			}
		}
	}
	for _, rel := range moduleGoFiles(t, root) {
		if strings.HasSuffix(rel, "_test.go") {
			continue
		}
		if dir := filepath.ToSlash(filepath.Dir(rel)); !listed[dir] {
			listed[dir] = true // reported once
			t.Errorf("package %s is not in docs/development.md's layout", dir)
		}
	}
}

// expandBraces expands one {a,b,c} in a path: config/{default,manager}/ -> config/default/, config/manager/.
func expandBraces(path string) []string {
	open, end := strings.Index(path, "{"), strings.Index(path, "}")
	if open < 0 || end < open {
		return []string{path}
	}
	var out []string
	for _, alt := range strings.Split(path[open+1:end], ",") {
		out = append(out, path[:open]+alt+path[end+1:])
	}
	return out
}

// No non-test Go file of the module is over 500 lines: a file that long holds more than one
// thing a newcomer looks for.
func TestNoSourceFileIsOver500Lines(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, rel := range moduleGoFiles(t, root) {
		if strings.HasSuffix(rel, "_test.go") || strings.HasPrefix(filepath.Base(rel), "zz_generated") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(data), "\n"); n > 500 {
			t.Errorf("%s has %d lines: split it by what each part does", rel, n)
		}
	}
}

// moduleGoFiles are the module's Go files (slash-separated, relative to root): not bin/, tmp/,
// hidden directories, testdata, or hack/tools/* (modules of their own).
func moduleGoFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules" ||
				rel == "bin" || rel == "tmp" || strings.HasPrefix(rel, "hack/tools/")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(rel, ".go") {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Product and test support stay apart: no non-test file outside internal/test/ and test/ imports
// internal/test/..., so that nothing the product ships depends on a stand-in.
func TestTheProductImportsNoTestSupport(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, rel := range moduleGoFiles(t, root) {
		if strings.HasSuffix(rel, "_test.go") || strings.HasPrefix(rel, "internal/test/") || strings.HasPrefix(rel, "test/") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), `"github.com/argocd-pull/argocd-pull/internal/test/`) {
			t.Errorf("%s imports test support (internal/test/...)", rel)
		}
	}
}
