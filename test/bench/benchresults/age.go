package benchresults

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// The rule for a figure's age (make verify, hack/benchage): each results file records the revision
// it measured. A commit since then that changed the measured code (MeasuredCode) makes the file
// behind by one, unless its message carries an UnaffectedTrailer that names the file and says why
// its figures stand (Commit.Unexplained). A file the README quotes may not be behind at all; the
// others are reported, not refused.
const UnaffectedTrailer = "Bench-unaffected"

// TrailersNameFilesAfter is the last commit whose UnaffectedTrailer covered every results file;
// a trailer of a later commit covers only the files it names, and a promise covers none.
const TrailersNameFilesAfter = "6359cfb92428347ba4483fc719a79d62830a545a"

// MeasuredCode is the git pathspec of the code the benchmarks measure: argocd-pull's Go code, tests
// aside.
var MeasuredCode = []string{"internal", "cmd", ":(exclude)*_test.go"}

// Commit is one commit since a results file's revision that changed the measured code.
type Commit struct {
	Hash, Subject string
	// Unaffected is the commit's UnaffectedTrailer: why the figures stand ("" when it has none).
	Unaffected string
	// NamesFiles is true for a commit after TrailersNameFilesAfter: its trailer covers only the
	// files it names.
	NamesFiles bool
}

// Unexplained says why the commit counts against file's figures ("" when its trailer covers file).
func (c Commit) Unexplained(file string) string {
	switch {
	case c.Unaffected == "":
		return "no " + UnaffectedTrailer + " trailer"
	case !c.NamesFiles:
		return ""
	case promise.MatchString(c.Unaffected):
		return "its " + UnaffectedTrailer + " trailer promises a measurement (" + promise.FindString(c.Unaffected) + ") instead of saying why the figures stand"
	case !slices.Contains(NamedFiles(c.Unaffected), file):
		return "its " + UnaffectedTrailer + " trailer does not name " + file
	}
	return ""
}

// NamedFiles are the results files a trailer names, relative to the results directory
// (rollouts/results.json, or test/bench/results/rollouts/results.json), in order.
func NamedFiles(trailer string) []string {
	var files []string
	for _, m := range namedFile.FindAllStringSubmatch(trailer, -1) {
		f := strings.TrimPrefix(m[1], ResultsDir+"/")
		if !slices.Contains(files, f) {
			files = append(files, f)
		}
	}
	return files
}

// ResultsDir holds the results files, relative to the repository's root.
const ResultsDir = "test/bench/results"

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
		if c.Unexplained(a.File) != "" {
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
	// A results file in a trailer: a path ending in .json or .txt, after a space, a comma, a
	// semicolon or a parenthesis.
	namedFile = regexp.MustCompile(`(?:^|[\s,;(])([A-Za-z0-9_.\-/]+\.(?:json|txt))\b`)
	// A measurement promised instead of a reason ("measured next", "will be re-measured").
	promise = regexp.MustCompile(`(?i)\b(?:(?:re-?)?measured|measure(?: it)?|run|benchmarked)\s+(?:next|later|soon|again later)\b|\bwill\s+(?:be\s+)?(?:re-?)?measured?\b|\b(?:in|at) the next (?:session|run)\b`)
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
			switch why := c.Unexplained(a.File); {
			case why == "":
				fmt.Fprintf(&b, "%s: %s %s\n    %s: %s\n", a.File, c.Hash, c.Subject, UnaffectedTrailer, c.Unaffected)
			case c.Unaffected != "":
				fmt.Fprintf(&b, "%s: behind %s %s\n    (%s)\n", a.File, c.Hash, c.Subject, why)
			default:
				fmt.Fprintf(&b, "%s: behind %s %s\n", a.File, c.Hash, c.Subject)
			}
		}
	}
	return b.String()
}

// UnknownNames says, for each commit that names files, each name that is no results file: a
// misspelt name would leave the file it meant behind, unnoticed where no document quotes it.
func UnknownNames(ages []Age) []string {
	files := map[string]bool{}
	for _, a := range ages {
		files[a.File] = true
	}
	var out []string
	seen := map[string]bool{}
	for _, a := range ages {
		for _, c := range a.Since {
			if !c.NamesFiles || seen[c.Hash] {
				continue
			}
			seen[c.Hash] = true
			for _, f := range NamedFiles(c.Unaffected) {
				if !files[f] {
					out = append(out, fmt.Sprintf("The %s trailer of %s names %s, which is no results file under %s.", UnaffectedTrailer, c.Hash, f, ResultsDir))
				}
			}
		}
	}
	return out
}
