package doctor

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The table is the one list of checks: every entry is complete, and --help shows each.
func TestTableOfChecks(t *testing.T) {
	seen := map[string]bool{}
	help := Help()
	for _, c := range checks {
		if c.id == "" || c.title == "" || c.help == "" {
			t.Errorf("check %q lacks an id, title or help", c.id)
		}
		if seen[c.id] {
			t.Errorf("check %q listed twice", c.id)
		}
		seen[c.id] = true
		if (c.hub == nil) == (c.spoke == nil) {
			t.Errorf("check %q must run on the hub or on a managed cluster, not both or neither", c.id)
		}
		if (c.needs == "") != (c.needsWhat == "") {
			t.Errorf("check %q names what it needs only half", c.id)
		}
		if !strings.Contains(help, "  "+c.id+" ") {
			t.Errorf("--help does not list %q:\n%s", c.id, help)
		}
	}
	for _, line := range strings.Split(help, "\n") {
		if len(line) > 100 {
			t.Errorf("--help line longer than 100 characters: %q", line)
		}
	}
}

// docs/operating.md explains each check (what fails it, the fix it prints): the same checks as
// the table, no more, no fewer.
func TestOperatingDocsExplainEveryCheck(t *testing.T) {
	data, err := os.ReadFile("../../docs/operating.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	inTable := false
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "| Check |"):
			inTable = true
		case inTable && !strings.HasPrefix(line, "|"):
			inTable = false
		case inTable && !strings.HasPrefix(line, "|---"):
			first := strings.Split(line, "|")[1]
			for _, id := range regexp.MustCompile("`([a-z-]+)`").FindAllStringSubmatch(first, -1) {
				documented[id[1]] = true
			}
		}
	}
	for _, c := range checks {
		if !documented[c.id] {
			t.Errorf("docs/operating.md does not explain check %s", c.id)
		}
		delete(documented, c.id)
	}
	for id := range documented {
		t.Errorf("docs/operating.md explains %s, which is not a check", id)
	}
}
