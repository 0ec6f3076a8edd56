package controller

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/appstatus"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/repocreds"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

const privateRepo = "https://git.example/team/private.git"

func fromRepo(url string) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		u.Object["spec"].(map[string]any)["source"].(map[string]any)["repoURL"] = url
	}
}

// credential creates a hub credential Secret of kind (repocreds.Repository or Template) in the
// harness's Argo CD namespace, opted in when optIn.
func (h *harness) credential(name string, kind repocreds.Kind, url, project, password string, optIn bool) *corev1.Secret {
	h.t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name, Labels: map[string]string{repocreds.SecretTypeLabel: string(kind)}},
		Data:       map[string][]byte{"url": []byte(url), "username": []byte("git"), "password": []byte(password)},
	}
	if project != "" {
		s.Data["project"] = []byte(project)
	}
	if optIn {
		s.Labels[repocreds.OptInLabel] = "true"
	}
	h.create(s)
	return s
}

func (h *harness) updateSecret(name string, mutate func(*corev1.Secret)) {
	h.t.Helper()
	h.g.Eventually(func() error {
		s := &corev1.Secret{}
		if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: name}, s); err != nil {
			return err
		}
		mutate(s)
		return h.c.Update(context.Background(), s)
	}, timeout, interval).Should(Succeed())
}

// carrier is cluster's credentials' carrier, nil when there is none.
func (h *harness) carrier(cluster string) *workv1.ManifestWork {
	w := &workv1.ManifestWork{}
	err := h.c.Get(context.Background(), types.NamespacedName{Namespace: cluster, Name: manifestwork.CredentialsWorkName}, w)
	if apierrors.IsNotFound(err) {
		return nil
	}
	h.g.Expect(err).NotTo(HaveOccurred())
	return w
}

// copies are the carrier's copies by name: the password of each held one, "" for one only read.
func copies(carrier *workv1.ManifestWork) map[string]string {
	if carrier == nil {
		return nil
	}
	out := map[string]string{}
	for _, m := range carrier.Spec.Workload.Manifests {
		var s struct {
			Metadata struct{ Namespace, Name string }
			Data     map[string]string
		}
		if err := json.Unmarshal(m.Raw, &s); err != nil {
			panic(err)
		}
		password, _ := base64.StdEncoding.DecodeString(s.Data["password"])
		out[s.Metadata.Name] = string(password)
	}
	return out
}

// answerCarrier answers cluster's carrier as its work agent would, about its current generation
// (answerCarrier below). more are reported as well, whatever the carrier holds: what a compromised
// agent may write.
func (h *harness) answerCarrier(cluster string, foreign []string, more ...workv1.ManifestCondition) {
	h.t.Helper()
	h.g.Eventually(func() error {
		w := h.carrier(cluster)
		if w == nil {
			return fmt.Errorf("no carrier on %s", cluster)
		}
		answerCarrier(w, foreign...)
		w.Status.ResourceStatus.Manifests = append(w.Status.ResourceStatus.Manifests, more...)
		return h.c.Status().Update(context.Background(), w)
	}, timeout, interval).Should(Succeed())
}

// answerCarrier sets the status the work agent writes of carrier w: Applied at its generation, each
// held copy present as argocd-pull's (its hub-Secret annotation), each named in foreign present as
// something else (a uid, no annotation), the others absent.
func answerCarrier(w *workv1.ManifestWork, foreign ...string) {
	w.Status.Conditions = testenv.AppliedConditions(w.Generation, metav1.Now())
	w.Status.ResourceStatus.Manifests = nil
	claims := manifestwork.CredentialClaims(w)
	for _, m := range w.Spec.Workload.Manifests {
		var s struct {
			Metadata struct {
				Namespace, Name string
				Annotations     map[string]string
			}
		}
		if err := json.Unmarshal(m.Raw, &s); err != nil {
			panic(err)
		}
		ns, name := s.Metadata.Namespace, s.Metadata.Name
		switch {
		case slices.Contains(foreign, name):
			w.Status.ResourceStatus.Manifests = append(w.Status.ResourceStatus.Manifests, secretStatus(ns, name, "uid-theirs", ""))
		case claims[ns+"/"+name] == manifestwork.ClaimOurs:
			w.Status.ResourceStatus.Manifests = append(w.Status.ResourceStatus.Manifests, secretStatus(ns, name, "uid-ours", s.Metadata.Annotations[manifestwork.HubSecretAnnotation]))
		default:
			w.Status.ResourceStatus.Manifests = append(w.Status.ResourceStatus.Manifests, secretStatus(ns, name, "", ""))
		}
	}
}

