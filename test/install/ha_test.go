package install

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/localproc"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

// leaseName is the controller's leader election Lease, in its namespace.
const leaseName = "argocd-pull.apps.open-cluster-management.io"

// replica is one controller process of a two-replica Deployment.
type replica struct {
	name string
	p    *localproc.Process
}

func (r replica) log() string { data, _ := os.ReadFile(r.p.Log); return string(data) }
func (r replica) leads() bool { return strings.Contains(r.log(), `"Successfully acquired lease"`) }

// Two replicas with the chart's leader election, as `replicas: 2` runs them, through churn on the
// hub: the leader killed (SIGKILL: no release) mid-churn, a standby takes over after the lease
// expires and nothing is lost or duplicated (exactly the works the hub wants, no finalizer stuck);
// then a rolling restart (SIGTERM to the leader, which releases its lease) hands over at once. The
// takeover times are logged (docs/operating.md publishes them).
func TestTwoReplicasHandOver(t *testing.T) {
	g := NewWithT(t)
	env := testenv.Get(t)
	k := newKube(t, env)
	dep := installedDeployment(t, k)
	hub := env.Client
	// No work agent here: the test stands in for the clusters' agents. They answer the claim
	// probes (no Application of those names is there), and apply each work, so that a deleted
	// Application's work is not left waiting for its cluster (manifestwork.FinalGrace).
	answering, stopAnswering := context.WithCancel(context.Background())
	t.Cleanup(stopAnswering)
	go testenv.AnswerProbes(answering, hub, 100*time.Millisecond, nil)
	go func() {
		for answering.Err() == nil {
			works := &workv1.ManifestWorkList{}
			if hub.List(answering, works, client.MatchingLabels{api.ManagedByLabel: api.ManagedByValue}) == nil {
				for i := range works.Items {
					w := &works.Items[i]
					if !manifestwork.AppliedAtGeneration(w) {
						testenv.SetAgentStatus(w, w.Generation, w.Annotations[api.HubApplicationNamespaceAnnotation], w.Annotations[api.HubApplicationNameAnnotation], nil)
						_ = hub.Status().Update(answering, w)
					}
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()

	clusters := []string{"ha-1", "ha-2", "ha-3"}
	k.run("apply", "--server-side", "-k", "config/samples")
	k.run("apply", "--server-side", "-f", writeFile(t, "ha-clusters.yaml", []byte(globalClusters("", clusters...))))

	args := []string{}
	for _, a := range dep.Spec.Template.Spec.Containers[0].Args {
		args = append(args, strings.ReplaceAll(a, "$(POD_NAMESPACE)", installNamespace))
	}
	g.Expect(args).To(ContainElement("--leader-elect"), "the chart elects a leader")
	dir := t.TempDir()
	start := func(name string) replica {
		t.Helper()
		token := strings.TrimSpace(k.run("create", "token", serviceAccount, "-n", installNamespace, "--duration=1h"))
		a := append(slices.Clone(args), "--health-probe-bind-address="+freeAddr(t), "--metrics-bind-address="+freeAddr(t))
		p, err := asProcess(t, k, a, token, filepath.Join(dir, name+".log"))
		g.Expect(err).NotTo(HaveOccurred())
		r := replica{name, p}
		t.Cleanup(func() {
			p.Stop()
			if t.Failed() {
				t.Logf("replica %s log:\n%s", name, r.log())
			}
		})
		return r
	}
	lease := func() *coordinationv1.Lease {
		l := &coordinationv1.Lease{}
		if err := hub.Get(context.Background(), types.NamespacedName{Namespace: installNamespace, Name: leaseName}, l); err != nil {
			return nil
		}
		return l
	}
	holder := func() string {
		if l := lease(); l != nil && l.Spec.HolderIdentity != nil {
			return *l.Spec.HolderIdentity
		}
		return ""
	}
	// takenOverAt waits until someone other than previous holds the lease, and says when it was acquired.
	takenOverAt := func(previous string) time.Time {
		t.Helper()
		var at time.Time
		g.Eventually(func() string {
			l := lease()
			if l == nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == previous || *l.Spec.HolderIdentity == "" || l.Spec.AcquireTime == nil {
				return ""
			}
			at = l.Spec.AcquireTime.Time
			return *l.Spec.HolderIdentity
		}, time.Minute, 50*time.Millisecond).ShouldNot(BeEmpty(), "a standby takes the lease")
		return at
	}
	// A previous install test's controller may have released the lease or left it to expire.
	replicas := []replica{start("a"), start("b")}
	var leader, standby replica
	g.Eventually(func() bool {
		for i, r := range replicas {
			if r.leads() {
				leader, standby = r, replicas[1-i]
				return true
			}
		}
		return false
	}, time.Minute, 100*time.Millisecond).Should(BeTrue(), "one replica leads")
	g.Expect(standby.leads()).To(BeFalse(), "one leader at a time")

	// The churn: Applications created (every third with Argo CD's resources finalizer),
	// re-targeted, unlabelled and deleted, a step every 150 ms, across the takeover.
	const apps = 30
	want := map[string]string{} // Application -> the cluster its one work must be in
	var mu sync.Mutex
	name := func(i int) string { return fmt.Sprintf("ha-%02d", i) }
	create := func(i int) error {
		app := argocd.NewApplication()
		app.SetNamespace(argoCDNamespace)
		app.SetName(name(i))
		app.SetLabels(map[string]string{api.PullLabel: "true"})
		app.SetAnnotations(map[string]string{api.ClusterAnnotation: clusters[i%len(clusters)]})
		if i%3 == 0 {
			app.SetFinalizers([]string{argocd.ResourcesFinalizer})
		}
		app.Object["spec"] = map[string]any{
			"project":     "default",
			"source":      map[string]any{"repoURL": "https://github.com/argoproj/argocd-example-apps.git", "path": "guestbook"},
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": "guestbook"},
		}
		return hub.Create(context.Background(), app)
	}
	update := func(i int, mutate func(*unstructured.Unstructured)) error {
		app := argocd.NewApplication()
		if err := hub.Get(context.Background(), types.NamespacedName{Namespace: argoCDNamespace, Name: name(i)}, app); err != nil {
			return err
		}
		mutate(app)
		return hub.Update(context.Background(), app)
	}
	t.Cleanup(func() {
		for i := range apps + 1 {
			_ = update(i, func(u *unstructured.Unstructured) { u.SetFinalizers(nil) })
			app := argocd.NewApplication()
			app.SetNamespace(argoCDNamespace)
			app.SetName(name(i))
			_ = hub.Delete(context.Background(), app)
		}
	})
	steps := []func() error{}
	for i := range apps {
		steps = append(steps, func() error {
			mu.Lock()
			want[name(i)] = clusters[i%len(clusters)]
			mu.Unlock()
			return create(i)
		})
	}
	for i := range apps {
		switch i % 5 {
		case 1:
			steps = append(steps, func() error {
				to := clusters[(i+1)%len(clusters)]
				mu.Lock()
				want[name(i)] = to
				mu.Unlock()
				return update(i, func(u *unstructured.Unstructured) {
					a := u.GetAnnotations()
					a[api.ClusterAnnotation] = to
					u.SetAnnotations(a)
				})
			})
		case 2:
			steps = append(steps, func() error {
				mu.Lock()
				delete(want, name(i))
				mu.Unlock()
				return update(i, func(u *unstructured.Unstructured) { u.SetLabels(nil) })
			})
		case 3:
			steps = append(steps, func() error {
				mu.Lock()
				delete(want, name(i))
				mu.Unlock()
				app := argocd.NewApplication()
				app.SetNamespace(argoCDNamespace)
				app.SetName(name(i))
				return hub.Delete(context.Background(), app)
			})
		}
	}
	churned := make(chan error, 1)
	go func() {
		for _, step := range steps {
			if err := step(); err != nil {
				churned <- err
				return
			}
			time.Sleep(150 * time.Millisecond)
		}
		churned <- nil
	}()

	time.Sleep(2 * time.Second) // mid-churn
	before := holder()
	killed := time.Now()
	g.Expect(syscall.Kill(leader.p.PID(), syscall.SIGKILL)).To(Succeed())
	took := takenOverAt(before).Sub(killed)
	t.Logf("leader killed (SIGKILL): the standby took the lease %s later (lease duration %s)", took.Round(time.Millisecond), "15s")
	g.Eventually(standby.leads, 10*time.Second, 50*time.Millisecond).Should(BeTrue(), "the standby leads now")
	g.Expect(<-churned).To(Succeed())

	// Exactly the works the hub wants, and no Application left with a finalizer it cannot lose.
	g.Eventually(func() error {
		works := &workv1.ManifestWorkList{}
		if err := hub.List(context.Background(), works, client.MatchingLabels{api.ManagedByLabel: api.ManagedByValue}); err != nil {
			return err
		}
		got := map[string][]string{}
		for _, w := range works.Items {
			if app := w.Annotations[api.HubApplicationNameAnnotation]; strings.HasPrefix(app, "ha-") && w.DeletionTimestamp.IsZero() {
				got[app] = append(got[app], w.Namespace)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for app, in := range got {
			if cluster, ok := want[app]; !ok || !slices.Equal(in, []string{cluster}) {
				return fmt.Errorf("works of %s in %v, want %q", app, in, cluster)
			}
		}
		for app, cluster := range want {
			if len(got[app]) == 0 {
				return fmt.Errorf("no work of %s in %s", app, cluster)
			}
		}
		for i := range apps {
			if i%5 != 3 {
				continue
			}
			err := hub.Get(context.Background(), types.NamespacedName{Namespace: argoCDNamespace, Name: name(i)}, argocd.NewApplication())
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleted Application %s still there (%v)", name(i), err)
			}
		}
		return nil
	}, time.Minute, 250*time.Millisecond).Should(Succeed(), "nothing lost or duplicated across the takeover")

	// A rolling restart: the killed replica comes back as the standby; the leader gets SIGTERM,
	// releases its lease as it stops, and the standby takes it within about a retry period.
	leader, standby = standby, start("a-restarted")
	g.Eventually(func() string { return standby.log() }, time.Minute, 100*time.Millisecond).Should(ContainSubstring(`"Attempting to acquire leader lease..."`))
	before = holder()
	// Every change of the Lease from here on, in order: the release is seen however short it is.
	cs, err := kubernetes.NewForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	changes, err := cs.CoordinationV1().Leases(installNamespace).Watch(context.Background(), metav1.ListOptions{
		FieldSelector: "metadata.name=" + leaseName, ResourceVersion: lease().ResourceVersion})
	g.Expect(err).NotTo(HaveOccurred())
	defer changes.Stop()
	sent := time.Now()
	g.Expect(leader.p.Signal(syscall.SIGTERM)).To(Succeed())
	handedOver := takenOverAt(before).Sub(sent)
	<-leader.p.Done()
	t.Logf("leader stopped (SIGTERM): the standby took the lease %s later", handedOver.Round(time.Millisecond))
	g.Expect(leader.p.Err()).NotTo(HaveOccurred(), "the stopping leader exits 0")
	// The standby did not wait for the lease to expire: the stopping leader wrote the release
	// (no holder) before anyone else held the lease. (The time it took is logged, not asserted.)
	var holders []string
	for done := false; !done; {
		select {
		case e, ok := <-changes.ResultChan():
			g.Expect(ok).To(BeTrue(), "the watch of the Lease ended early; holders seen: %q", holders)
			l, isLease := e.Object.(*coordinationv1.Lease)
			if !isLease || l.Spec.HolderIdentity == nil {
				continue
			}
			if h := *l.Spec.HolderIdentity; len(holders) == 0 || holders[len(holders)-1] != h {
				holders = append(holders, h)
			}
			done = holders[len(holders)-1] != before && holders[len(holders)-1] != ""
		case <-time.After(time.Minute):
			t.Fatalf("the Lease's changes after SIGTERM: no new holder in a minute; holders seen: %q", holders)
		}
	}
	g.Expect(holders).To(ContainElement(""), "the leader released its lease as it stopped (holders in order: %q)", holders)

	// The new leader works: one more Application is delivered.
	mu.Lock()
	want[name(apps)] = clusters[apps%len(clusters)]
	mu.Unlock()
	g.Expect(create(apps)).To(Succeed())
	g.Eventually(func() error {
		works := &workv1.ManifestWorkList{}
		if err := hub.List(context.Background(), works, client.InNamespace(clusters[apps%len(clusters)])); err != nil {
			return err
		}
		for _, w := range works.Items {
			if w.Annotations[api.HubApplicationNameAnnotation] == name(apps) {
				return nil
			}
		}
		return fmt.Errorf("no work of %s yet", name(apps))
	}, time.Minute, 250*time.Millisecond).Should(Succeed())
}
