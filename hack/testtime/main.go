// Command testtime shows where make test spends its time. It reads `go test -json` on stdin and
// prints what a plain `go test` prints (each package's ok or FAIL line, the whole output of a
// failed test or package, build errors), appends each event to an events file, and, with -table,
// prints from that file the wall time of each step, each package's time, and the slowest tests:
//
//	go test -json ./... | testtime -events tmp/test-events.json -step unit
//	testtime -table tmp/test-events.json
//
// It exits 1 when a test, a package or a build failed, as go test does. It measures; it asserts no
// time.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

func main() { os.Exit(run()) }

func run() int {
	events := flag.String("events", "", "append the result events read on stdin (pass, fail, skip) to this file, for -table")
	step := flag.String("step", "", "name this run in the table (its wall time, from the first event to the last)")
	table := flag.String("table", "", "print the table of this events file, and read no input")
	flag.Parse()
	if *table != "" {
		data, err := os.ReadFile(*table)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		r, err := readRecord(bytes.NewReader(data))
		if err == nil {
			err = r.write(os.Stdout, 10)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		return 0
	}
	sink := io.Discard
	var file *os.File
	if *events != "" {
		f, err := os.OpenFile(*events, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		sink, file = f, f
	}
	p := newPrinter(os.Stdout)
	start := time.Now()
	err := copyEvents(os.Stdin, sink, p)
	if err == nil && *step != "" {
		line, _ := json.Marshal(event{Action: actionStep, Package: *step, Elapsed: time.Since(start).Seconds(), Failed: p.failed, Time: time.Now()})
		_, err = fmt.Fprintf(sink, "%s\n", line)
	}
	if file != nil {
		err = errors.Join(err, file.Close())
	}
	switch {
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		return 2
	case p.failed:
		return 1
	}
	return 0
}

// copyEvents feeds each line of in to p, and each result event to sink as it was read.
func copyEvents(in io.Reader, sink io.Writer, p *printer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if json.Unmarshal(line, &e) != nil || e.Action == "" {
			// Not an event (a line of go's own): passed on as it is.
			p.raw(string(line))
			continue
		}
		if e.Action == "pass" || e.Action == "fail" || e.Action == "skip" {
			// The table reads results alone: the output (a lab test's logs) stays out of the file.
			if _, err := fmt.Fprintf(sink, "%s\n", line); err != nil {
				return err
			}
		}
		p.event(e)
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	p.end()
	return nil
}
