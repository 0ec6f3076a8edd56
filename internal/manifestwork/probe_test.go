package manifestwork_test

import (
	"encoding/json"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

var (
	web   = manifestwork.ProbeEntry{Namespace: "argocd", Name: "web", Hub: types.NamespacedName{Namespace: "argocd", Name: "web"}}
	db    = manifestwork.ProbeEntry{Namespace: "argocd", Name: "db", Hub: types.NamespacedName{Namespace: "argocd", Name: "db"}}
	cache = manifestwork.ProbeEntry{Namespace: "team-a", Name: "cache", Hub: types.NamespacedName{Namespace: "team-a", Name: "cache"}}
)

// probeAt is the probe of entries as the apiserver holds it at generation.
func probeAt(t *testing.T, generation int64, entries ...manifestwork.ProbeEntry) *workv1.ManifestWork {
	t.Helper()
	p, err := manifestwork.DesiredProbe("cluster1", entries)
	if err != nil {
		t.Fatal(err)
	}
	p.Generation = generation
	return p
}

// The probe only reads: every entry a bare reference, read only, orphaned, with the claim's two
// feedback values and nothing else; no Application work's labels.
func TestTheProbeOnlyReads(t *testing.T) {
	g := NewWithT(t)
	p := probeAt(t, 1, web, cache)
	g.Expect(manifestwork.IsProbe(p)).To(BeTrue())
	g.Expect(p.Namespace).To(Equal("cluster1"))
	g.Expect(p.Labels).To(Equal(map[string]string{manifestwork.ProbeLabel: "true"}), "not one Application's work")
	g.Expect(p.Spec.ManifestConfigs).To(HaveLen(1))
	cfg := p.Spec.ManifestConfigs[0]
	g.Expect(cfg.UpdateStrategy.Type).To(Equal(workv1.UpdateStrategyTypeReadOnly))
	g.Expect(cfg.ResourceIdentifier).To(Equal(workv1.ResourceIdentifier{Group: "argoproj.io", Resource: "applications", Namespace: "*", Name: "*"}))
	g.Expect(cfg.FeedbackRules).To(HaveLen(1))
	g.Expect(cfg.FeedbackRules[0].JsonPaths).To(HaveLen(2))
	g.Expect(p.Spec.DeleteOption.PropagationPolicy).To(Equal(workv1.DeletePropagationPolicyTypeOrphan))
	var first map[string]any
	g.Expect(json.Unmarshal(p.Spec.Workload.Manifests[0].Raw, &first)).To(Succeed())
	g.Expect(first).To(Equal(map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"namespace": "argocd", "name": "web", "annotations": map[string]any{"apps.open-cluster-management.io/hub-application": "argocd/web"}}}))
	g.Expect(manifestwork.ProbeEntries(p)).To(Equal([]manifestwork.ProbeEntry{web, cache}))
	g.Expect(manifestwork.ProbeAsks(p, "team-a/cache")).To(BeTrue())
	g.Expect(manifestwork.ProbeAsks(p, "argocd/db")).To(BeFalse())
}

// One object is one entry (OCM's webhook refuses two manifests of the same object), and a
// tenant's thousand Applications for one cluster make a bounded probe.
func TestTheProbeIsBounded(t *testing.T) {
	g := NewWithT(t)
	other := web
	other.Hub = types.NamespacedName{Namespace: "team-b", Name: "web"}
	g.Expect(manifestwork.ProbeEntries(probeAt(t, 1, web, other, db))).To(Equal([]manifestwork.ProbeEntry{web, db}))
	var many []manifestwork.ProbeEntry
	for i := range 1000 {
		many = append(many, manifestwork.ProbeEntry{Namespace: "team-a", Name: fmt.Sprintf("app-%d", i), Hub: types.NamespacedName{Namespace: "team-a", Name: fmt.Sprintf("app-%d", i)}})
	}
	p := probeAt(t, 1, many...)
	g.Expect(manifestwork.ProbeEntries(p)).To(HaveLen(manifestwork.MaxProbeEntries))
	raw, _ := json.Marshal(p)
	g.Expect(len(raw)).To(BeNumerically("<", manifestwork.MaxManifestsSize/4))
}

