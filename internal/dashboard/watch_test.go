package dashboard

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/internal/scheme"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// The fleet view's watches against a real apiserver: what the hub holds arrives in the fleet,
// changes follow, deletions leave; and a kubeconfig without the rights gets a plain answer.
func TestTheFleetFollowsTheHub(t *testing.T) {
	env := testenv.Get(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := env.Client
	for _, ns := range []string{argoNS, "c1"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
			t.Fatal(err)
		}
	}
	// Every run on this package's apiserver starts from none of them (go test -count).
	app, appSet := genApp("web", "c1"), genAppSet("web", 0)
	cluster := genCluster("c1", map[string]string{"env": "prod"}, metav1.ConditionTrue)
	work := genWork(t, app, nil)
	t.Cleanup(func() {
		for _, o := range []client.Object{app.DeepCopy(), appSet.DeepCopy(), work.DeepCopy(), cluster.DeepCopy()} {
			_ = c.Delete(context.Background(), o)
		}
	})
	status := cluster.Status
	if err := c.Create(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	cluster.Status = status
	if err := c.Status().Update(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	appSet.SetUID("")
	appSet.Object["spec"] = map[string]any{"generators": []any{}, "template": map[string]any{"metadata": map[string]any{}, "spec": map[string]any{"project": "default", "destination": map[string]any{}}}}
	if err := c.Create(ctx, appSet); err != nil {
		t.Fatal(err)
	}
	owner := app.GetOwnerReferences()
	owner[0].UID = appSet.GetUID()
	app.SetOwnerReferences(owner)
	if err := c.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	work = genWork(t, app, feedback("Synced", "Healthy", "abc"))
	workStatus := work.Status
	if err := c.Create(ctx, work); err != nil {
		t.Fatal(err)
	}
	work.Status = workStatus
	if err := c.Status().Update(ctx, work); err != nil {
		t.Fatal(err)
	}

	s, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckAccess(ctx, c, []string{argoNS}); err != nil {
		t.Fatalf("an admin may not read the fleet: %v", err)
	}
	watches, err := NewCache(env.Config, s, []string{argoNS})
	if err != nil {
		t.Fatal(err)
	}
	fleet := NewFleet(0)
	synced, err := Feed(ctx, watches, fleet)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = watches.Start(ctx) }()
	if !watches.WaitForCacheSync(ctx) {
		t.Fatal("the watches did not sync")
	}
	eventually(t, "every object listed handed to the fleet", func() (bool, any) { return synced(), "not yet" })
	_, stream := fleet.Subscribe()
	defer stream.Close()
	eventually(t, "the hub's Application in the fleet, Synced and Healthy", func() (bool, any) {
		s := fleet.Snapshot()
		return len(s.Entries) == 1 && s.Entries[0].State == StateHealthy && s.Entries[0].AppSet == argoNS+"/web" && len(s.Clusters) == 1, s
	})

	// The cluster reports a failed sync.
	values := feedback("OutOfSync", "Degraded", "def")
	testenv.SetAgentStatus(work, 1, app.GetNamespace(), app.GetName(), withUID(values, app.GetName()))
	if err := c.Status().Update(ctx, work); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the failing entry in a delta", func() (bool, any) {
		select {
		case <-stream.Changed():
		case <-time.After(100 * time.Millisecond):
			return false, "no change"
		}
		d := stream.Next()
		return len(d.Entries) == 1 && d.Entries[0].State == StateFailing && d.Entries[0].Revision == "def", d
	})

	// The Application leaves the pull model (its label removed): gone from the page.
	app.SetLabels(nil)
	if err := c.Update(ctx, app); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Application gone from the fleet", func() (bool, any) {
		s := fleet.Snapshot()
		return len(s.Entries) == 0, s.Entries
	})

	// Without rights: a plain message naming what is missing.
	viewer := rest.CopyConfig(env.Config)
	viewer.Impersonate = rest.ImpersonationConfig{UserName: "someone-without-rights"}
	restricted, err := client.New(viewer, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	err = CheckAccess(ctx, restricted, []string{argoNS})
	for _, want := range []string{"you may not list Applications (argoproj.io) in namespace " + argoNS, "ManifestWorks", "ManagedClusters", "get, list and watch"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing rights: %v, want it to say %q", err, want)
		}
	}
}

func withUID(values map[string]string, name string) map[string]string {
	values["managedUID"] = "uid-" + name
	return values
}

func eventually(t *testing.T, what string, cond func() (bool, any)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last any
	for time.Now().Before(deadline) {
		var ok bool
		if ok, last = cond(); ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: not within 30s (last: %+v)", what, last)
}
