package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// record is what an events file says about time: steps, packages and top-level tests.
type record struct {
	steps, packages, tests []timed
	prefix                 string // the packages' common directory, left out of the table
}

type timed struct {
	name    string
	seconds float64
	failed  bool
	end     time.Time // a step's end (zero in a record written before steps had one)
}

func readRecord(r io.Reader) (record, error) {
	var rec record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return rec, fmt.Errorf("not an event: %q: %w", sc.Text(), err)
		}
		switch {
		case e.Action == actionStep:
			rec.steps = append(rec.steps, timed{e.Package, e.Elapsed, e.Failed, e.Time})
		case e.Action != "pass" && e.Action != "fail":
		case e.Test == "":
			rec.packages = append(rec.packages, timed{name: e.Package, seconds: e.Elapsed, failed: e.Action == "fail"})
		case !strings.Contains(e.Test, "/"):
			rec.tests = append(rec.tests, timed{name: e.Package + " " + e.Test, seconds: e.Elapsed, failed: e.Action == "fail"})
		}
	}
	for i, p := range rec.packages {
		dir := p.name[:strings.LastIndex(p.name, "/")+1]
		if i == 0 {
			rec.prefix = dir
		}
		for !strings.HasPrefix(dir, rec.prefix) {
			rec.prefix = rec.prefix[:strings.LastIndex(strings.TrimSuffix(rec.prefix, "/"), "/")+1]
		}
	}
	return rec, sc.Err()
}

// write prints the steps in their order, the packages slowest first, and the n slowest tests.
func (r record) write(w io.Writer, n int) error {
	slowest := func(s []timed) []timed {
		s = slices.Clone(s)
		slices.SortStableFunc(s, func(a, b timed) int { return cmp.Compare(b.seconds, a.seconds) })
		return s
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	section := func(title string, rows []timed) {
		if len(rows) == 0 {
			return
		}
		fmt.Fprintf(tw, "\n%s\twall time\t\n", title)
		for _, t := range rows {
			result := ""
			if t.failed {
				result = "FAIL"
			}
			d := time.Duration(t.seconds * float64(time.Second)).Round(100 * time.Millisecond)
			fmt.Fprintf(tw, "%s\t%s\t%s\n", strings.TrimPrefix(t.name, r.prefix), d, result)
		}
	}
	section("step", append(slices.Clone(r.steps), timed{name: "all steps", seconds: r.wall()}))
	section("package (slowest first)", slowest(r.packages))
	tests := slowest(r.tests)
	if len(tests) > n {
		tests = tests[:n]
	}
	section(fmt.Sprintf("the %d slowest tests", len(tests)), tests)
	return tw.Flush()
}

// wall is the time from the first step's start to the last one's end: steps that run side by side
// (make test's lab beside the others) count once. A record whose steps have no end sums them.
func (r record) wall() float64 {
	var first, last time.Time
	var total float64
	ends := true
	for _, s := range r.steps {
		total += s.seconds
		ends = ends && !s.end.IsZero()
		start := s.end.Add(-time.Duration(s.seconds * float64(time.Second)))
		if first.IsZero() || start.Before(first) {
			first = start
		}
		if s.end.After(last) {
			last = s.end
		}
	}
	if !ends || len(r.steps) == 0 {
		return total
	}
	return last.Sub(first).Seconds()
}
