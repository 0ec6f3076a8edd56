package manifestwork_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

func credentialCopy(name string, held bool) manifestwork.CredentialCopy {
	return manifestwork.CredentialCopy{
		Hub: types.NamespacedName{Namespace: "openshift-gitops", Name: name}, Namespace: "openshift-gitops", Held: held,
		Labels: map[string]string{"argocd.argoproj.io/secret-type": "repository"},
		Data:   map[string][]byte{"url": []byte("https://git.example/" + name), "password": []byte("s3cret-" + name)},
	}
}

// A held copy is applied with its data, by forced server-side apply; one the cluster has not
// answered about, or whose name it holds for something else, is only read: a bare reference
// without data or labels. Every copy asks for its hub-Secret annotation and uid, and nothing else.
func TestTheCarrierAppliesOnlyWhatItHolds(t *testing.T) {
	g := NewWithT(t)
	work, left, err := manifestwork.DesiredCredentials("cluster1", []manifestwork.CredentialCopy{credentialCopy("repo-b", false), credentialCopy("repo-a", true)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(left).To(BeEmpty())
	g.Expect(work.Namespace).To(Equal("cluster1"))
	g.Expect(work.Name).To(Equal(manifestwork.CredentialsWorkName))
	g.Expect(work.Labels).To(Equal(map[string]string{manifestwork.CredentialsLabel: "true"}), "not one Application's work")
	g.Expect(work.Spec.DeleteOption).To(BeNil(), "held copies go with the work; read ones are never the agent's")

	var manifests []map[string]any
	for _, m := range work.Spec.Workload.Manifests {
		var obj map[string]any
		g.Expect(json.Unmarshal(m.Raw, &obj)).To(Succeed())
		manifests = append(manifests, obj)
	}
	g.Expect(manifests).To(Equal([]map[string]any{
		{"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
			"metadata": map[string]any{"namespace": "openshift-gitops", "name": "repo-a",
				"labels":      map[string]any{"argocd.argoproj.io/secret-type": "repository"},
				"annotations": map[string]any{manifestwork.HubSecretAnnotation: "openshift-gitops/repo-a"}},
			"data": map[string]any{"url": "aHR0cHM6Ly9naXQuZXhhbXBsZS9yZXBvLWE=", "password": "czNjcmV0LXJlcG8tYQ=="}},
		{"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"namespace": "openshift-gitops", "name": "repo-b",
				"annotations": map[string]any{manifestwork.HubSecretAnnotation: "openshift-gitops/repo-b"}}},
	}))
	raw, err := json.Marshal(work)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(raw)).NotTo(ContainSubstring("czNjcmV0LXJlcG8tYg"), "a copy only read carries no data")

	g.Expect(work.Spec.ManifestConfigs).To(HaveLen(2))
	held, read := work.Spec.ManifestConfigs[0], work.Spec.ManifestConfigs[1]
	g.Expect(held.ResourceIdentifier).To(Equal(workv1.ResourceIdentifier{Resource: "secrets", Namespace: "openshift-gitops", Name: "repo-a"}))
	g.Expect(held.UpdateStrategy.Type).To(Equal(workv1.UpdateStrategyTypeServerSideApply))
	g.Expect(held.UpdateStrategy.ServerSideApply.Force).To(BeTrue())
	g.Expect(read.UpdateStrategy.Type).To(Equal(workv1.UpdateStrategyTypeReadOnly))
	for _, c := range work.Spec.ManifestConfigs {
		g.Expect(c.FeedbackRules).To(Equal([]workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{
			{Name: manifestwork.FeedbackHubSecret, Path: `.metadata.annotations.apps\.open-cluster-management\.io/hub-secret`},
			{Name: manifestwork.FeedbackManagedUID, Path: ".metadata.uid"},
		}}}), "the claim's two values, never the Secret's data")
	}
}

