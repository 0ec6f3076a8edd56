// Command benchage prints how far behind the code each benchmark results file is (make verify),
// and fails when a file the README quotes is behind: the rule is benchresults.Age's, and
// docs/benchmarks.md says it.
package main

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/argocd-pull/argocd-pull/test/bench/benchresults"
)

const resultsDir = benchresults.ResultsDir

func main() {
	ages, err := gather()
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchage:", err)
		os.Exit(1)
	}
	fmt.Print(benchresults.AgeTable(ages))
	failed := false
	for _, a := range ages {
		if why := a.Refused(); why != "" {
			fmt.Fprintf(os.Stderr, "The README quotes %s, but %s.\n", a.File, why)
			failed = true
		}
	}
	for _, why := range benchresults.UnknownNames(ages) {
		fmt.Fprintln(os.Stderr, why)
		failed = true
	}
	if failed {
		os.Exit(1)
	}
}

// gather reads each results file's revision and the commits since it that changed the measured code.
func gather() ([]benchresults.Age, error) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		return nil, err
	}
	quoted := benchresults.QuotedFiles(string(readme))
	named := namingCommits() // once: the same for every file
	var ages []benchresults.Age
	err = filepath.WalkDir(resultsDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (d.Name() != "results.json" && filepath.Ext(d.Name()) != ".txt") {
			return err
		}
		rel, _ := filepath.Rel(resultsDir, path)
		rev, dirty, err := benchresults.RevisionOf(path)
		if err != nil {
			return err
		}
		if rev == "" && d.Name() != "results.json" && d.Name() != "gobench.txt" {
			return nil // a note beside the results, not a results file
		}
		a := benchresults.Age{File: rel, Revision: rev, Dirty: dirty, Quoted: slices.Contains(quoted, rel)}
		if rev != "" {
			// A shallow clone may not hold the revision: the file's age is then unknown.
			a.Since, a.Unknown = commitsSince(rev, named)
		}
		ages = append(ages, a)
		return nil
	})
	for _, f := range quoted {
		if !slices.ContainsFunc(ages, func(a benchresults.Age) bool { return a.File == f }) {
			return nil, fmt.Errorf("the README quotes %s, which is not a results file under %s", f, resultsDir)
		}
	}
	return ages, err
}

// commitsSince lists the commits after rev that changed the measured code, with their trailers
// (named: namingCommits); unknown when this clone's history does not hold rev.
func commitsSince(rev string, named map[string]bool) (commits []benchresults.Commit, unknown bool) {
	const sep = "\x1f"
	format := "--format=%h" + sep + "%s" + sep + "%(trailers:key=" + benchresults.UnaffectedTrailer + ",valueonly,separator=; )"
	args := append([]string{"log", "-z", format, rev + "..HEAD", "--"}, benchresults.MeasuredCode...)
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		return nil, true
	}
	for _, rec := range strings.Split(string(out), "\x00") {
		f := strings.SplitN(rec, sep, 3)
		if len(f) < 3 {
			continue
		}
		hash := strings.TrimSpace(f[0])
		commits = append(commits, benchresults.Commit{Hash: hash, Subject: f[1], Unaffected: strings.TrimSpace(f[2]), NamesFiles: named[hash]})
	}
	return commits, false
}

// namingCommits are the commits after benchresults.TrailersNameFilesAfter, by abbreviated hash.
// A clone whose history does not hold it reads every commit as one.
func namingCommits() map[string]bool {
	named := map[string]bool{}
	out, err := exec.Command("git", "log", "--format=%h", benchresults.TrailersNameFilesAfter+"..HEAD").Output()
	if err != nil {
		out, _ = exec.Command("git", "log", "--format=%h").Output()
	}
	for _, h := range strings.Fields(string(out)) {
		named[h] = true
	}
	return named
}
