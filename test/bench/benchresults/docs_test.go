package benchresults

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFillWritesFiguresAndTablesFromTheResultsFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("results.json", `{"machine":"m","command":"c","seconds":1653.3,"results":[
		{"clusters":100,"propagationToAnsweredRatio":0.2260,"controller":{"peakRSSMiB":75.57}},
		{"clusters":1000,"propagationToAnsweredRatio":0.3123,"controller":{"peakRSSMiB":1340.2},"largestReportBytes":268288,
		 "apiserverWrites":{"applications PATCH":70492,"manifestworks/status PATCH":53807}}]}`)
	write("gobench.txt", "goos: linux\nBenchmarkFeedbackToReport-2   1   123456 ns/op   89.00 p50-ms   105 p99-ms\n"+
		"BenchmarkObject/Application-2   1000000   1234 ns/op\nPASS\n")

	doc := "ratio <!-- bench results.json results[clusters=1000].propagationToAnsweredRatio %.2f -->0.99<!-- /bench -->, " +
		"RSS <!-- bench results.json results[1].controller.peakRSSMiB -->1<!-- /bench --> MiB, " +
		"report <!-- bench results.json results[clusters=1000].largestReportBytes /1024 -->1<!-- /bench --> KiB, " +
		"run <!-- bench results.json seconds n1 -->1<!-- /bench --> s, " +
		"ratio of two <!-- bench results.json results[clusters=1000].controller.peakRSSMiB /results[clusters=100].controller.peakRSSMiB %.1f -->1<!-- /bench -->x, " +
		"p50 <!-- bench gobench.txt BenchmarkFeedbackToReport/p50-ms -->7<!-- /bench --> ms, " +
		"object <!-- bench gobench.txt BenchmarkObject/Application/ns/op /1000 %.2f -->7<!-- /bench --> µs, " +
		"patches <!-- bench results.json results[clusters=1000].apiserverWrites.applications_PATCH -->1<!-- /bench --> and " +
		"<!-- bench results.json results[clusters=1000].apiserverWrites.manifestworks/status_PATCH -->1<!-- /bench -->\n" +
		"<!-- bench-table results.json -->\nhand-edited\n<!-- end bench-table -->\n"
	got, err := Fill(doc, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-->0.31<!--", "-->1,340<!--", "-->262<!--", "-->1,653.3<!--", "-->17.7<!--", "-->89<!--", "-->1.23<!--", "-->70,492<!--", "-->53,807<!--", "| N=1,000, A=0 (0 apps) |"} {
		if !strings.Contains(got, want) {
			t.Errorf("filled document lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "hand-edited") {
		t.Errorf("the table kept a hand edit:\n%s", got)
	}
	if again, err := Fill(got, dir); err != nil || again != got {
		t.Errorf("filling twice changed the document (err %v)", err)
	}
}

func TestFillRefusesAFigureWithoutAResult(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "results.json"), []byte(`{"results":[{"clusters":100}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{
		"<!-- bench results.json results[clusters=5000].propagationToAnsweredRatio -->0.3<!-- /bench -->",
		"<!-- bench results.json results[clusters=100].nothing -->0.3<!-- /bench -->",
		"<!-- bench missing.json seconds -->1<!-- /bench -->",
		"<!-- bench results.json results[clusters=100].clusters %.2f bogus -->1<!-- /bench -->",
		"<!-- bench results.json results[clusters=100].clusters /results[clusters=5000].clusters -->1<!-- /bench -->",
		"<!-- bench-table missing.json -->\n<!-- end bench-table -->",
	} {
		if _, err := Fill(doc, dir); err == nil {
			t.Errorf("Fill(%q) gave no error", doc)
		}
	}
}
