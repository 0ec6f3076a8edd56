package manifestwork

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
)

// The claim's probe: one ManifestWork per cluster namespace that asks the managed cluster, for
// many Applications at once, what claim.go's pending work asks for one: is there an Application of
// that namespace and name, and whose. Its manifests are bare references (apiVersion, kind,
// namespace, name), all read only (OCM's ReadOnly: the agent creates, changes, owns and deletes
// nothing) with the claim's two feedback values. A hub Application with no work yet is an entry;
// once the probe's answer for it is Free or Ours, its work is created held (one write, where the
// pending work and its hold were two, each with the agent's answer); Foreign refuses it
// (ReasonManagedAppExists) until the answer changes, which the agent's polling of the entry
// reports. One write of the probe asks for every Application of the cluster that waits: a new
// fleet's ten Applications per cluster cost one probe write and one answer, not ten of each.
//
// A free name (or one this hub delivered before) is believed only from a probe whose Applied and
// Available conditions are at its current generation: the agent keeps an entry's old conditions
// and feedback across spec changes, and an entry's Available condition has no generation of its
// own; once the agent's status sync ran on the current generation, every entry's Available was
// read again (OCM v1.2.0, pkg/work/spoke). A foreign Application stays foreign through a probe
// write, until the agent says otherwise: the refusal does not come and go with other entries.
// Feedback is read only when Available is True: the agent leaves the feedback of an Application
// that went.

// ProbeName is the name of the probe in each cluster namespace; no Application's work has it (a
// work name ends in 16 hex digits, see WorkName).
const ProbeName = "argocd-pull-claims"

// ProbeLabel marks the probe. It is not labelled as argocd-pull's Application works are
// (api.ManagedByLabel), which every reader of theirs reads as one Application's.
const ProbeLabel = "apps.open-cluster-management.io/claim-probe"

// MaxProbeEntries bounds the entries of one probe: an entry's answer is about 1 KiB of the
// probe's status, and a tenant may create Applications for a cluster at will. Applications
// beyond it wait for a later probe write, which drops the entries delivered meanwhile.
const MaxProbeEntries = 200

// ProbeEntry is one Application the probe asks about: its namespace and name on the managed
// cluster, and the hub Application that would deliver it.
type ProbeEntry struct {
	Namespace, Name string
	Hub             types.NamespacedName
}

// Key is the entry's managed-cluster Application, as ManagedKey spells it.
func (e ProbeEntry) Key() string { return e.Namespace + "/" + e.Name }

// IsProbe reports whether work is a claim probe.
func IsProbe(work *workv1.ManifestWork) bool {
	return work != nil && work.Name == ProbeName && work.Labels[ProbeLabel] == "true"
}

// DesiredProbe is the probe of cluster asking about entries: the first of each managed-cluster
// Application (the webhook refuses two manifests of one object), at most MaxProbeEntries, in the
// order given.
func DesiredProbe(cluster string, entries []ProbeEntry) (*workv1.ManifestWork, error) {
	work := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Name: ProbeName, Namespace: cluster, Labels: map[string]string{ProbeLabel: "true"}},
		Spec: workv1.ManifestWorkSpec{
			ManifestConfigs: []workv1.ManifestConfigOption{{
				// One rule for every entry: OCM matches "*" in a namespace and a name.
				ResourceIdentifier: workv1.ResourceIdentifier{Group: argocd.Group, Resource: "applications", Namespace: "*", Name: "*"},
				UpdateStrategy:     &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeReadOnly},
				FeedbackRules:      []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: slices.Clone(claimPaths)}},
			}},
			// Read only, nothing is owned; orphaning says so once more.
			DeleteOption: &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeOrphan},
		},
	}
	seen := map[string]bool{}
	for _, e := range entries {
		if seen[e.Key()] {
			continue
		}
		if len(seen) == MaxProbeEntries {
			break
		}
		seen[e.Key()] = true
		raw, err := json.Marshal(map[string]any{
			"apiVersion": argocd.ApplicationGVK.GroupVersion().String(),
			"kind":       argocd.ApplicationGVK.Kind,
			"metadata": map[string]any{
				"namespace": e.Namespace, "name": e.Name,
				// Never applied: says which hub Application asks.
				"annotations": map[string]any{api.HubApplicationAnnotation: e.Hub.String()},
			},
		})
		if err != nil {
			return nil, fmt.Errorf("encoding the probe entry %s: %w", e.Key(), err)
		}
		work.Spec.Workload.Manifests = append(work.Spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
	}
	return work, nil
}

// manifestHead is what the claims read of a manifest they wrote: its kind, namespace, name and
// annotations.
type manifestHead struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Namespace, Name string
		Annotations     map[string]string
	} `json:"metadata"`
}

// readHead decodes m's head; false when m is not an object.
func readHead(m workv1.Manifest) (manifestHead, bool) {
	var h manifestHead
	return h, json.Unmarshal(m.Raw, &h) == nil
}