func TestClaimIn(t *testing.T) {
	there := map[string]testenv.OnCluster{
		"argocd/web":   {UID: "u1", HubApplication: "argocd/web"}, // delivered by this hub before
		"team-a/cache": {UID: "u2"},                               // made there
	}
	answered := probeAt(t, 2, web, db, cache)
	testenv.AnswerProbe(answered, there)
	// The agent's answer about generation 1, before db was added: its entries are kept across
	// the spec change, and db's is from before.
	stale := answered.DeepCopy()
	stale.Generation = 3
	// The apply at generation 3 is reported, the status sync on it not yet.
	applied := answered.DeepCopy()
	applied.Generation = 3
	for i := range applied.Status.Conditions {
		if applied.Status.Conditions[i].Type == workv1.WorkApplied {
			applied.Status.Conditions[i].ObservedGeneration = 3
		}
	}
	otherHub := types.NamespacedName{Namespace: "team-b", Name: "web"}
	tests := []struct {
		name  string
		probe *workv1.ManifestWork
		entry manifestwork.ProbeEntry
		want  manifestwork.Claim
	}{
		{"no probe", nil, web, manifestwork.ClaimPending},
		{"not asked", probeAt(t, 1, db), web, manifestwork.ClaimPending},
		{"asked, not answered", probeAt(t, 1, web), web, manifestwork.ClaimPending},
		{"made for this hub Application", answered, web, manifestwork.ClaimOurs},
		{"absent", answered, db, manifestwork.ClaimFree},
		{"made there", answered, cache, manifestwork.ClaimForeign},
		{"made for another hub Application of the same name", answered, manifestwork.ProbeEntry{Namespace: "argocd", Name: "web", Hub: otherHub}, manifestwork.ClaimForeign},
		{"an answer about an older generation: free is not believed", stale, db, manifestwork.ClaimPending},
		{"applied at the generation, not read again yet", applied, db, manifestwork.ClaimPending},
		{"an answer about an older generation: ours is not believed", stale, web, manifestwork.ClaimPending},
		{"an answer about an older generation: foreign stays foreign", stale, cache, manifestwork.ClaimForeign},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(manifestwork.ClaimIn(tt.probe, tt.entry.Namespace, tt.entry.Name, tt.entry.Hub)).To(Equal(tt.want))
		})
	}
	asked := probeAt(t, 2, web, db, cache)
	NewWithT(t).Expect(manifestwork.ProbeAnswersChanged(asked, answered)).To(ConsistOf(web.Hub, db.Hub, cache.Hub), "the first answers")
	NewWithT(t).Expect(manifestwork.ProbeAnswersChanged(nil, answered)).To(ConsistOf(web.Hub, db.Hub, cache.Hub), "a probe first seen")
	NewWithT(t).Expect(manifestwork.ProbeAnswersChanged(answered, stale)).To(BeEmpty(), "no longer current: they wait, and the foreign one stands")
	NewWithT(t).Expect(manifestwork.ProbeAnswersChanged(stale, answered)).To(ConsistOf(web.Hub, db.Hub), "current again")
	NewWithT(t).Expect(manifestwork.ProbeAnswersChanged(answered, answered.DeepCopy())).To(BeEmpty())
	fewer := probeAt(t, 3, web, cache)
	NewWithT(t).Expect(manifestwork.ProbeDropped(answered, fewer)).To(ConsistOf(db.Hub), "an entry dropped")
	NewWithT(t).Expect(manifestwork.ProbeDropped(nil, fewer)).To(BeEmpty())
	NewWithT(t).Expect(manifestwork.ProbeDropped(answered, answered.DeepCopy())).To(BeEmpty(), "the same generation")
	// An Application that went keeps its old feedback (the agent leaves it): absent is absent.
	gone := answered.DeepCopy()
	for i := range gone.Status.ResourceStatus.Manifests {
		m := &gone.Status.ResourceStatus.Manifests[i]
		if m.ResourceMeta.Name == "cache" {
			m.Conditions[1] = metav1.Condition{Type: workv1.ManifestAvailable, Status: metav1.ConditionFalse, Reason: "ResourceNotAvailable"}
		}
	}
	NewWithT(t).Expect(manifestwork.ClaimIn(gone, "team-a", "cache", cache.Hub)).To(Equal(manifestwork.ClaimFree))
}
