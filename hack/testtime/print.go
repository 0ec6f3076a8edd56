package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json), or a step this command adds.
type event struct {
	Action      string
	Package     string  `json:",omitempty"`
	Test        string  `json:",omitempty"`
	Elapsed     float64 `json:",omitempty"`
	Output      string  `json:",omitempty"`
	ImportPath  string  `json:",omitempty"`
	FailedBuild string  `json:",omitempty"`
	Failed      bool    `json:",omitempty"`
	// Time is when go test wrote the event; on a step, when the step ended.
	Time time.Time `json:",omitzero"`
}

const actionStep = "step"

// printer prints what a plain go test prints: a package's result line, and a failed test's or
// package's whole output, which it keeps until the result is known.
type printer struct {
	w      io.Writer
	held   map[string]*strings.Builder // package + "\x00" + test ("" for the package's own)
	failed bool
}

func newPrinter(w io.Writer) *printer {
	return &printer{w: w, held: map[string]*strings.Builder{}}
}

func (p *printer) raw(line string) { fmt.Fprintln(p.w, line) }

func (p *printer) event(e event) {
	key := e.Package + "\x00" + e.Test
	switch e.Action {
	case "build-output":
		fmt.Fprint(p.w, e.Output)
	case "build-fail":
		p.failed = true
	case "output":
		if e.Test == "" && isResultLine(e.Output) {
			return // printed with the package's result below
		}
		b := p.held[key]
		if b == nil {
			b = &strings.Builder{}
			p.held[key] = b
		}
		b.WriteString(e.Output)
	case "pass", "skip":
		if e.Test != "" {
			delete(p.held, key)
			return
		}
		p.drop(e.Package)
		if e.Action == "skip" {
			fmt.Fprintf(p.w, "?   \t%s\t[no test files]\n", e.Package)
		} else {
			fmt.Fprintf(p.w, "ok  \t%s\t%.3fs\n", e.Package, e.Elapsed)
		}
	case "fail":
		p.failed = true
		if e.Test != "" {
			p.flush(key)
			return
		}
		// The package's own output (a panic, a timeout's stacks, TestMain's logs), then the tests
		// that never ended.
		p.flush(key)
		for _, k := range p.keys(e.Package) {
			p.flush(k)
		}
		if e.FailedBuild != "" {
			fmt.Fprintf(p.w, "FAIL\t%s [build failed]\n", e.Package)
		} else {
			fmt.Fprintf(p.w, "FAIL\t%s\t%.3fs\n", e.Package, e.Elapsed)
		}
	}
}

// end prints what no result followed (go test stopped): as a failure would.
func (p *printer) end() {
	keys := make([]string, 0, len(p.held))
	for k := range p.held {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p.flush(k)
	}
}

func (p *printer) flush(key string) {
	if b := p.held[key]; b != nil {
		fmt.Fprint(p.w, b.String())
		delete(p.held, key)
	}
}

func (p *printer) drop(pkg string) {
	delete(p.held, pkg+"\x00")
	for _, k := range p.keys(pkg) {
		delete(p.held, k)
	}
}

// keys are the held outputs of pkg's tests, in order.
func (p *printer) keys(pkg string) []string {
	var out []string
	for k := range p.held {
		if strings.HasPrefix(k, pkg+"\x00") && k != pkg+"\x00" {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// isResultLine is the package's own result line, which go test -json also sends as output.
func isResultLine(s string) bool {
	for _, p := range []string{"ok  \t", "FAIL\t", "?   \t", "PASS\n", "FAIL\n"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
