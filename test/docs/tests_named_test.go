package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every test and fuzz target the README and docs/security.md name exists, so that their tables
// of rules, bad inputs and the tests that prove them stay true when tests are renamed.
func TestTheTestsTheDocsNameExist(t *testing.T) {
	root := filepath.Join("..", "..")
	defined := map[string]bool{}
	funcs := regexp.MustCompile(`(?m)^func ((?:Test|Fuzz)[A-Za-z0-9_]+)\(`)
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "bin" || d.Name() == "tmp" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range funcs.FindAllStringSubmatch(string(data), -1) {
			defined[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile("`((?:Test|Fuzz)[A-Z][A-Za-z0-9]+)`")
	for _, doc := range []string{"README.md", filepath.Join("docs", "security.md"), filepath.Join("docs", "argocd-clients.md")} {
		data, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		found := 0
		for _, m := range named.FindAllStringSubmatch(string(data), -1) {
			found++
			if !defined[m[1]] {
				t.Errorf("%s names %s, which no test defines", doc, m[1])
			}
		}
		if found == 0 {
			t.Errorf("%s names no test: the pattern or the document changed", doc)
		}
	}
}
