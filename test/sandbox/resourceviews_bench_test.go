package sandbox_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A Deployment for the tree's figures, as viewsManifests' (its Pods stay Pending).
var treeBenchManifests = map[string]string{"treebench/deployment.yaml": strings.ReplaceAll(viewsManifests["views/deployment.yaml"], "views-web", "treebench-web")}

// BenchmarkAClusterTreeChangeReachesTheHub measures, in the lab, what an Application on its
// cluster's channel costs per change of its tree on the cluster: its Deployment scaled on cluster1
// by hand, 2 to 3 replicas and back on each turn. Each change is timed from the scale's write on
// cluster1 to the hub's Argo CD API server answering with it (what the UI and the CLI read): the
// Deployment's live manifest at the new replicas (managed-resources), and the tree with that many
// Pods (resource-tree). argocd-pull's own counters give the reads through OCM's channel and the
// trees written per change. Run with -benchtime=Nx: one change per iteration.
//
// The change reaches the hub only because it changes the Application's status on cluster1 (the
// Deployment turns OutOfSync, then Synced again): argocd-pull reads the cluster again when the
// status its work reports changes, and otherwise at each renewal (docs/design-resource-views.md).
func BenchmarkAClusterTreeChangeReachesTheHub(b *testing.B) {
	ctx, hub, cluster1, cli := onTheChannel(b, 30*time.Minute, "a Deployment for the tree's figures", treeBenchManifests)
	app := uiApp("treebench", "treebench", "treebench", false)
	deployment := types.NamespacedName{Namespace: "treebench", Name: "treebench-web"}
	name := deliverOnItsChannel(ctx, b, hub, cluster1, app, "treebench", &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: deployment.Namespace, Name: deployment.Name}})
	views := hubViews{cli: cli, b: b, app: app.GetName()}
	eventually(b, "the hub's tree of "+name+" with cluster1's 2 Pods", 4*time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		replicas, err := views.liveReplicas()
		return err == nil && replicas == 2 && views.pods() == 2, err
	})
	metrics, err := lab.Addr("hub-argocd-pull-metrics")
	if err != nil {
		b.Fatal(err)
	}
	counted := func() (reads, writes float64) {
		return scrapeCounter(b, metrics, "argocd_pull_cluster_tree_reads_total"),
			scrapeCounter(b, metrics, "argocd_pull_resource_tree_writes_total", `operation="put"`, `source="cluster"`)
	}
	readsBefore, writesBefore := counted()
	var toLive, toPods []time.Duration
	b.ResetTimer()
	for i := range b.N {
		replicas := int32(3 - i%2)
		scaleByHand(ctx, b, cluster1, deployment, replicas)
		began := time.Now()
		liveSeen, podsSeen := time.Duration(0), time.Duration(0)
		for liveSeen == 0 || podsSeen == 0 {
			if time.Since(began) > 3*time.Minute {
				b.Fatalf("change %d (%d replicas): the hub's views did not show it within 3m (live manifest after %s, Pods after %s); read %s",
					i, replicas, liveSeen, podsSeen, "hub-argocd-pull.log")
			}
			if r, err := views.liveReplicas(); liveSeen == 0 && err == nil && r == int(replicas) {
				liveSeen = time.Since(began)
			}
			if podsSeen == 0 && views.pods() == int(replicas) {
				podsSeen = time.Since(began)
			}
			time.Sleep(50 * time.Millisecond)
		}
		toLive, toPods = append(toLive, liveSeen), append(toPods, podsSeen)
	}
	b.StopTimer()
	readsAfter, writesAfter := counted()
	n := float64(b.N)
	b.ReportMetric(quantileMs(toLive, 0.5), "live-p50-ms")
	b.ReportMetric(quantileMs(toLive, 0.99), "live-p99-ms")
	b.ReportMetric(quantileMs(toPods, 0.5), "pods-p50-ms")
	b.ReportMetric(quantileMs(toPods, 0.99), "pods-p99-ms")
	b.ReportMetric((readsAfter-readsBefore)/n, "channel-reads/change")
	b.ReportMetric((writesAfter-writesBefore)/n, "tree-writes/change")
	b.Logf("%d changes: to the live manifest %v; to the Pods %v", b.N, toLive, toPods)
}

// hubViews reads an Application's views from the hub's Argo CD API server, as the logged-in CLI
// user.
type hubViews struct {
	cli argocdCLI
	b   testing.TB
	app string
}

// liveReplicas is spec.replicas of the Deployment's live state the hub's API server serves.
func (v hubViews) liveReplicas() (int, error) {
	status, body := v.cli.api(v.b, http.MethodGet, "/api/v1/applications/"+v.app+"/managed-resources?kind=Deployment")
	if status != http.StatusOK {
		return 0, fmt.Errorf("managed-resources: %d %s", status, body)
	}
	var answer struct {
		Items []struct {
			LiveState string `json:"liveState"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(body), &answer); err != nil || len(answer.Items) == 0 {
		return 0, fmt.Errorf("managed-resources: %v: %s", err, body)
	}
	var live struct {
		Spec struct {
			Replicas int `json:"replicas"`
		} `json:"spec"`
	}
	if err := json.Unmarshal([]byte(answer.Items[0].LiveState), &live); err != nil {
		return 0, fmt.Errorf("the Deployment's live state: %w", err)
	}
	return live.Spec.Replicas, nil
}

// pods is how many Pods the hub's API server's tree of the Application holds (-1 when unread).
func (v hubViews) pods() int {
	status, body := v.cli.api(v.b, http.MethodGet, "/api/v1/applications/"+v.app+"/resource-tree")
	if status != http.StatusOK {
		return -1
	}
	var tree struct {
		Nodes []struct {
			Kind string `json:"kind"`
		} `json:"nodes"`
	}
	if json.Unmarshal([]byte(body), &tree) != nil {
		return -1
	}
	n := 0
	for _, node := range tree.Nodes {
		if node.Kind == "Pod" {
			n++
		}
	}
	return n
}

// scrapeCounter sums the samples of counter name, among those whose labels hold every one of
// labels (`key="value"`), that argocd-pull's metrics endpoint at addr serves.
func scrapeCounter(t testing.TB, addr, name string, labels ...string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	sum := 0.0
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	for lines.Scan() {
		line := lines.Text()
		series, value, ok := strings.Cut(line, " ")
		if !ok || series != name && !strings.HasPrefix(series, name+"{") {
			continue
		}
		if !allIn(series, labels) {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			t.Fatalf("%s: %q: %v", name, line, err)
		}
		sum += v
	}
	if err := lines.Err(); err != nil {
		t.Fatal(err)
	}
	return sum
}

func allIn(series string, labels []string) bool {
	for _, l := range labels {
		if !strings.Contains(series, l) {
			return false
		}
	}
	return true
}

// quantileMs is the q quantile of ds (the nearest rank), in milliseconds.
func quantileMs(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	i := int(q*float64(len(sorted))+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return float64(sorted[i].Microseconds()) / 1000
}