// ProbeEntries are the entries probe asks about, in its order; nil for a nil probe. A manifest
// that is not a probe entry is skipped.
func ProbeEntries(probe *workv1.ManifestWork) []ProbeEntry {
	if probe == nil {
		return nil
	}
	out := make([]ProbeEntry, 0, len(probe.Spec.Workload.Manifests))
	for _, m := range probe.Spec.Workload.Manifests {
		obj, ok := readHead(m)
		if !ok || obj.Kind != argocd.ApplicationGVK.Kind {
			continue
		}
		ns, name, ok := strings.Cut(obj.Metadata.Annotations[api.HubApplicationAnnotation], "/")
		if !ok {
			continue
		}
		out = append(out, ProbeEntry{Namespace: obj.Metadata.Namespace, Name: obj.Metadata.Name, Hub: types.NamespacedName{Namespace: ns, Name: name}})
	}
	return out
}

// ProbeAsks reports whether probe asks about the managed-cluster Application managed
// (ManagedKey), for whichever hub Application.
func ProbeAsks(probe *workv1.ManifestWork, managed string) bool {
	return slices.ContainsFunc(ProbeEntries(probe), func(e ProbeEntry) bool { return e.Key() == managed })
}

// ProbeCurrent reports whether the agent's answers in probe are about its current generation
// (see above).
func ProbeCurrent(probe *workv1.ManifestWork) bool { return answersCurrent(probe) }

// answersCurrent reports whether the agent's Applied and Available conditions of work are about
// its current generation: then every manifest's Available was read again since the last write.
func answersCurrent(work *workv1.ManifestWork) bool {
	if work == nil {
		return false
	}
	for _, t := range []string{workv1.WorkApplied, workv1.WorkAvailable} {
		c := meta.FindStatusCondition(work.Status.Conditions, t)
		if c == nil || c.ObservedGeneration != work.Generation {
			return false
		}
	}
	return true
}

// ClaimIn reads what probe answered about the managed-cluster Application namespace/name, for the
// hub Application hub: ClaimPending while it does not ask, or has no answer yet. An answer about
// an older generation of the probe (see above) is only believed when it refuses: an Application
// found there stays foreign until the agent says otherwise, and a name found free waits for the
// current answer.
func ClaimIn(probe *workv1.ManifestWork, namespace, name string, hub types.NamespacedName) Claim {
	if !ProbeAsks(probe, namespace+"/"+name) {
		return ClaimPending
	}
	return answered(answers(probe), ProbeCurrent(probe), namespace+"/"+name, hub)
}

// answers are the agent's reports in probe, by "<namespace>/<name>" of the Application.
func answers(probe *workv1.ManifestWork) map[string]*workv1.ManifestCondition {
	out := make(map[string]*workv1.ManifestCondition, len(probe.Status.ResourceStatus.Manifests))
	for i, m := range probe.Status.ResourceStatus.Manifests {
		if m.ResourceMeta.Group == argocd.Group && m.ResourceMeta.Kind == argocd.ApplicationGVK.Kind {
			out[m.ResourceMeta.Namespace+"/"+m.ResourceMeta.Name] = &probe.Status.ResourceStatus.Manifests[i]
		}
	}
	return out
}

// answered is the claim of an entry the probe asks about (ClaimIn), from its answers.
func answered(reports map[string]*workv1.ManifestCondition, current bool, key string, hub types.NamespacedName) Claim {
	m := reports[key]
	if m == nil {
		return ClaimPending
	}
	claim := claimOfManifest(m, FeedbackHubApplication, hub.String())
	if claim != ClaimForeign && !current {
		return ClaimPending
	}
	return claim
}

// ProbeAnswersChanged are the hub Applications with a new answer (ClaimIn) in probe, against old
// (nil: none before): those a change of it concerns. An answer that is only no longer current (a
// write of the probe the agent has not read yet) concerns nobody: the Application waits. Each
// probe is decoded once.
func ProbeAnswersChanged(old, probe *workv1.ManifestWork) []types.NamespacedName {
	before := map[ProbeEntry]Claim{}
	if old != nil {
		reports, current := answers(old), ProbeCurrent(old)
		for _, e := range ProbeEntries(old) {
			before[e] = answered(reports, current, e.Key(), e.Hub)
		}
	}
	var out []types.NamespacedName
	reports, current := answers(probe), ProbeCurrent(probe)
	for _, e := range ProbeEntries(probe) {
		was, asked := before[e]
		if !asked {
			was = ClaimPending
		}
		if now := answered(reports, current, e.Key(), e.Hub); now != ClaimPending && now != was {
			out = append(out, e.Hub)
		}
	}
	return out
}

// ProbeDropped are the hub Applications old asked about and probe no longer does: delivered, gone,
// or, with the probe full, dropped for another (each is woken, and asks again if it still waits).
// Each probe is decoded once: this runs on every change of a probe.
func ProbeDropped(old, probe *workv1.ManifestWork) []types.NamespacedName {
	if old == nil || old.Generation == probe.Generation {
		return nil
	}
	asked := map[string]bool{}
	for _, e := range ProbeEntries(probe) {
		asked[e.Key()] = true
	}
	var out []types.NamespacedName
	for _, e := range ProbeEntries(old) {
		if !asked[e.Key()] {
			out = append(out, e.Hub)
		}
	}
	return out
}
