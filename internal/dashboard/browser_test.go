package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

// page serves f and opens the page in headless Chromium; it returns the browser's context once
// the first snapshot is drawn.
func page(t testing.TB, f *Fleet) context.Context {
	t.Helper()
	srv := httptest.NewServer(Handler(f, ServerOptions{Coalesce: 50 * time.Millisecond, ArgoCDURL: "https://argocd.hub.example"}))
	t.Cleanup(srv.Close)
	ctx := testenv.Browser(t, context.Background())
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the first snapshot drawn", `window.fleetView && window.fleetView.ready`)
	return ctx
}

// waitFor polls a JavaScript expression in the page until it is truthy.
func waitFor(t testing.TB, ctx context.Context, what, expr string) {
	t.Helper()
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := chromedp.Run(wait, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(10*time.Millisecond))); err != nil {
		last, _ := chromedp.Run(ctx, chromedp.Evaluate[any](expr))
		t.Fatalf("%s: %v (last: %v)", what, err, last)
	}
}

func eval[T any](t testing.TB, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// setFilter sets a filter's value as the page sees an edit.
func setFilter(t testing.TB, ctx context.Context, id, value string) {
	t.Helper()
	eval[any](t, ctx, fmt.Sprintf(`(() => { const e = document.getElementById(%q); e.value = %q; e.dispatchEvent(new Event('input')); })()`, id, value))
}

func cellSelector(cluster, appSet string) string {
	return fmt.Sprintf(`.cell[data-cluster=%q][data-appset=%q]`, cluster, argoNS+"/"+appSet)
}

// In a real browser: the fleet renders as clusters x ApplicationSets with the states and counts,
// a change pushed by the hub appears without a reload, the filters narrow the rows, the keyboard
// moves and opens cells, and what a managed cluster writes is shown as text, never run.
func TestThePageInChromium(t *testing.T) {
	f := NewFleet(0)
	generate(t, f, 40, 3)
	ctx := page(t, f)

	if got := eval[string](t, ctx, `document.querySelector('`+cellSelector(clusterName(0), appSetName(0))+`').dataset.state`); got != StateHealthy {
		t.Errorf("cell state %q", got)
	}
	if got := eval[string](t, ctx, `document.getElementById('shown').textContent`); got != "40 of 40 clusters · 120 Applications" {
		t.Errorf("counts line %q", got)
	}
	if got := eval[string](t, ctx, `document.querySelector('#head [data-appset="`+argoNS+"/"+appSetName(1)+`"] .count').textContent`); got != "40 apps · 40 healthy" {
		t.Errorf("column head %q", got)
	}
	// Only the rows in view are drawn.
	if n := eval[int](t, ctx, `document.querySelectorAll('#rows .row').length`); n >= 40 {
		t.Logf("%d rows drawn of 40 (the window is tall enough for all)", n)
	}

	// A change on a cluster: the hub's watch delivers it, the page shows it, no reload.
	app := genApp(appSetName(0), clusterName(3))
	values := feedback("OutOfSync", "Degraded", "fedcba9876543210fedcba9876543210fedcba98")
	values[manifestwork.FeedbackPhase] = "Failed"
	values[manifestwork.FeedbackStartedAt] = "2026-11-25T10:00:00Z"
	values[manifestwork.FeedbackMessage] = `<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>one or more objects failed to apply`
	f.SetWork(genWork(t, app, values))
	waitFor(t, ctx, "the failing cell", `document.querySelector('`+cellSelector(clusterName(3), appSetName(0))+`')?.dataset.state === 'failing'`)
	if reloads := eval[int](t, ctx, `performance.getEntriesByType('navigation').length`); reloads != 1 {
		t.Errorf("%d navigations: the page reloaded", reloads)
	}

	// The state filter keeps the failing cluster only; the label filter the dev clusters.
	setFilter(t, ctx, "f-state", "failing")
	waitFor(t, ctx, "one row with the state filter", `document.querySelectorAll('#rows .row').length === 1`)
	if got := eval[string](t, ctx, `document.querySelector('#rows .row .key').textContent`); got != clusterName(3) {
		t.Errorf("filtered row %q", got)
	}
	setFilter(t, ctx, "f-state", "")
	if err := chromedp.Do(ctx, chromedp.SendKeys(`#f-labels`, "env=dev")); err != nil { // typed, as a person does
		t.Fatal(err)
	}
	waitFor(t, ctx, "the dev clusters", `document.getElementById('shown').textContent.startsWith('20 of 40')`)
	setFilter(t, ctx, "f-labels", "")
	waitFor(t, ctx, "all clusters again", `document.getElementById('shown').textContent.startsWith('40 of 40')`)

	// Keyboard: focus the first cell, move down three rows, open it.
	if err := chromedp.Do(ctx, chromedp.Focus(cellSelector(clusterName(0), appSetName(0))),
		chromedp.KeyEvent(kb.ArrowDown), chromedp.KeyEvent(kb.ArrowDown), chromedp.KeyEvent(kb.ArrowDown),
		chromedp.KeyEvent(kb.Enter)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the detail of the failing cluster", `!document.getElementById('detail').hidden && document.getElementById('detail-body').textContent.includes('one or more objects failed')`)
	text := eval[string](t, ctx, `document.getElementById('detail-body').textContent`)
	for _, want := range []string{clusterName(3), "OutOfSync", "Degraded", "fedcba98", "SyncError", "<img src=x", "open in Argo CD"} {
		if !strings.Contains(text, want) {
			t.Errorf("detail lacks %q: %s", want, text)
		}
	}
	if pwned := eval[any](t, ctx, `window.pwned`); pwned != nil {
		t.Errorf("a message from a managed cluster ran as script in the page (window.pwned = %v)", pwned)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('#detail img, #detail script').length`); n != 0 {
		t.Errorf("a message from a managed cluster became %d elements", n)
	}
	testenv.Screenshot(t, ctx, "fleet-view-generated.png")
	if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Escape)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the detail closed", `document.getElementById('detail').hidden`)

	// A RollingSync rollout, step by step: the column head names the current step, each cell its own.
	f.SetApplicationSet(genAppSet(appSetName(2), 3,
		map[string]any{"application": appSetName(2) + "-" + clusterName(0), "step": "1", "status": "Healthy"},
		map[string]any{"application": appSetName(2) + "-" + clusterName(1), "step": "2", "status": "Progressing"},
		map[string]any{"application": appSetName(2) + "-" + clusterName(2), "step": "3", "status": "Waiting"}))
	head := `document.querySelector('#head [data-appset="` + argoNS + "/" + appSetName(2) + `"]').textContent`
	waitFor(t, ctx, "the rollout's step in the column head", head+`.includes('RollingSync step 2 of 3')`)
	if got := eval[string](t, ctx, `document.querySelector('`+cellSelector(clusterName(2), appSetName(2))+`').textContent`); !strings.HasPrefix(got, "step 3 Waiting") {
		t.Errorf("cell of a waiting step: %q", got)
	}
	f.SetApplicationSet(genAppSet(appSetName(2), 3,
		map[string]any{"application": appSetName(2) + "-" + clusterName(0), "step": "1", "status": "Healthy"},
		map[string]any{"application": appSetName(2) + "-" + clusterName(1), "step": "2", "status": "Healthy"},
		map[string]any{"application": appSetName(2) + "-" + clusterName(2), "step": "3", "status": "Progressing"}))
	waitFor(t, ctx, "the rollout's next step", head+`.includes('RollingSync step 3 of 3')`)

	// A cluster that goes unavailable turns its row stale.
	f.SetCluster(genCluster(clusterName(5), nil, metav1.ConditionFalse))
	waitFor(t, ctx, "the stale row", `[...document.querySelectorAll('.cell[data-cluster="`+clusterName(5)+`"]')].every(c => c.dataset.state === 'stale')`)
}

// BenchmarkThePageAt5000Clusters measures the page on a generated fleet of 5,000 clusters x 10
// ApplicationSets (50,000 Applications) in headless Chromium: the snapshot's size and build time,
// the first paint after navigation, a filter applied over every row, and, for changes made one at a
// time on the server, the time until the page has drawn them (the page stamps each frame it draws
// with Date.now(); server and browser share the machine's clock). make bench runs it once.
func BenchmarkThePageAt5000Clusters(b *testing.B) {
	const clusters, appSets, changes = 5000, 10, 50
	f := NewFleet(0)
	start := time.Now()
	generate(b, f, clusters, appSets)
	generated := time.Since(start)
	start = time.Now()
	snapshot := f.Snapshot()
	built := time.Since(start)
	body, err := json.Marshal(snapshot)
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		ctx := page(b, f)
		firstPaint := eval[float64](b, ctx, `window.fleetView.firstPaint`)
		rows := eval[int](b, ctx, `document.querySelectorAll('#rows .row').length`)

		renders := eval[int](b, ctx, `window.fleetView.renders`)
		t0 := time.Now()
		setFilter(b, ctx, "f-name", "cluster-4")
		waitFor(b, ctx, "the filtered rows", fmt.Sprintf(`window.fleetView.renders > %d`, renders))
		filtered := time.UnixMilli(int64(eval[float64](b, ctx, `window.fleetView.rendered`))).Sub(t0)
		setFilter(b, ctx, "f-name", "")

		var latencies []time.Duration
		for i := range changes {
			app := genApp(appSetName(i%appSets), clusterName(i*97%clusters))
			revision := fmt.Sprintf("%040d", i+1)
			t0 := time.Now()
			f.SetWork(genWork(b, app, feedback("OutOfSync", "Progressing", revision)))
			waitFor(b, ctx, "a change drawn", fmt.Sprintf(`S.entries.get(%q)?.r === %q && window.fleetView.version >= S.version`, argoNS+"/"+app.GetName(), revision))
			drawn := time.UnixMilli(int64(eval[float64](b, ctx, `window.fleetView.rendered`)))
			latencies = append(latencies, max(0, drawn.Sub(t0)))
		}
		slices.Sort(latencies)
		p := func(q float64) time.Duration { return latencies[min(len(latencies)-1, int(q*float64(len(latencies))))] }
		b.ReportMetric(float64(firstPaint), "first-paint-ms")
		b.ReportMetric(float64(p(0.5).Milliseconds()), "change-p50-ms")
		b.ReportMetric(float64(p(0.99).Milliseconds()), "change-p99-ms")
		b.ReportMetric(float64(filtered.Milliseconds()), "filter-ms")
		b.ReportMetric(float64(len(body))/(1<<20), "snapshot-MiB")
		b.ReportMetric(float64(built.Milliseconds()), "snapshot-build-ms")
		b.Logf("%d clusters x %d ApplicationSets (%d Applications, generated in %.1fs): snapshot built in %d ms, %.1f MiB; first paint %.0f ms after navigation (%d rows drawn); name filter over every row drawn after %d ms; %d changes drawn after p50 %d ms, p99 %d ms (coalescing window 50 ms)",
			clusters, appSets, len(snapshot.Entries), generated.Seconds(), built.Milliseconds(), float64(len(body))/(1<<20), firstPaint, rows, filtered.Milliseconds(), changes, p(0.5).Milliseconds(), p(0.99).Milliseconds())
	}
}
