package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/test/simagent"
)

// recordWrites, when set, wraps the transport of the managers start starts from then on.
var recordWrites func(http.RoundTripper) http.RoundTripper

// writeLog records argocd-pull's writes, in order: "PATCH applications/step-1 {operation,status}".
type writeLog struct {
	mu    sync.Mutex
	on    bool
	lines []string
	next  http.RoundTripper
}

func (l *writeLog) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet {
		l.mu.Lock()
		if l.on {
			var body []byte
			if req.GetBody != nil {
				if rc, err := req.GetBody(); err == nil {
					body, _ = io.ReadAll(rc)
				}
			}
			l.lines = append(l.lines, describeWrite(req.Method, req.URL.Path, body))
		}
		l.mu.Unlock()
	}
	return l.next.RoundTrip(req)
}

// describeWrite names a write by its object and the top-level fields (and status fields) its body
// sets.
func describeWrite(method, path string, body []byte) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	what := strings.Join(parts[max(0, len(parts)-2):], "/")
	var doc map[string]any
	_ = json.Unmarshal(body, &doc)
	var fields []string
	for k, v := range doc {
		if m, ok := v.(map[string]any); ok && (k == "status" || k == "metadata") {
			for sub := range m {
				fields = append(fields, k+"."+sub)
			}
			continue
		}
		fields = append(fields, k)
	}
	slices.Sort(fields)
	detail := ""
	if st, ok := doc["status"].(map[string]any); ok {
		h, _, _ := unstructured.NestedString(st, "health", "status")
		sy, _, _ := unstructured.NestedString(st, "sync", "status")
		ph, _, _ := unstructured.NestedString(st, "operationState", "phase")
		detail = fmt.Sprintf(" health=%s sync=%s phase=%s", h, sy, ph)
		for _, field := range [][]string{{"operationState", "startedAt"}, {"reconciledAt"}} {
			if v, ok, _ := unstructured.NestedString(st, field...); ok {
				detail += fmt.Sprintf(" %s=%s", field[len(field)-1], v)
			}
		}
	}
	md, _ := doc["metadata"].(map[string]any)
	if a, ok := md["annotations"].(map[string]any); ok && strings.HasPrefix(what, "manifestworks") {
		detail += fmt.Sprintf(" deliveries=%v", a["apps.open-cluster-management.io/pull-deliveries"])
	}
	return fmt.Sprintf("%s %s {%s}%s", method, what, strings.Join(fields, ","), detail)
}

// apiWrites is what argocd-pull wrote so far, by "verb resource" (argocd_pull_api_requests_total).
func apiWrites(t testing.TB) map[string]float64 {
	out := map[string]float64{}
	for _, m := range metricSamples(t, "argocd_pull_api_requests_total") {
		switch verb := label(m, "verb"); verb {
		case "create", "update", "patch", "delete":
			out[verb+" "+label(m, "resource")] += counterValue(m)
		}
	}
	return out
}

