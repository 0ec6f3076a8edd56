package docs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Every results.md states what its results.json measured, read here without the renderer that
// wrote it (benchresults): each count of Applications, and the largest of each set of request
// counts (argocd-pull's requests, the apiserver's writes, leases among them), appear on the page.
// A page rendered by the wrong renderer ("0 apps", "requests 0") fails, whatever the renderer
// and its own checks say.
func TestEveryResultsPageStatesItsJSONsCounts(t *testing.T) {
	for _, path := range resultsFiles(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		md, err := os.ReadFile(filepath.Join(filepath.Dir(path), "results.md"))
		if err != nil {
			t.Fatal(err)
		}
		page := string(md)
		for _, fact := range facts(doc, "") {
			if !strings.Contains(page, fact.value) && !strings.Contains(page, grouped(fact.value)) {
				t.Errorf("%s does not state %s = %s from its results.json", filepath.Join(filepath.Dir(path), "results.md"), fact.where, fact.value)
			}
		}
	}
}

type fact struct{ where, value string }

// facts walks a results.json: every "applications" count, and the largest value of every
// "controllerRequests" and "apiserverWrites" map.
func facts(v any, where string) []fact {
	var out []fact
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			at := where + "." + k
			switch k {
			case "applications":
				if n, ok := child.(float64); ok && n > 0 {
					out = append(out, fact{at, strconv.FormatFloat(n, 'f', 0, 64)})
				}
			case "controllerRequests", "apiserverWrites":
				if m, ok := child.(map[string]any); ok && len(m) > 0 {
					largest, name := 0.0, ""
					for key, c := range m {
						if n, ok := c.(float64); ok && (n > largest || n == largest && key < name) {
							largest, name = n, key
						}
					}
					out = append(out, fact{at + "[" + name + "]", strconv.FormatFloat(largest, 'f', 0, 64)})
				}
			default:
				out = append(out, facts(child, at)...)
			}
		}
	case []any:
		for i, child := range x {
			out = append(out, facts(child, where+"["+strconv.Itoa(i)+"]")...)
		}
	}
	return out
}

// grouped writes an integer with thousands separators: 10000 -> 10,000.
func grouped(digits string) string {
	var b strings.Builder
	for i, r := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}
