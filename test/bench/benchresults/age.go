package benchresults

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
)

// The rule for a figure's age (make verify, hack/benchage): each results file records the revision
// it measured. A commit since then that changed the measured code (MeasuredCode) makes the file
// behind by one, unless its message carries an UnaffectedTrailer saying why the figures stand. A
// file the README quotes may not be behind at all; the others are reported, not refused.
const UnaffectedTrailer = "Bench-unaffected"

// MeasuredCode is the git pathspec of the code the benchmarks measure: argocd-pull's Go code, tests
// aside.
var MeasuredCode = []string{"internal", "cmd", ":(exclude)*_test.go"}

// Commit is one commit since a results file's revision that changed the measured code.
type Commit struct {
	Hash, Subject string
	// Unaffected is the commit's UnaffectedTrailer: why the figures stand ("" when it has none).
	Unaffected string
}

// Age is how far behind the code a results file is.
type Age struct {
	File     string // relative to the results directory
	Revision string // the commit it measured ("" when the file does not say)
	Dirty    bool   // measured a tree with changes not committed
	Unknown  bool   // this clone's history does not hold Revision (a shallow clone)
	Quoted   bool   // the README quotes it
	// Since are the commits after Revision that changed the measured code, newest first.
	Since []Commit
}

// Behind is how many commits since the file's revision changed the measured code without saying
// why its figures stand.
func (a Age) Behind() int {
	n := 0
	for _, c := range a.Since {
		if c.Unaffected == "" {
			n++
		}
	}
	return n
}

// Refused says why a file the README quotes may not be quoted ("" when it may, or is not quoted).
func (a Age) Refused() string {
	switch {
	case !a.Quoted:
		return ""
	case a.Revision == "":
		return "it does not say which revision it measured"
	case a.Dirty:
		return fmt.Sprintf("it measured %s with changes not committed", a.Revision)
	case a.Unknown:
		return fmt.Sprintf("this clone's history does not hold %s, the revision it measured (a shallow clone?)", a.Revision)
	case a.Behind() > 0:
		return fmt.Sprintf("%d commit(s) since %s changed the code it measures (run its benchmark again, or say in a %s: trailer why its figures stand)",
			a.Behind(), a.Revision, UnaffectedTrailer)
	}
	return ""
}

var (
	// controllerVersion's "(revision 2991a05f57ff, go1.26.8, ...)" and gobench.txt's first line,
	// "# make bench-go at 5c0464dd9e81, ...".
	revisionOf = regexp.MustCompile(`(?:revision|make bench-go at) ([0-9a-f]{7,40})(-dirty)?\b`)
	// A README marker names its file: <!-- bench rollouts/results.json ... --> or <!-- bench-table f -->.
	quotedFile = regexp.MustCompile(`<!-- bench(?:-table)? (\S+)`)
)

// RevisionOf is the revision a results file (results.json or Go benchmark output) says it measured,
// and whether the tree had changes not committed.
func RevisionOf(path string) (revision string, dirty bool, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", false, err
	}
	m := revisionOf.FindSubmatch(data)
	if m == nil {
		return "", false, nil
	}
	return string(m[1]), len(m[2]) > 0, nil
}

// QuotedFiles are the results files a document quotes, sorted.
func QuotedFiles(doc string) []string {
	seen := map[string]bool{}
	for _, m := range quotedFile.FindAllStringSubmatch(doc, -1) {
		seen[m[1]] = true
	}
	files := make([]string, 0, len(seen))
	for f := range seen {
		files = append(files, f)
	}
	sort.Strings(files)
	return files
}

// AgeTable is what make verify prints: a line per results file, then each commit a quoted file is
// behind and each reason a commit gave.
func AgeTable(ages []Age) string {
	var b strings.Builder
	width := len("RESULTS FILE")
	for _, a := range ages {
		width = max(width, len(a.File))
	}
	fmt.Fprintf(&b, "%-*s  %-18s %s\n", width, "RESULTS FILE", "REVISION", "COMMITS BEHIND (internal/, cmd/)")
	for _, a := range ages {
		rev := a.Revision
		switch {
		case rev == "":
			rev = "unknown"
		case a.Dirty:
			rev += "-dirty"
		}
		note := ""
		if a.Quoted {
			note = "  quoted by the README"
		}
		if n := len(a.Since) - a.Behind(); n > 0 {
			note += fmt.Sprintf("  (%d more said unaffected)", n)
		}
		behind := fmt.Sprint(a.Behind())
		if a.Unknown {
			behind = "unknown (not in this clone's history)"
		}
		fmt.Fprintf(&b, "%-*s  %-18s %s%s\n", width, a.File, rev, behind, note)
	}
	for _, a := range ages {
		if !a.Quoted {
			continue
		}
		for _, c := range a.Since {
			if c.Unaffected != "" {
				fmt.Fprintf(&b, "%s: %s %s\n    %s: %s\n", a.File, c.Hash, c.Subject, UnaffectedTrailer, c.Unaffected)
			} else {
				fmt.Fprintf(&b, "%s: behind %s %s\n", a.File, c.Hash, c.Subject)
			}
		}
	}
	return b.String()
}