// simulate runs the clusters' work agents and Argo CDs (simagent) for the test's works: every
// work in the clusters' namespaces is handed to them as their agents would receive it.
func (h *harness) simulate(ctx context.Context, b simagent.Behaviour, clusters ...string) *simagent.Fleet {
	fleet := simagent.New(h.c, b)
	fleet.Run(ctx, 4)
	go func() {
		seen := map[string]string{}
		for ctx.Err() == nil {
			for _, cluster := range clusters {
				works := &workv1.ManifestWorkList{}
				if err := h.c.List(ctx, works, client.InNamespace(cluster)); err != nil {
					continue
				}
				for i := range works.Items {
					w := &works.Items[i]
					if key := w.Namespace + "/" + w.Name; seen[key] != w.ResourceVersion {
						seen[key] = w.ResourceVersion
						fleet.Observe(w.DeepCopy())
					}
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return fleet
}

// What one rollout costs argocd-pull in requests for each Application: the commit (a new
// targetRevision the ApplicationSet controller writes into every Application), then its step's
// sync request, run by the cluster, finished, cleared, withdrawn. The list is docs/benchmarks.md's
// "Requests per Application"; the total is held to 8, and the fleet it leaves at rest asks its
// clusters for nothing that changes at rest (reconciledAt). Each cluster's Argo CD writes the
// comparison a change starts a little after the change, as a real one does (its repo server),
// so the sync's start reaches the hub before the comparison it requested.
func TestOneRolloutCostsAtMostEightWritesPerApplication(t *testing.T) {
	const apps = 4
	log := &writeLog{}
	recordWrites = func(rt http.RoundTripper) http.RoundTripper { log.next = rt; return log }
	h := start(t)
	recordWrites = nil
	set := h.appSet("rollout")
	h.updateAppSet(set, map[string]any{"type": "RollingSync"})
	var names, clusters []string
	for i := range apps {
		c := h.cluster()
		clusters = append(clusters, c)
		names = append(names, fmt.Sprintf("step-%d", i))
		h.app(names[i], c, ownedBy(set))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.simulate(ctx, simagent.Behaviour{SyncDuration: 300 * time.Millisecond, Compare: 100 * time.Millisecond}, clusters...)

	request := func(name string) {
		h.updateApp(name, func(u *unstructured.Unstructured) {
			u.Object["operation"] = map[string]any{"initiatedBy": map[string]any{"username": "applicationset-controller", "automated": true},
				"sync": map[string]any{"syncOptions": []any{"CreateNamespace=true"}}}
		})
	}
	doneAt := func(revision string) func(g Gomega) {
		return func(g Gomega) {
			for _, name := range names {
				app := h.getApp(name)
				g.Expect(app.Object).NotTo(HaveKey("operation"), name)
				g.Expect(statusField(app, "sync", "status")).To(Equal("Synced"), name)
				g.Expect(statusField(app, "sync", "revision")).To(Equal(simagent.Resolve(revision)), name)
				g.Expect(statusField(app, "health", "status")).To(Equal("Healthy"), name)
				g.Expect(statusField(app, "operationState", "phase")).To(Equal("Succeeded"), name)
			}
		}
	}
	// The first revision, delivered and synced: what is measured starts from a fleet at rest.
	for _, name := range names {
		request(name)
	}
	h.g.Eventually(doneAt("main"), timeout, interval).Should(Succeed(), func() string { return h.explainApps(names) })
	settle := func() map[string]float64 {
		var last map[string]float64
		h.g.Eventually(func() bool {
			now := apiWrites(t)
			same := maps.Equal(now, last)
			last = now
			return same
		}, timeout, time.Second).Should(BeTrue(), "argocd-pull writes nothing more")
		return last
	}
	before := settle()
	log.mu.Lock()
	log.on = true
	log.mu.Unlock()

	// The commit, then the step.
	for _, name := range names {
		h.updateApp(name, func(u *unstructured.Unstructured) {
			h.g.Expect(unstructured.SetNestedField(u.Object, "v2", "spec", "source", "targetRevision")).To(Succeed())
		})
	}
	h.g.Eventually(func(g Gomega) {
		for _, name := range names {
			app := h.getApp(name)
			g.Expect(statusField(app, "sync", "status")).To(Equal("OutOfSync"), name)
			g.Expect(statusField(app, "sync", "revision")).To(Equal(simagent.Resolve("v2")), "%s: its cluster compared the commit", name)
		}
	}, timeout, interval).Should(Succeed(), func() string { return h.explainApps(names) })
	// Argo CD's times are to the second: the step begins in a later second than the clusters
	// compared the commit, as a RollingSync step does, so that a comparison since the sync's
	// start tells from the one before it.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 50*time.Millisecond)))
	for _, name := range names {
		request(name)
	}
	h.g.Eventually(doneAt("v2"), timeout, interval).Should(Succeed(), func() string { return h.explainApps(names) })
	after := settle()
	log.mu.Lock()
	log.on = false
	// The value after "name=" in a described write, "" when it has none.
	valueOf := func(line, name string) string {
		_, after, ok := strings.Cut(line, " "+name+"=")
		if !ok {
			return ""
		}
		v, _, _ := strings.Cut(after, " ")
		return v
	}
	startedAt, comparedWhileRunning := "", false
	for _, line := range log.lines {
		if strings.Contains(line, names[0]) {
			t.Logf("%s", line)
			if strings.Contains(line, "phase=Running") {
				startedAt = valueOf(line, "startedAt")
			}
			if strings.Contains(line, "phase=Succeeded") {
				startedAt = ""
			}
			// RFC 3339 times in UTC, to the second: they compare as strings.
			at := valueOf(line, "reconciledAt")
			comparedWhileRunning = comparedWhileRunning || startedAt != "" && at != "" && at >= startedAt
		}
	}
	log.mu.Unlock()
	// Argo CD 3.5's RollingSync moves a step's Application on from Pending once its reconciledAt
	// is after the step began, and asks one still Pending to sync again once the request is
	// cleared: the hub shows the cluster's comparison since the sync started while it runs.
	h.g.Expect(comparedWhileRunning).To(BeTrue(), "a write while the sync runs carries the cluster's reconciledAt since its start")

	perApp := map[string]float64{}
	total := 0.0
	for k, v := range after {
		if d := v - before[k]; d > 0 && !strings.HasPrefix(k, "update multiclusterapplicationsetreports") && !strings.HasPrefix(k, "create multiclusterapplicationsetreports") {
			perApp[k] = d / apps
			total += d / apps
		}
	}
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(perApp)) {
		lines = append(lines, fmt.Sprintf("%s %.2f", k, perApp[k]))
	}
	t.Logf("argocd-pull's writes per Application for one rollout (the report's, per ApplicationSet, left out): %.2f: %s", total, strings.Join(lines, ", "))
	h.g.Expect(total).To(BeNumerically("<=", 8), "writes per Application: %s", strings.Join(lines, ", "))
	for _, cluster := range clusters {
		works := &workv1.ManifestWorkList{}
		h.g.Expect(h.c.List(ctx, works, client.InNamespace(cluster))).To(Succeed())
		for i := range works.Items {
			w := &works.Items[i]
			h.g.Expect(manifestwork.AsksReconciledAt(w)).To(BeFalse(),
				"%s/%s at rest asks its cluster for reconciledAt, which Argo CD rewrites on every reconciliation: its agent would write its status to the hub every few minutes", w.Namespace, w.Name)
		}
	}
}

// explainApps is the hub Applications' request and status, for a failure's message.
func (h *harness) explainApps(names []string) string {
	var b strings.Builder
	for _, name := range names {
		app := h.getApp(name)
		status, _, _ := unstructured.NestedMap(app.Object, "status")
		delete(status, "history")
		fmt.Fprintf(&b, "%s: operation %v, status %v\n", name, app.Object["operation"], status)
	}
	return b.String()
}
