package benchresults

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestAFileTheREADMEQuotesMayNotBeBehindTheCodeItMeasures(t *testing.T) {
	changed := Commit{Hash: "aaaa", Subject: "controller: faster"}
	said := Commit{Hash: "bbbb", Subject: "doctor: a message", Unaffected: "the doctor is not on the measured path"}
	for _, tc := range []struct {
		name   string
		age    Age
		behind int
		refuse string // a part of the refusal, "" for none
	}{
		{"current", Age{Revision: "2991a05f57ff", Quoted: true}, 0, ""},
		{"behind by a change", Age{Revision: "2991a05f57ff", Quoted: true, Since: []Commit{changed, said}}, 1, "1 commit(s) since 2991a05f57ff"},
		{"behind only by commits that say why", Age{Revision: "2991a05f57ff", Quoted: true, Since: []Commit{said, said}}, 0, ""},
		{"not quoted, behind", Age{Revision: "2991a05f57ff", Since: []Commit{changed}}, 1, ""},
		{"a tree with changes", Age{Revision: "2991a05f57ff", Dirty: true, Quoted: true}, 0, "changes not committed"},
		{"no revision", Age{Quoted: true}, 0, "does not say which revision"},
		{"a revision this clone does not hold", Age{Revision: "2991a05f57ff", Unknown: true, Quoted: true}, 0, "does not hold 2991a05f57ff"},
		{"not quoted, a revision this clone does not hold", Age{Revision: "2991a05f57ff", Unknown: true}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.age.Behind(); got != tc.behind {
				t.Errorf("Behind() = %d, want %d", got, tc.behind)
			}
			got := tc.age.Refused()
			if (tc.refuse == "") != (got == "") || !strings.Contains(got, tc.refuse) {
				t.Errorf("Refused() = %q, want one containing %q", got, tc.refuse)
			}
		})
	}
}

func TestTheRevisionIsReadFromEitherKindOfResultsFile(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"results.json": `{"controllerVersion": "argocd-pull v0.1.0 (revision 2991a05f57ff, go1.26.8, linux/amd64)"}`,
		"dirty.json":   `{"controllerVersion": "argocd-pull v0.1.0 (revision 2991a05f57ff-dirty, go1.26.8, linux/amd64)"}`,
		"gobench.txt":  "# make bench-go at 5c0464dd9e81, one command per package:\n",
		"none.json":    `{"command": "go run ./test/bench"}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]struct {
		rev   string
		dirty bool
	}{"results.json": {"2991a05f57ff", false}, "dirty.json": {"2991a05f57ff", true}, "gobench.txt": {"5c0464dd9e81", false}, "none.json": {}} {
		rev, dirty, err := RevisionOf(filepath.Join(dir, name))
		if err != nil || rev != want.rev || dirty != want.dirty {
			t.Errorf("%s: RevisionOf = %q, %v, %v; want %q, %v", name, rev, dirty, err, want.rev, want.dirty)
		}
	}
}

func TestQuotedFilesAreTheFilesTheMarkersName(t *testing.T) {
	doc := "a <!-- bench rollouts/results.json results[clusters=100].seconds %.0f -->94<!-- /bench --> s\n" +
		"<!-- bench-table n5000/results.json -->\n|x|\n<!-- end bench-table -->\n" +
		"<!-- bench gobench.txt BenchmarkBuild/ns/op -->1<!-- /bench --> and <!-- bench rollouts/results.json seconds -->2<!-- /bench -->"
	if got, want := QuotedFiles(doc), []string{"gobench.txt", "n5000/results.json", "rollouts/results.json"}; !slices.Equal(got, want) {
		t.Errorf("QuotedFiles = %v, want %v", got, want)
	}
}
