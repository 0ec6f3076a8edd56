package resourceviews

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/argocd-pull/argocd-pull/internal/resourcetree"
)

const gitService = `
apiVersion: v1
kind: Service
metadata:
  name: web
  annotations: {argocd.argoproj.io/tracking-id: "web:/Service:guestbook/web"}
spec:
  selector: {app: web}
  ports: [{port: 80}]
`

func listedItem(group, version, kind, name string, extra map[string]any) map[string]any {
	m := map[string]any{"group": group, "version": version, "kind": kind, "namespace": "guestbook", "name": name, "status": "Synced"}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

func key(group, kind, name string) resourcetree.Ref {
	return resourcetree.Ref{Group: group, Kind: kind, Namespace: "guestbook", Name: name}
}

func byName(m Managed) map[string]ResourceDiff {
	out := map[string]ResourceDiff{}
	for _, d := range m.Items {
		out[d.Kind+"/"+d.Name] = d
	}
	return out
}

// guestbookSources: a Deployment on the cluster as applied, a Service Git holds and the cluster
// lacks, a Secret, a ConfigMap the account was not let read, and a hook.
func guestbookSources(t *testing.T) Sources {
	return Sources{
		Listed: []any{
			listedItem("apps", "v1", "Deployment", "web", nil),
			listedItem("", "v1", "Service", "web", map[string]any{"status": "OutOfSync"}),
			listedItem("", "v1", "Secret", "web-token", nil),
			listedItem("", "v1", "ConfigMap", "web-config", nil),
			listedItem("batch", "v1", "Job", "migrate", map[string]any{"hook": true}),
			listedItem("apps", "v1", "Deployment", "web", nil),        // twice: once
			map[string]any{"kind": "Deployment", "name": "../../etc"}, // invalid: as the tree, left out
		},
		Live:      map[resourcetree.Ref]*unstructured.Unstructured{key("apps", "Deployment", "web"): applied(t, gitDeployment, nil)},
		Unread:    map[resourcetree.Ref]bool{key("", "Secret", "web-token"): true, key("", "ConfigMap", "web-config"): true},
		Targets:   []*unstructured.Unstructured{object(t, gitDeployment), object(t, gitService), object(t, "{apiVersion: v1, kind: Secret, metadata: {name: web-token}, data: {token: c2VjcmV0}}")},
		Namespace: "guestbook",
	}
}

func TestManagedResourcesCompareGitWithTheCluster(t *testing.T) {
	m := ManagedResources(guestbookSources(t))
	var order []string
	for _, d := range m.Items {
		order = append(order, d.Group+"/"+d.Kind+"/"+d.Name)
	}
	if got := strings.Join(order, " "); got != "/ConfigMap/web-config /Secret/web-token /Service/web apps/Deployment/web" {
		t.Errorf("items %s; want one per listed resource but the hook and the invalid one, in Argo CD's order", got)
	}
	items := byName(m)
	web := items["Deployment/web"]
	if web.Modified || web.NormalizedLiveState != web.PredictedLiveState || web.ResourceVersion != "4711" {
		t.Errorf("the Deployment as applied: modified %v, resourceVersion %q\n%s\n%s", web.Modified, web.ResourceVersion, web.NormalizedLiveState, web.PredictedLiveState)
	}
	if strings.Contains(web.LiveState, "managedFields") || !strings.Contains(web.LiveState, `"status"`) {
		t.Errorf("live state: want the object as read, with its status, without managedFields: %s", web.LiveState)
	}
	if !strings.Contains(web.TargetState, `"nginx:1.27"`) {
		t.Errorf("target state: %s", web.TargetState)
	}
	svc := items["Service/web"]
	if svc.LiveState != "null" || svc.NormalizedLiveState != "null" || !svc.Modified || !strings.Contains(svc.PredictedLiveState, `"port":80`) {
		t.Errorf("the Service Git holds, missing on the cluster: %+v", svc)
	}
	for _, name := range []string{"Secret/web-token", "ConfigMap/web-config"} {
		d := items[name]
		if d.LiveState != "null" || d.TargetState != "null" || d.NormalizedLiveState != "null" || d.PredictedLiveState != "null" || d.Modified {
			t.Errorf("%s (not read from the cluster): %+v; want no states, so that nothing shows a difference that is not there", name, d)
		}
	}
	if data, _ := json.Marshal(m.Items); strings.Contains(string(data), "c2VjcmV0") {
		t.Errorf("Git's Secret data is in the managed resources: %s", data)
	}
	if m.Message() != "" {
		t.Errorf("message %q, want none", m.Message())
	}
}

// Without the Application's rendered sources, the live manifest shows and no comparison is
// claimed: no normalized or predicted state, no target.
func TestManagedResourcesWithoutTargetsCarryTheLiveStateOnly(t *testing.T) {
	s := guestbookSources(t)
	s.Targets = nil
	items := byName(ManagedResources(s))
	web := items["Deployment/web"]
	if !strings.Contains(web.LiveState, `"nginx:1.27"`) || web.TargetState != "" || web.NormalizedLiveState != "" || web.PredictedLiveState != "" || web.Modified {
		t.Errorf("the Deployment without targets: %+v", web)
	}
	if svc := items["Service/web"]; svc.LiveState != "null" || svc.TargetState != "" || svc.Modified {
		t.Errorf("the missing Service without targets: %+v", svc)
	}
}

// The hub renders the Application under its own name, the managed Argo CD under its own: the
// target takes the tracking the cluster's object carries, so that tracking is no difference.
func TestManagedResourcesTakeTheClustersTracking(t *testing.T) {
	s := guestbookSources(t)
	hubRendered := strings.Replace(gitDeployment, `"web:apps/Deployment:guestbook/web"`, `"tenant_web:apps/Deployment:guestbook/web"`, 1)
	hubRendered = strings.Replace(hubRendered, "labels: {tier: web}", "labels: {tier: web, app.kubernetes.io/instance: tenant_web}", 1)
	s.Targets = []*unstructured.Unstructured{object(t, hubRendered)}
	web := byName(ManagedResources(s))["Deployment/web"]
	if web.Modified || strings.Contains(web.TargetState, "tenant_web") {
		t.Errorf("the hub's tracking shows as a difference: %+v", web)
	}
}

func TestManagedResourcesBoundWhatTheClusterSends(t *testing.T) {
	s := guestbookSources(t)
	big := applied(t, gitService, func(m map[string]any) {
		m["metadata"].(map[string]any)["annotations"].(map[string]any)["filler"] = strings.Repeat("x", MaxItemSize)
	})
	s.Live[key("", "Service", "web")] = big
	other := applied(t, gitDeployment, func(m map[string]any) { m["metadata"].(map[string]any)["name"] = "db" })
	s.Live[key("apps", "Deployment", "web")] = other // asked for web, answered db
	m := ManagedResources(s)
	items := byName(m)
	for _, name := range []string{"Service/web", "Deployment/web"} {
		if d := items[name]; d.LiveState != "null" || d.PredictedLiveState != "null" {
			t.Errorf("%s: %+v; want no states", name, d)
		}
	}
	if m.Left != 2 || !strings.Contains(m.Message(), "over the cap") && !strings.Contains(m.Message(), "another object") {
		t.Errorf("left %d, message %q", m.Left, m.Message())
	}

	// Many resources, each under the item cap: the total holds.
	s = Sources{Namespace: "guestbook", Live: map[resourcetree.Ref]*unstructured.Unstructured{}}
	for i := range 40 {
		name := "cm-" + strings.Repeat("a", i+1)
		s.Listed = append(s.Listed, listedItem("", "v1", "ConfigMap", name, nil))
		cm := object(t, "{apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: guestbook}}")
		cm.SetName(name)
		cm.Object["data"] = map[string]any{"big": strings.Repeat("y", 300*1024)}
		s.Live[key("", "ConfigMap", name)] = cm
	}
	m = ManagedResources(s)
	total := 0
	for _, d := range m.Items {
		total += d.size()
	}
	if total > MaxManagedSize || m.Left == 0 || len(m.Items) != 40 || !strings.Contains(m.Message(), "reach their cap") {
		t.Errorf("total %d bytes (cap %d), left %d, %d items, message %q", total, MaxManagedSize, m.Left, len(m.Items), m.Message())
	}
}