// One copy per name on the cluster (the webhook refuses two manifests of one object): two hub
// namespaces' Secrets of one name going to one cluster namespace, the first by hub namespace is
// carried; and the copies stay within MaxCredentialsBytes. What is left out is returned.
func TestTheCarrierIsBounded(t *testing.T) {
	g := NewWithT(t)
	other := credentialCopy("repo-a", true)
	other.Hub.Namespace = "argocd"
	work, left, err := manifestwork.DesiredCredentials("cluster1", []manifestwork.CredentialCopy{credentialCopy("repo-a", true), other})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(work.Spec.Workload.Manifests).To(HaveLen(1))
	g.Expect(string(work.Spec.Workload.Manifests[0].Raw)).To(ContainSubstring(`"argocd/repo-a"`))
	g.Expect(left).To(Equal([]manifestwork.CredentialCopy{credentialCopy("repo-a", true)}))

	var many []manifestwork.CredentialCopy
	for i := range 100 {
		c := credentialCopy(fmt.Sprintf("repo-%03d", i), true)
		c.Data["sshPrivateKey"] = []byte(strings.Repeat("k", 8<<10))
		many = append(many, c)
	}
	work, left, err = manifestwork.DesiredCredentials("cluster1", many)
	g.Expect(err).NotTo(HaveOccurred())
	size := 0
	for _, m := range work.Spec.Workload.Manifests {
		size += len(m.Raw)
	}
	g.Expect(size).To(BeNumerically("<=", manifestwork.MaxCredentialsBytes))
	g.Expect(len(work.Spec.Workload.Manifests) + len(left)).To(Equal(100))
	g.Expect(left).NotTo(BeEmpty())
	g.Expect(work.Spec.ManifestConfigs).To(HaveLen(len(work.Spec.Workload.Manifests)))
}

// secretReport is what the OCM work agent reports of a Secret the carrier names: absent, or there
// with its uid and the hub Secret its annotation names ("" for none).
func secretReport(name string, present bool, uid, hubSecret string) workv1.ManifestCondition {
	available := metav1.Condition{Type: workv1.ManifestAvailable, Status: metav1.ConditionTrue, Reason: "ResourceAvailable"}
	var values []workv1.FeedbackValue
	if present {
		values = append(values, workv1.FeedbackValue{Name: manifestwork.FeedbackManagedUID, Value: workv1.FieldValue{Type: workv1.String, String: ptr.To(uid)}})
		if hubSecret != "" {
			values = append(values, workv1.FeedbackValue{Name: manifestwork.FeedbackHubSecret, Value: workv1.FieldValue{Type: workv1.String, String: ptr.To(hubSecret)}})
		}
	} else {
		available = metav1.Condition{Type: workv1.ManifestAvailable, Status: metav1.ConditionFalse, Reason: "ResourceNotAvailable"}
	}
	return workv1.ManifestCondition{
		ResourceMeta:    workv1.ManifestResourceMeta{Version: "v1", Kind: "Secret", Resource: "secrets", Namespace: "openshift-gitops", Name: name},
		StatusFeedbacks: workv1.StatusFeedbackResult{Values: values},
		Conditions:      []metav1.Condition{{Type: workv1.ManifestApplied, Status: metav1.ConditionTrue, Reason: "Applied"}, available},
	}
}