// secretStatus is the agent's report of a Secret: absent when uid is "", else present with its uid
// and hub-Secret annotation as feedback.
func secretStatus(namespace, name, uid, hubSecret string) workv1.ManifestCondition {
	now := metav1.Now()
	available := metav1.Condition{Type: workv1.ManifestAvailable, Status: metav1.ConditionFalse, Reason: "ResourceNotAvailable", LastTransitionTime: now}
	var values []workv1.FeedbackValue
	if uid != "" {
		available = metav1.Condition{Type: workv1.ManifestAvailable, Status: metav1.ConditionTrue, Reason: "ResourceAvailable", LastTransitionTime: now}
		values = append(values, workv1.FeedbackValue{Name: manifestwork.FeedbackManagedUID, Value: workv1.FieldValue{Type: workv1.String, String: ptr.To(uid)}})
		if hubSecret != "" {
			values = append(values, workv1.FeedbackValue{Name: manifestwork.FeedbackHubSecret, Value: workv1.FieldValue{Type: workv1.String, String: ptr.To(hubSecret)}})
		}
	}
	return workv1.ManifestCondition{
		ResourceMeta:    workv1.ManifestResourceMeta{Version: "v1", Kind: "Secret", Resource: "secrets", Namespace: namespace, Name: name},
		StatusFeedbacks: workv1.StatusFeedbackResult{Values: values},
		Conditions:      []metav1.Condition{{Type: workv1.ManifestApplied, Status: metav1.ConditionTrue, Reason: "Applied", LastTransitionTime: now}, available},
	}
}

// lacks is the Application's PullCredentialWarning, "" when it has none.
func (h *harness) lacks(name string) string {
	return argocd.ConditionMessage(h.getApp(name), appstatus.CredentialWarningCondition)
}

// A credential opted in reaches the cluster whose delivered Application uses its repository, and
// no other: asked about read only first (no value in the carrier), held once the cluster answers
// that no Secret of its name is there. A rotation is one rewrite of the carrier; while the
// controller is paused nothing is written, and the rotation is delivered on resume. The opt-in
// removed, the carrier goes (and the held copy with it, on the cluster).
func TestACredentialReachesOnlyTheClustersWhoseApplicationsUseIt(t *testing.T) {
	h := start(t)
	uses, other := h.cluster(), h.cluster()
	h.credential("private-repo", repocreds.Repository, privateRepo, "", "first", true)
	h.credential("not-opted-in", repocreds.Repository, "https://git.example/apps", "", "never", false)
	h.app("uses", uses, fromRepo(privateRepo))
	h.app("public", other)
	h.work("uses", uses)
	h.work("public", other)

	h.g.Eventually(func() map[string]string { return copies(h.carrier(uses)) }, timeout, interval).
		Should(Equal(map[string]string{"private-repo": ""}), "asked about read only, without its values")
	h.answerCarrier(uses, nil)
	h.g.Eventually(func() map[string]string { return copies(h.carrier(uses)) }, timeout, interval).
		Should(Equal(map[string]string{"private-repo": "first"}), "held once the cluster has no Secret of its name")
	carrier := h.carrier(uses)
	h.g.Expect(carrier.Spec.ManifestConfigs[0].UpdateStrategy.Type).To(Equal(workv1.UpdateStrategyTypeServerSideApply))
	h.g.Expect(carrier.Labels).To(HaveKeyWithValue(manifestwork.CredentialsLabel, "true"))
	h.g.Expect(carrier.Labels).NotTo(HaveKey(api.ManagedByLabel), "not one Application's work")
	h.g.Expect(h.carrier(other)).To(BeNil(), "its Application's repository needs no credential")
	h.answerCarrier(uses, nil)
	h.g.Consistently(func() int64 { return h.carrier(uses).Generation }, 2*time.Second, interval).Should(Equal(carrier.Generation), "written once")

	// Paused, a rotation waits; resumed, it is delivered in one write.
	pause := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: api.PauseConfigMap}, Data: map[string]string{api.PauseKey: "maintenance"}}
	h.create(pause)
	h.updateSecret("private-repo", func(s *corev1.Secret) { s.Data["password"] = []byte("second") })
	h.g.Consistently(func() map[string]string { return copies(h.carrier(uses)) }, 2*time.Second, interval).
		Should(Equal(map[string]string{"private-repo": "first"}), "paused")
	h.g.Expect(h.c.Delete(context.Background(), pause)).To(Succeed())
	h.g.Eventually(func() map[string]string { return copies(h.carrier(uses)) }, timeout, interval).
		Should(Equal(map[string]string{"private-repo": "second"}), "rotated on resume")
	h.g.Expect(h.carrier(uses).Generation).To(Equal(carrier.Generation+1), "one write")
	h.g.Expect(h.lacks("uses")).To(BeEmpty())

	h.updateSecret("private-repo", func(s *corev1.Secret) { delete(s.Labels, repocreds.OptInLabel) })
	h.g.Eventually(func() *workv1.ManifestWork { return h.carrier(uses) }, timeout, interval).Should(BeNil(), "the opt-in removed")
}

