package controller

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/report"
	"github.com/argocd-pull/argocd-pull/internal/test/workfixture"
)

// Pause and resume at each scope, against a real apiserver, this test as the work agent (test/e2e
// runs the real one): the work turns read only once and nothing else is written while paused,
// whatever the hub does; status keeps flowing and says paused; a new Application gets no work;
// resuming delivers what changed; deleting a paused Application releases, and does not delete,
// the managed cluster's Application.
func TestPauseAtEachScope(t *testing.T) {
	for _, scope := range []string{"Application", "ApplicationSet", "controller"} {
		t.Run(scope, func(t *testing.T) {
			h := start(t)
			cluster := h.cluster()
			set := h.appSet("fleet")
			h.app("web", cluster, ownedBy(set), func(u *unstructured.Unstructured) { u.SetFinalizers([]string{argocd.ResourcesFinalizer}) })
			held := h.work("web", cluster)

			setPause := func(value string) {
				t.Helper()
				switch scope {
				case "Application":
					h.updateApp("web", func(u *unstructured.Unstructured) { setAnnotation(u, api.PausedAnnotation, value) })
				case "ApplicationSet":
					h.g.Eventually(func() error {
						got := argocd.NewApplicationSet()
						if err := h.c.Get(context.Background(), client.ObjectKeyFromObject(set), got); err != nil {
							return err
						}
						setAnnotation(got, api.PausedAnnotation, value)
						return h.c.Update(context.Background(), got)
					}, timeout, interval).Should(Succeed())
				case "controller":
					cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: api.PauseConfigMap}}
					err := h.c.Get(context.Background(), client.ObjectKeyFromObject(cm), cm)
					cm.Data = map[string]string{api.PauseKey: value}
					if apierrors.IsNotFound(err) {
						h.create(cm)
						return
					}
					h.g.Expect(h.c.Update(context.Background(), cm)).To(Succeed())
				}
			}

			setPause("incident-42")
			var paused *workv1.ManifestWork
			h.g.Eventually(func() bool {
				paused = h.writtenWork("web", cluster)
				return manifestwork.Paused(paused)
			}, timeout, interval).Should(BeTrue(), "the work is paused")
			cfg := paused.Spec.ManifestConfigs[0]
			h.g.Expect(cfg.UpdateStrategy.Type).To(Equal(workv1.UpdateStrategyTypeReadOnly), "the agent stops applying and keeps reporting")
			h.g.Expect(paused.Annotations).To(HaveKeyWithValue(api.PausedAnnotation, "incident-42"))
			h.g.Expect(paused.Spec.Workload).To(Equal(held.Spec.Workload), "the payload is what the cluster runs")
			h.g.Eventually(func() string { return pausedMessage(h.getApp("web")) }, timeout, interval).Should(HavePrefix("delivery paused by the " + map[string]string{
				"Application": "Application", "ApplicationSet": "ApplicationSet fleet", "controller": "controller"}[scope] + " (incident-42)"))
			h.g.Eventually(func() []string { return h.eventsFor("web") }, timeout, interval).Should(ContainElement(HavePrefix(ReasonPaused+": Paused ManifestWork "+cluster)),
				"events are sent asynchronously")

			// Nothing the hub does reaches the work: a new revision, a sync request.
			h.updateApp("web", func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, "v2", "spec", "source", "targetRevision")
				u.Object["operation"] = map[string]any{"sync": map[string]any{"revision": "v2"}}
			})
			h.app("newcomer", cluster, ownedBy(set), func(u *unstructured.Unstructured) {
				if scope == "Application" {
					setAnnotation(u, api.PausedAnnotation, "true")
				}
			})
			h.g.Consistently(func() string { return h.writtenWork("web", cluster).ResourceVersion }, 2*time.Second, 100*time.Millisecond).
				Should(Equal(paused.ResourceVersion), "no write while paused")
			h.noWorkFor("newcomer")

			// Status keeps flowing, and the report says paused.
			h.agentWrites("web", cluster, paused.Generation, map[string]string{manifestwork.FeedbackHealth: "Degraded", manifestwork.FeedbackSync: "Synced"})
			h.g.Eventually(func() string { return statusField(h.getApp("web"), "health", "status") }, timeout, interval).Should(Equal("Degraded"))
			h.g.Eventually(func() []string { return h.conditionsOf("fleet", h.ns+"/web/"+cluster+"/"+paused.Name) }, timeout, interval).
				Should(ContainElement(report.ConditionPaused))

			// Resume: what changed is delivered, the newcomer too.
			setPause("false")
			h.g.Eventually(func() bool {
				w := h.writtenWork("web", cluster)
				return !manifestwork.Paused(w) && w.Spec.ManifestConfigs[0].UpdateStrategy.Type == workv1.UpdateStrategyTypeServerSideApply
			}, timeout, interval).Should(BeTrue(), "held again")
			resumed := workfixture.Payload(t, h.writtenWork("web", cluster), 0)
			rev, _, _ := unstructured.NestedString(resumed.Object, "spec", "source", "targetRevision")
			h.g.Expect(rev).To(Equal("v2"))
			h.g.Expect(resumed.Object).To(HaveKey("operation"), "the sync requested meanwhile is delivered")
			h.g.Eventually(func() string { return pausedMessage(h.getApp("web")) }, timeout, interval).Should(BeEmpty())
			if scope != "Application" {
				h.writtenWork("newcomer", cluster)
			}

			// Deleting a paused Application releases the managed one: the work turns CreateOnly
			// with the Application orphaned, and goes once the agent applied that.
			setPause("handing over")
			h.g.Eventually(func() bool { return manifestwork.Paused(h.writtenWork("web", cluster)) }, timeout, interval).Should(BeTrue())
			h.g.Expect(h.c.Delete(context.Background(), h.getApp("web"))).To(Succeed())
			var released *workv1.ManifestWork
			h.g.Eventually(func() bool {
				released = h.writtenWork("web", cluster)
				return manifestwork.Released(released)
			}, timeout, interval).Should(BeTrue(), "released before it is deleted")
			h.g.Expect(released.Spec.DeleteOption.SelectivelyOrphan.OrphaningRules).To(ContainElement(HaveField("Resource", "applications")))
			h.g.Consistently(func() error {
				return h.c.Get(context.Background(), client.ObjectKeyFromObject(released), &workv1.ManifestWork{})
			}, time.Second, 100*time.Millisecond).Should(Succeed(), "kept until the agent let the Application go")
			h.agentWrites("web", cluster, released.Generation, nil)
			h.workGone("web", cluster)
			h.g.Eventually(func() bool {
				return apierrors.IsNotFound(h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: "web"}, argocd.NewApplication()))
			}, timeout, interval).Should(BeTrue(), "the hub Application goes: its finalizer is done")
		})
	}
}

func setAnnotation(u *unstructured.Unstructured, key, value string) {
	a := u.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[key] = value
	u.SetAnnotations(a)
}
