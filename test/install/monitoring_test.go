package install

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// renderMonitoring renders the monitoring objects both ways: 'kubectl kustomize config/monitoring'
// and the chart with every monitoring object enabled (and nothing else compared).
func renderMonitoring(t *testing.T) (kustomize, chart map[string]*unstructured.Unstructured) {
	t.Helper()
	kustomize = byKey(decode(t, run(t, nil, kubectl(t), "kustomize", "config/monitoring")))
	chart = map[string]*unstructured.Unstructured{}
	for k, o := range byKey(decode(t, renderHelm(t,
		"--set", "monitoring.serviceMonitor.enabled=true",
		"--set", "monitoring.prometheusRule.enabled=true",
		"--set", "monitoring.dashboard.enabled=true"))) {
		if o.GetAPIVersion() == "monitoring.coreos.com/v1" || k == "ConfigMap/"+installNamespace+"/argocd-pull-dashboard" {
			chart[k] = o
		}
	}
	return kustomize, chart
}

// The chart and kustomize render the same monitoring objects (labels aside: Grafana's sidecar
// label on both), off by default in the chart.
func TestMonitoringRendersTheSameObjects(t *testing.T) {
	g := NewWithT(t)
	kustomize, chart := renderMonitoring(t)
	g.Expect(sortedKeys(chart)).To(Equal(sortedKeys(kustomize)))
	g.Expect(sortedKeys(chart)).To(ConsistOf(
		"ServiceMonitor/"+installNamespace+"/"+deploymentName,
		"PrometheusRule/"+installNamespace+"/argocd-pull",
		"ConfigMap/"+installNamespace+"/argocd-pull-dashboard"))
	for k, o := range kustomize {
		g.Expect(withoutLabels(t, chart[k])).To(Equal(withoutLabels(t, o)), k)
	}
	g.Expect(chart["ConfigMap/"+installNamespace+"/argocd-pull-dashboard"].GetLabels()).To(HaveKeyWithValue("grafana_dashboard", "1"))
	g.Expect(kustomize["ConfigMap/"+installNamespace+"/argocd-pull-dashboard"].GetLabels()).To(HaveKeyWithValue("grafana_dashboard", "1"))

	for k := range byKey(decode(t, renderHelm(t))) {
		g.Expect(k).NotTo(Or(HavePrefix("ServiceMonitor/"), HavePrefix("PrometheusRule/"), HaveSuffix("/argocd-pull-dashboard")), "off by default")
	}

	// Every alert has a severity and a runbook in docs/monitoring.md.
	docs := string(readFile(t, "docs/monitoring.md"))
	for _, rule := range alertRules(t, kustomize) {
		g.Expect(rule["labels"]).To(HaveKey("severity"), rule["alert"])
		runbook, _ := rule["annotations"].(map[string]any)["runbook_url"].(string)
		anchor := strings.ToLower(rule["alert"].(string))
		g.Expect(runbook).To(HaveSuffix("docs/monitoring.md#"+anchor), rule["alert"])
		g.Expect(docs).To(ContainSubstring("### "+rule["alert"].(string)+"\n"), "a runbook section for %s", rule["alert"])
	}
}

// alertRules are the rules of the rendered PrometheusRule.
func alertRules(t *testing.T, objs map[string]*unstructured.Unstructured) []map[string]any {
	t.Helper()
	groups, _, _ := unstructured.NestedSlice(objs["PrometheusRule/"+installNamespace+"/argocd-pull"].Object, "spec", "groups")
	var out []map[string]any
	for _, grp := range groups {
		for _, r := range grp.(map[string]any)["rules"].([]any) {
			out = append(out, r.(map[string]any))
		}
	}
	if len(out) == 0 {
		t.Fatal("the PrometheusRule has no rules")
	}
	return out
}

// monitoringExpressions are the PromQL expressions of the alerts and of the dashboard's panels.
func monitoringExpressions(t *testing.T) []string {
	t.Helper()
	kustomize, _ := renderMonitoring(t)
	var exprs []string
	for _, r := range alertRules(t, kustomize) {
		exprs = append(exprs, r["expr"].(string))
	}
	var dashboard struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	data, _, _ := unstructured.NestedString(kustomize["ConfigMap/"+installNamespace+"/argocd-pull-dashboard"].Object, "data", "argocd-pull.json")
	if err := json.Unmarshal([]byte(data), &dashboard); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	for _, p := range dashboard.Panels {
		if len(p.Targets) == 0 {
			t.Fatalf("panel %q queries nothing", p.Title)
		}
		for _, target := range p.Targets {
			exprs = append(exprs, target.Expr)
		}
	}
	return exprs
}

var (
	quoted     = regexp.MustCompile(`"[^"]*"`)
	metricName = regexp.MustCompile(`\b(argocd_pull|controller_runtime|workqueue|process)_[a-z0-9_]+\b`)
)

// checkMonitoringNamesExportedMetrics scrapes the running controller at url and checks that every
// metric the alerts and the dashboard read is among its samples (TestKustomizeInstall and
// TestHelmInstall run it on the controller they start with the installed RBAC).
func checkMonitoringNamesExportedMetrics(t *testing.T, url string) {
	t.Helper()
	body, err := scrape(url)
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, line := range strings.Split(body, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, " ")
		name, _, _ = strings.Cut(name, "{")
		exported[name] = true
	}
	var missing []string
	read := 0
	for _, expr := range monitoringExpressions(t) {
		for _, name := range metricName.FindAllString(quoted.ReplaceAllString(expr, `""`), -1) {
			read++
			if !exported[name] && !slices.Contains(missing, name) {
				missing = append(missing, fmt.Sprintf("%s (in %s)", name, expr))
			}
		}
	}
	if read == 0 {
		t.Fatal("no metric read by the alerts or the dashboard")
	}
	if len(missing) > 0 {
		t.Fatalf("the alerts or the dashboard read metrics the controller does not export:\n%s", strings.Join(missing, "\n"))
	}
}

// readFile reads a file of the repository.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), path))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// scrape returns what the metrics endpoint at url serves.
func scrape(url string) (string, error) {
	resp, err := http.Get(url) //nolint:gosec,noctx // the test's own controller on loopback
	if err != nil {
		return "", fmt.Errorf("scraping %s: %w", url, err)
	}
	body, err := io.ReadAll(resp.Body)
	return string(body), errors.Join(err, resp.Body.Close())
}
