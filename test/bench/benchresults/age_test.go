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

// After TrailersNameFilesAfter a trailer covers only the results files it names, and a promise
// covers none; before it, a trailer covered every file.
func TestATrailerCoversTheFilesItNamesWithAReason(t *testing.T) {
	const file = "rollouts/results.json"
	for _, tc := range []struct {
		name    string
		commit  Commit
		covered bool
		why     string // a part of Unexplained, "" when covered
	}{
		{"no trailer", Commit{NamesFiles: true}, false, "no Bench-unaffected trailer"},
		{"names the file", Commit{NamesFiles: true, Unaffected: "rollouts/results.json, credentials.txt: no benchmark deletes an Application"}, true, ""},
		{"names it by its path in the repository", Commit{NamesFiles: true, Unaffected: "test/bench/results/rollouts/results.json: the lab only"}, true, ""},
		{"names another file", Commit{NamesFiles: true, Unaffected: "rollouts-concurrent-1000/results.json: the lab only"}, false, "does not name rollouts/results.json"},
		{"names no file", Commit{NamesFiles: true, Unaffected: "doctor only, which the benchmark does not run"}, false, "does not name"},
		{"a promise", Commit{NamesFiles: true, Unaffected: "rollouts/results.json: the fleet's delivery is measured next"}, false, "promises a measurement (measured next)"},
		{"a promise, another form", Commit{NamesFiles: true, Unaffected: "rollouts/results.json: it will be re-measured"}, false, "promises"},
		{"not a promise", Commit{NamesFiles: true, Unaffected: "rollouts/results.json: a rule match is microseconds. Not re-measured."}, true, ""},
		{"before the rule: any trailer", Commit{Unaffected: "doctor only, which the benchmark does not run"}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why := tc.commit.Unexplained(file)
			if (why == "") != tc.covered || !strings.Contains(why, tc.why) {
				t.Errorf("Unexplained(%q) = %q, want covered %v (%q)", file, why, tc.covered, tc.why)
			}
			age := Age{File: file, Revision: "2991a05f57ff", Quoted: true, Since: []Commit{tc.commit}}
			if refused := age.Refused() != ""; refused == tc.covered {
				t.Errorf("Refused() = %q with the commit covering it: %v", age.Refused(), tc.covered)
			}
		})
	}
}

func TestNamedFilesAreWholePaths(t *testing.T) {
	got := NamedFiles("rollouts/results.json, rollouts-concurrent-1000/results.json: a reason; test/bench/results/credentials.txt: another (results.json: a third); rollouts/results.json again")
	want := []string{"rollouts/results.json", "rollouts-concurrent-1000/results.json", "credentials.txt", "results.json"}
	if !slices.Equal(got, want) {
		t.Errorf("NamedFiles = %q, want %q", got, want)
	}
}

func TestATrailerNamingNoResultsFileIsRefused(t *testing.T) {
	misspelt := Commit{Hash: "cccc", NamesFiles: true, Unaffected: "rollout/results.json, credentials.txt: the lab only"}
	old := Commit{Hash: "dddd", Unaffected: "rollout/results.json: before the rule"}
	ages := []Age{
		{File: "rollouts/results.json", Since: []Commit{misspelt, old}},
		{File: "credentials.txt", Since: []Commit{misspelt}},
	}
	got := UnknownNames(ages)
	if len(got) != 1 || !strings.Contains(got[0], "cccc names rollout/results.json") {
		t.Errorf("UnknownNames = %q, want one refusal of rollout/results.json by cccc", got)
	}
}
