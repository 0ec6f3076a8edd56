package main

import (
	"bytes"
	"strings"
	"testing"
)

// A run of four packages as go test -json writes it: one passes, one has a failing test and a
// passing one, one panics in a test that never ends, and one does not build.
const recorded = `{"Action":"start","Package":"example.com/m/a"}
{"Action":"run","Package":"example.com/m/a","Test":"TestQuiet"}
{"Action":"output","Package":"example.com/m/a","Test":"TestQuiet","Output":"=== RUN   TestQuiet\n"}
{"Action":"output","Package":"example.com/m/a","Test":"TestQuiet","Output":"    a_test.go:9: only on failure\n"}
{"Action":"pass","Package":"example.com/m/a","Test":"TestQuiet","Elapsed":2.5}
{"Action":"output","Package":"example.com/m/a","Output":"PASS\n"}
{"Action":"output","Package":"example.com/m/a","Output":"ok  \texample.com/m/a\t2.6s\n"}
{"Action":"pass","Package":"example.com/m/a","Elapsed":2.6}
{"Action":"run","Package":"example.com/m/b","Test":"TestBroken"}
{"Action":"output","Package":"example.com/m/b","Test":"TestBroken","Output":"    b_test.go:7: the cluster said no\n"}
{"Action":"output","Package":"example.com/m/b","Test":"TestBroken","Output":"--- FAIL: TestBroken (40.00s)\n"}
{"Action":"fail","Package":"example.com/m/b","Test":"TestBroken","Elapsed":40}
{"Action":"pass","Package":"example.com/m/b","Test":"TestFine","Elapsed":70}
{"Action":"output","Package":"example.com/m/b","Output":"FAIL\n"}
{"Action":"fail","Package":"example.com/m/b","Elapsed":110.2}
{"Action":"run","Package":"example.com/m/c","Test":"TestHangs"}
{"Action":"output","Package":"example.com/m/c","Test":"TestHangs","Output":"    c_test.go:3: waiting\n"}
{"Action":"output","Package":"example.com/m/c","Output":"panic: test timed out after 40m0s\n"}
{"Action":"fail","Package":"example.com/m/c","Elapsed":2400}
{"ImportPath":"example.com/m/d","Action":"build-output","Output":"d/d.go:1:1: expected 'package'\n"}
{"ImportPath":"example.com/m/d","Action":"build-fail"}
{"Action":"fail","Package":"example.com/m/d","FailedBuild":"example.com/m/d"}
`

func TestItPrintsWhatAPlainGoTestPrints(t *testing.T) {
	var out, sink bytes.Buffer
	p := newPrinter(&out)
	if err := copyEvents(strings.NewReader("go: downloading example.com/x v1.0.0\n"+recorded), &sink, p); err != nil {
		t.Fatal(err)
	}
	want := `go: downloading example.com/x v1.0.0
ok  	example.com/m/a	2.600s
    b_test.go:7: the cluster said no
--- FAIL: TestBroken (40.00s)
FAIL	example.com/m/b	110.200s
panic: test timed out after 40m0s
    c_test.go:3: waiting
FAIL	example.com/m/c	2400.000s
d/d.go:1:1: expected 'package'
FAIL	example.com/m/d [build failed]
`
	if out.String() != want {
		t.Errorf("printed:\n%s\nwant:\n%s", out.String(), want)
	}
	if !p.failed {
		t.Error("a failed run is not failed")
	}
	if n, want := strings.Count(sink.String(), "\n"), strings.Count(recorded, `"Action":"pass"`)+strings.Count(recorded, `"Action":"fail"`); n != want {
		t.Errorf("kept %d events, want the %d results:\n%s", n, want, sink.String())
	}
}

// Steps that run side by side count once in the whole: from the first one's start to the last
// one's end.
func TestAllStepsIsTheWallTime(t *testing.T) {
	events := `{"Action":"step","Package":"lab","Elapsed":600,"Time":"2026-12-07T20:10:00Z"}
{"Action":"step","Package":"race","Elapsed":300,"Time":"2026-12-07T20:05:00Z"}
{"Action":"step","Package":"others","Elapsed":120,"Time":"2026-12-07T20:07:00Z"}
`
	rec, err := readRecord(strings.NewReader(events))
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.wall(); got != 600 {
		t.Errorf("all steps: %vs, want 600s (the lab's, from 20:00 to 20:10)", got)
	}
}

func TestTheTableNamesTheSlowest(t *testing.T) {
	events := recorded + `{"Action":"step","Package":"race","Elapsed":600}
{"Action":"step","Package":"others","Elapsed":2500,"Failed":true}
`
	rec, err := readRecord(strings.NewReader(events))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := rec.write(&out, 2); err != nil {
		t.Fatal(err)
	}
	want := `
step       wall time  
race       10m0s      
others     41m40s     FAIL
all steps  51m40s     

package (slowest first)  wall time  
c                        40m0s      FAIL
b                        1m50.2s    FAIL
a                        2.6s       
d                        0s         FAIL

the 2 slowest tests  wall time  
b TestFine           1m10s      
b TestBroken         40s        FAIL
`
	if got := out.String(); got != want {
		t.Errorf("the table:\n%s\nwant:\n%s", got, want)
	}
}