// Attack: a tenant's Application names the platform's private repository. The platform's
// credential, which has no project, does not reach the tenant's cluster, and the Application says
// which credential it lacks and why; a credential the platform scoped to the tenant's project does
// reach it.
func TestATenantNamingThePlatformsRepositoryDoesNotGetItsCredential(t *testing.T) {
	h := start(t, allNamespaces)
	platformCluster, tenantCluster := h.cluster(), h.cluster()
	team := h.tenant(tenantCluster)
	h.project("team", team.ns)
	h.credential("platform-repo", repocreds.Repository, privateRepo, "", "platform-secret", true)
	h.app("platform", platformCluster, fromRepo(privateRepo))
	team.app("steal", tenantCluster, onProject("team"), fromRepo(privateRepo))
	h.work("platform", platformCluster)
	team.work("steal", tenantCluster)

	h.g.Eventually(func() map[string]string { return copies(h.carrier(platformCluster)) }, timeout, interval).
		Should(Equal(map[string]string{"platform-repo": ""}))
	h.g.Eventually(func() string { return team.lacks("steal") }, timeout, interval).Should(Equal(
		"repository " + privateRepo + " would use the credential " + h.ns + "/platform-repo, which does not reach the cluster for it: " +
			"it has no project, and serves only the Applications of the hub Argo CD's namespace"))
	h.g.Expect(h.carrier(tenantCluster)).To(BeNil())
	h.g.Expect(h.lacks("platform")).To(BeEmpty())

	h.credential("team-repo", repocreds.Repository, privateRepo, "team", "team-secret", true)
	h.g.Eventually(func() map[string]string { return copies(h.carrier(tenantCluster)) }, timeout, interval).
		Should(Equal(map[string]string{"team-repo": ""}), "its own project's credential, and only that one")
	h.g.Eventually(func() string { return team.lacks("steal") }, timeout, interval).Should(BeEmpty())
}

// A Secret of the copy's name that the cluster holds and argocd-pull did not write is left alone:
// the copy stays read only (no value sent), and the Application says so. What the cluster reports
// beyond its carrier's copies widens nothing.
func TestACredentialWhoseNameTheClusterHoldsIsLeftAlone(t *testing.T) {
	h := start(t)
	cluster := h.cluster()
	h.credential("private-repo", repocreds.Repository, privateRepo, "", "first", true)
	h.credential("unused-repo", repocreds.Repository, "https://git.example/unused.git", "", "unused", true)
	h.app("uses", cluster, fromRepo(privateRepo))
	h.work("uses", cluster)
	h.g.Eventually(func() *workv1.ManifestWork { return h.carrier(cluster) }, timeout, interval).ShouldNot(BeNil())
	h.answerCarrier(cluster, []string{"private-repo"},
		secretStatus(h.ns, "unused-repo", "uid-x", h.ns+"/unused-repo"))
	h.g.Eventually(func() string { return h.lacks("uses") }, timeout, interval).Should(Equal(
		"repository " + privateRepo + " would use the credential " + h.ns + "/private-repo, which does not reach the cluster for it: " +
			"cluster " + cluster + " holds a Secret " + h.ns + "/private-repo that argocd-pull did not write, and leaves it alone"))
	h.g.Consistently(func() map[string]string { return copies(h.carrier(cluster)) }, 2*time.Second, interval).
		Should(Equal(map[string]string{"private-repo": ""}), "read only, and nothing the cluster did not need")
	raw, err := json.Marshal(h.getApp("uses").Object["status"])
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(string(raw)).NotTo(ContainSubstring("first"), "no value in the Application's status")

	// The cluster's Secret went: the copy is held.
	h.answerCarrier(cluster, nil)
	h.g.Eventually(func() map[string]string { return copies(h.carrier(cluster)) }, timeout, interval).
		Should(Equal(map[string]string{"private-repo": "first"}))
	h.g.Eventually(func() string { return h.lacks("uses") }, timeout, interval).Should(BeEmpty())
}

// A credential opted in but unusable (here a prefix that names no host: every repository's) is
// refused with a Warning event on its Secret, once, and goes nowhere; the others are delivered.
func TestABadCredentialIsRefusedAndNothingElseStops(t *testing.T) {
	h := start(t)
	cluster := h.cluster()
	h.credential("everything", repocreds.Template, "https://", "", "all", true)
	h.credential("no-such-project", repocreds.Repository, privateRepo, "nowhere", "lost", true)
	h.credential("private-repo", repocreds.Repository, privateRepo, "", "first", true)
	h.app("uses", cluster, fromRepo(privateRepo))
	h.work("uses", cluster)
	h.g.Eventually(func() map[string]string { return copies(h.carrier(cluster)) }, timeout, interval).
		Should(Equal(map[string]string{"private-repo": ""}))
	refusals := func(name string) []string {
		list := &corev1.EventList{}
		h.g.Expect(h.c.List(context.Background(), list, client.InNamespace(h.ns))).To(Succeed())
		var out []string
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == "Secret" && e.InvolvedObject.Name == name && e.Type == corev1.EventTypeWarning {
				out = append(out, e.Reason+": "+e.Message)
			}
		}
		return out
	}
	h.g.Eventually(func() []string { return refusals("everything") }, timeout, interval).Should(Equal([]string{
		ReasonCredentialRefused + `: The credential is delivered to no managed cluster: EveryRepository: url prefix "https://" names no host: it would be every repository's credential`}))
	h.g.Eventually(func() []string { return refusals("no-such-project") }, timeout, interval).Should(Equal([]string{
		ReasonCredentialRefused + `: The credential is delivered to no managed cluster: NoSuchProject: project "nowhere" does not exist`}))
}
