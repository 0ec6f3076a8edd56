package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every test and fuzz target the README and the pages of docs/ name exists, so that their tables
// of rules, bad inputs and the tests that prove them stay true when tests are renamed.
func TestTheTestsTheDocsNameExist(t *testing.T) {
	root := filepath.Join("..", "..")
	defined := map[string]bool{}
	funcs := regexp.MustCompile(`(?m)^func ((?:Test|Fuzz)[A-Za-z0-9_]+)\(`)
	for _, rel := range moduleGoFiles(t, root) {
		if !strings.HasSuffix(rel, "_test.go") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range funcs.FindAllStringSubmatch(string(data), -1) {
			defined[m[1]] = true
		}
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join(root, "README.md"))
	// Pages whose tables name the tests behind each row: naming none means the pattern broke.
	mustName := map[string]bool{"README.md": true, "security.md": true, "argocd-clients.md": true}
	named := regexp.MustCompile("`((?:Test|Fuzz)[A-Z][A-Za-z0-9]+)`")
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		doc, _ := filepath.Rel(root, page)
		found := 0
		for _, m := range named.FindAllStringSubmatch(string(data), -1) {
			found++
			if !defined[m[1]] {
				t.Errorf("%s names %s, which no test defines", doc, m[1])
			}
		}
		if found == 0 && mustName[filepath.Base(page)] {
			t.Errorf("%s names no test: the pattern or the document changed", doc)
		}
	}
}