// Whose each Secret the carrier names is, as the agent reports it: absent is free, argocd-pull's
// copy of that hub Secret is ours, anything else there is foreign. Free and ours are believed only
// from an answer about the carrier's current generation; foreign stays foreign until the agent
// says otherwise.
func TestCredentialClaims(t *testing.T) {
	g := NewWithT(t)
	work, _, err := manifestwork.DesiredCredentials("cluster1", []manifestwork.CredentialCopy{
		credentialCopy("free", false), credentialCopy("ours", false), credentialCopy("theirs", false), credentialCopy("copied-elsewhere", false), credentialCopy("unanswered", false)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(manifestwork.CredentialClaims(nil)).To(BeNil())
	g.Expect(manifestwork.CredentialClaims(work)).To(HaveKeyWithValue("openshift-gitops/free", manifestwork.ClaimPending), "not answered yet")

	work.Generation = 2
	work.Status.Conditions = []metav1.Condition{
		{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, ObservedGeneration: 2},
		{Type: workv1.WorkAvailable, Status: metav1.ConditionTrue, ObservedGeneration: 2},
	}
	work.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{
		secretReport("free", false, "", ""),
		secretReport("ours", true, "u1", "openshift-gitops/ours"),
		secretReport("theirs", true, "u2", ""),
		secretReport("copied-elsewhere", true, "u3", "argocd/copied-elsewhere"),
	}
	g.Expect(manifestwork.CredentialClaims(work)).To(Equal(map[string]manifestwork.Claim{
		"openshift-gitops/free":             manifestwork.ClaimFree,
		"openshift-gitops/ours":             manifestwork.ClaimOurs,
		"openshift-gitops/theirs":           manifestwork.ClaimForeign,
		"openshift-gitops/copied-elsewhere": manifestwork.ClaimForeign,
		"openshift-gitops/unanswered":       manifestwork.ClaimPending,
	}))

	stale := work.DeepCopy()
	stale.Generation = 3
	g.Expect(manifestwork.CredentialClaims(stale)).To(Equal(map[string]manifestwork.Claim{
		"openshift-gitops/free":             manifestwork.ClaimPending,
		"openshift-gitops/ours":             manifestwork.ClaimPending,
		"openshift-gitops/theirs":           manifestwork.ClaimForeign,
		"openshift-gitops/copied-elsewhere": manifestwork.ClaimForeign,
		"openshift-gitops/unanswered":       manifestwork.ClaimPending,
	}), "an answer about an older generation")

	// A copy held stays held, whatever the agent says and about whichever generation: it is the
	// agent's from then on (a rotation rewrites it; the answer about it comes later).
	rotated, _, err := manifestwork.DesiredCredentials("cluster1", []manifestwork.CredentialCopy{credentialCopy("ours", true), credentialCopy("free", false)})
	g.Expect(err).NotTo(HaveOccurred())
	rotated.Generation = 4
	rotated.Status = stale.Status
	g.Expect(manifestwork.CredentialClaims(rotated)).To(Equal(map[string]manifestwork.Claim{
		"openshift-gitops/ours": manifestwork.ClaimOurs,
		"openshift-gitops/free": manifestwork.ClaimPending,
	}))
}

// The carrier carries its spec's hash: the same copies give the same carrier, and a rotation (a
// new value) another.
func TestTheCarrierIsRewrittenOnlyWhenWhatItCarriesChanged(t *testing.T) {
	g := NewWithT(t)
	a, _, err := manifestwork.DesiredCredentials("cluster1", []manifestwork.CredentialCopy{credentialCopy("repo-a", true), credentialCopy("repo-b", false)})
	g.Expect(err).NotTo(HaveOccurred())
	b, _, err := manifestwork.DesiredCredentials("cluster1", []manifestwork.CredentialCopy{credentialCopy("repo-b", false), credentialCopy("repo-a", true)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(manifestwork.UpToDate(a, b)).To(BeTrue(), "the same copies in another order")
	rotated := credentialCopy("repo-a", true)
	rotated.Data["password"] = []byte("rotated")
	c, _, err := manifestwork.DesiredCredentials("cluster1", []manifestwork.CredentialCopy{rotated, credentialCopy("repo-b", false)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(manifestwork.UpToDate(a, c)).To(BeFalse(), "a rotation")
}

// A carrier is answered once the agent's Applied and Available conditions are about its current
// generation, whatever they say (a copy it could not apply is an answer too).
func TestCarrierAnswered(t *testing.T) {
	g := NewWithT(t)
	work, _, err := manifestwork.DesiredCredentials("cluster1", []manifestwork.CredentialCopy{credentialCopy("free", false)})
	g.Expect(err).NotTo(HaveOccurred())
	work.Generation = 2
	g.Expect(manifestwork.CarrierAnswered(work)).To(BeFalse(), "no condition yet")
	work.Status.Conditions = []metav1.Condition{
		{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, ObservedGeneration: 1},
		{Type: workv1.WorkAvailable, Status: metav1.ConditionTrue, ObservedGeneration: 1},
	}
	g.Expect(manifestwork.CarrierAnswered(work)).To(BeFalse(), "about the previous generation")
	work.Status.Conditions = []metav1.Condition{
		{Type: workv1.WorkApplied, Status: metav1.ConditionFalse, ObservedGeneration: 2},
		{Type: workv1.WorkAvailable, Status: metav1.ConditionFalse, ObservedGeneration: 2},
	}
	g.Expect(manifestwork.CarrierAnswered(work)).To(BeTrue(), "a failed apply of this generation")
}
