package install

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
	"github.com/argocd-pull/argocd-pull/internal/viewholders"
)

// An Application deleted and created again at once under the same name, with another destination,
// would find the first one's tree of its cluster's uids in the hub Argo CD's cache (Argo CD finds a
// tree by name) for as long as argocd-pull takes to remove it, all the while argocd-pull is stopped,
// and Argo CD's API server would send each view of it to the new destination: the hub, or another
// cluster (issue 92). While the name is recorded (internal/viewholders, written here by the
// controller's own Registry), the policy of config/admission refuses that create, for anyone, with
// a message that says why and until when; the same destination passes (the ApplicationSet
// controller making its Application again), other names pass; records someone deletes are found
// at the next check and written again; and once the record is released (the tree gone) every
// destination passes again.
func TestAnApplicationMadeAgainKeepsTheDestinationItsNameHoldsATreeFor(t *testing.T) {
	g := NewWithT(t)
	env := testenv.Get(t)
	k := withTheAdmissionPolicies(t, env)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	admin := env.Client
	// The Argo CD namespace the install's binding names.
	argo := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "openshift-gitops"}}
	if err := admin.Create(ctx, argo); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	ns := env.Namespace(t)
	tenant := tenantOf(t, env, ns)

	holders := &viewholders.Registry{Reader: admin, Writer: admin, Namespace: argo.Name, Every: 50 * time.Millisecond, Check: 200 * time.Millisecond, Log: testr.New(t)}
	done := make(chan struct{})
	go func() { defer close(done); _ = holders.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		for i := range viewholders.Shards {
			_ = admin.Delete(context.Background(), &v1alpha1.ResourceViewHolders{ObjectMeta: metav1.ObjectMeta{Namespace: argo.Name, Name: viewholders.ObjectName(i)}})
		}
	})
	key := viewholders.Key(ns, "views")
	g.Eventually(func() viewholders.State {
		return holders.Hold(key, viewholders.Value("cluster1", ""), time.Now())
	}, time.Minute, 50*time.Millisecond).Should(Equal(viewholders.Held), "the name's record, as the tree controller asks for it")
	held := &v1alpha1.ResourceViewHolders{}
	g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: argo.Name, Name: viewholders.ObjectName(viewholders.Shard(key))}, held)).To(Succeed())
	g.Expect(held.Holders).To(HaveKeyWithValue(key, "cluster1 "))

	create := func(c client.Client, namespace, name string, dest map[string]any) error {
		a := argocd.NewApplication()
		a.SetNamespace(namespace)
		a.SetName(name)
		a.SetLabels(map[string]string{api.PullLabel: "true"})
		a.SetAnnotations(map[string]string{api.ClusterAnnotation: "cluster1", "argocd.argoproj.io/skip-reconcile": "true"})
		a.Object["spec"] = map[string]any{"project": "default", "destination": dest,
			"source": map[string]any{"repoURL": "https://github.com/argoproj/argocd-example-apps.git", "path": "guestbook", "targetRevision": "HEAD"}}
		err := c.Create(ctx, a)
		if err == nil {
			t.Cleanup(func() { _ = admin.Delete(context.Background(), a) })
		}
		return err
	}
	remove := func(name string) {
		a := argocd.NewApplication()
		a.SetNamespace(ns)
		a.SetName(name)
		g.Expect(admin.Delete(ctx, a)).To(Succeed())
	}
	hub := map[string]any{"server": argocd.LocalServer, "namespace": "guestbook"}

	// The policy is in force once the apiserver has loaded it and the ConfigMap: a create that
	// passed before then is deleted, and tried again.
	g.Eventually(func() error {
		err := create(tenant, ns, "views", hub)
		if err == nil {
			remove("views")
		}
		return err
	}, 3*time.Minute, 200*time.Millisecond).Should(MatchError(ContainSubstring("still holds its cluster resource tree")), func() string {
		return "the name made again, aimed at the hub; the policy and the records:\n" +
			k.run("get", "validatingadmissionpolicy,validatingadmissionpolicybinding", viewHoldersPolicy, "-o", "yaml") +
			k.run("get", "resourceviewholders", "-n", argo.Name, "-o", "yaml")
	})
	refused := func(what string, c client.Client, dest map[string]any) {
		t.Helper()
		err := create(c, ns, "views", dest)
		g.Expect(apierrors.IsInvalid(err) || apierrors.IsForbidden(err)).To(BeTrue(), "%s: %v", what, err)
		g.Expect(err).To(MatchError(And(ContainSubstring("argocd-pull"), ContainSubstring(`"cluster1 "`), ContainSubstring("docs/security.md"))), what)
	}
	refused("the in-cluster server by name", tenant, map[string]any{"name": "in-cluster", "namespace": "guestbook"})
	refused("another managed cluster", tenant, map[string]any{"name": "cluster2", "namespace": "guestbook"})
	refused("a push-registered cluster's server", tenant, map[string]any{"server": "https://cluster2.example.com:6443", "namespace": "guestbook"})
	refused("a server beside the name", tenant, map[string]any{"name": "cluster1", "server": argocd.LocalServer, "namespace": "guestbook"})
	refused("by the hub's admin too", admin, hub)

	// What passes: the same destination (another namespace there), and other names.
	g.Expect(create(tenant, ns, "views", map[string]any{"name": "cluster1", "namespace": "guestbook-2"})).To(Succeed(), "the same destination")
	remove("views")
	g.Expect(create(tenant, ns, "other", hub)).To(Succeed(), "a name that holds no tree")
	other := env.Namespace(t)
	g.Expect(create(admin, other, "views", hub)).To(Succeed(), "the same name in another namespace")

	// Someone deletes the records: argocd-pull finds it at its next check and writes them again,
	// and the policy refuses again (until then the name gets no tree of uids: Hold is Pending).
	g.Expect(admin.Delete(ctx, held)).To(Succeed())
	g.Eventually(func(g Gomega) {
		again := &v1alpha1.ResourceViewHolders{}
		g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(held), again)).To(Succeed())
		g.Expect(again.Holders).To(HaveKeyWithValue(key, "cluster1 "))
	}, time.Minute, 100*time.Millisecond).Should(Succeed(), "the records written again after someone deleted them")
	g.Eventually(func() error {
		err := create(tenant, ns, "views", hub)
		if err == nil {
			remove("views") // made in the moment before the records were back in the policy
		}
		return err
	}, time.Minute, 200*time.Millisecond).Should(MatchError(ContainSubstring("still holds its cluster resource tree")), "the policy refusing again")

	// The tree gone, the record released: any destination again.
	holders.Release(key)
	g.Eventually(func() error { return create(tenant, ns, "views", hub) }, time.Minute, 200*time.Millisecond).Should(Succeed(), "the name after its record went")
	g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(held), held)).To(Succeed())
	g.Expect(held.Holders).NotTo(HaveKey(key))
}
