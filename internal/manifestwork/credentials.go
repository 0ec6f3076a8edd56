package manifestwork

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
)

// The carrier of a cluster's repository credentials (docs/design-private-repositories.md): one
// ManifestWork in each cluster namespace, CredentialsWorkName, with a copy of each hub credential
// Secret that the Applications delivered there use (internal/repocreds decides which). A rotation
// is one write per cluster, however many Applications share the credential.
//
// A copy keeps its hub Secret's name, in the Argo CD namespace of the cluster, and is claimed as an
// Application is (claim.go): the agent's forced server-side apply would take over a Secret of that
// name that was there before, replace its data and delete it with the copy. So each copy is first
// asked about read only (OCM's ReadOnly: the agent creates, changes, owns and deletes nothing), its
// feedback the copy's HubSecretAnnotation and uid only, never a value of the Secret; it is held
// (forced server-side apply, deleted with the work or when it leaves it) once the agent reports it
// absent, or present as argocd-pull's copy of that hub Secret; anything else there is foreign, and
// stays read only.

// CredentialsWorkName is the name of the carrier in each cluster namespace; no Application's work
// has it (a work name ends in 16 hex digits, see WorkName), nor the claim probe.
const CredentialsWorkName = "argocd-pull-repository-credentials"

// CredentialsLabel marks the carrier. It is not labelled as argocd-pull's Application works are
// (api.ManagedByLabel), which every reader of theirs reads as one Application's.
const CredentialsLabel = "apps.open-cluster-management.io/repository-credentials"

// HubSecretAnnotation, on a copy, names the hub Secret it copies ("<namespace>/<name>").
const HubSecretAnnotation = "apps.open-cluster-management.io/hub-secret"

// FeedbackHubSecret is the carrier's feedback value of a copy's HubSecretAnnotation.
const FeedbackHubSecret = "hubSecret"

// MaxCredentialsBytes bounds the encoded copies of one carrier, below what OCM's webhook takes
// (MaxManifestsSize). A credential is a few KiB at most (repocreds.MaxSecretBytes bounds one at
// 32 KiB): hundreds of them fit.
const MaxCredentialsBytes = MaxManifestsSize * 4 / 5

var credentialPaths = []workv1.JsonPath{
	{Name: FeedbackHubSecret, Path: annotationPath(HubSecretAnnotation)},
	{Name: FeedbackManagedUID, Path: ".metadata.uid"},
}

// CredentialCopy is one hub credential Secret for a cluster.
type CredentialCopy struct {
	// Hub is the hub Secret.
	Hub types.NamespacedName
	// Namespace is the Argo CD namespace on the cluster that the copy goes to.
	Namespace string
	// Held: the cluster's Secret of that name was reported absent, or as this copy
	// (CredentialClaims): the copy is applied. Otherwise it is only asked about.
	Held bool
	// Type, Labels (Argo CD's secret-type) and Data are the hub Secret's: carried only when held.
	Type   string
	Labels map[string]string
	Data   map[string][]byte
}

// Key is the copy's namespace and name on the cluster.
func (c CredentialCopy) Key() string { return c.Namespace + "/" + c.Hub.Name }

// DesiredCredentials is the carrier of cluster for copies: in the order of their keys on the
// cluster (then of their hub Secrets), the first copy of each key (the webhook refuses two
// manifests of one object), within MaxCredentialsBytes. Those it leaves out are returned, for the
// Applications that need them to say so.
func DesiredCredentials(cluster string, copies []CredentialCopy) (*workv1.ManifestWork, []CredentialCopy, error) {
	work := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Name: CredentialsWorkName, Namespace: cluster,
			Labels: map[string]string{CredentialsLabel: "true"}, Annotations: map[string]string{}},
	}
	copies = slices.Clone(copies)
	slices.SortStableFunc(copies, func(a, b CredentialCopy) int {
		return cmp.Or(cmp.Compare(a.Key(), b.Key()), cmp.Compare(a.Hub.String(), b.Hub.String()))
	})
	var left []CredentialCopy
	seen, size := map[string]bool{}, 0
	for _, c := range copies {
		if seen[c.Key()] {
			left = append(left, c)
			continue
		}
		metadata := map[string]any{
			"namespace": c.Namespace, "name": c.Hub.Name,
			"annotations": map[string]any{HubSecretAnnotation: c.Hub.String()},
		}
		secret := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": metadata}
		strategy := &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeReadOnly}
		if c.Held {
			if len(c.Labels) > 0 {
				metadata["labels"] = c.Labels
			}
			secret["type"] = cmp.Or(c.Type, "Opaque")
			secret["data"] = c.Data
			strategy = serverSideApply()
		}
		raw, err := json.Marshal(secret)
		if err != nil {
			return nil, nil, fmt.Errorf("encoding the copy of %s: %w", c.Hub, err)
		}
		if size+len(raw) > MaxCredentialsBytes {
			left = append(left, c)
			continue
		}
		seen[c.Key()], size = true, size+len(raw)
		work.Spec.Workload.Manifests = append(work.Spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
		work.Spec.ManifestConfigs = append(work.Spec.ManifestConfigs, workv1.ManifestConfigOption{
			ResourceIdentifier: workv1.ResourceIdentifier{Resource: "secrets", Namespace: c.Namespace, Name: c.Hub.Name},
			UpdateStrategy:     strategy,
			FeedbackRules:      []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: slices.Clone(credentialPaths)}},
		})
	}
	// The spec's hash (UpToDate): a carrier is rewritten only when what it carries changed.
	if _, err := Rehash(work); err != nil {
		return nil, nil, err
	}
	return work, left, nil
}

// CarrierAnswered is true when the agent has applied, or tried to apply, the carrier's current
// generation: its Applied and Available conditions are about it, whatever they say (as the
// claims read it).
func CarrierAnswered(carrier *workv1.ManifestWork) bool { return answersCurrent(carrier) }

// CredentialClaims reads whose each Secret the carrier names is on the cluster, by its
// "<namespace>/<name>" there, for the hub Secret its manifest copies: a copy held is ours (as
// ClaimOf reads a held work's Application: the agent owns it from then on, and a rotation must not
// send it back to read only while the agent answers); one only read is ClaimPending while the
// agent has not answered about the carrier's current generation, except a foreign one, which stays
// foreign until the agent says otherwise (as the claim probe's answers, probe.go). A nil carrier
// claims nothing.
func CredentialClaims(carrier *workv1.ManifestWork) map[string]Claim {
	if carrier == nil {
		return nil
	}
	reports := map[string]*workv1.ManifestCondition{}
	for i, m := range carrier.Status.ResourceStatus.Manifests {
		if m.ResourceMeta.Group == "" && m.ResourceMeta.Resource == "secrets" {
			reports[m.ResourceMeta.Namespace+"/"+m.ResourceMeta.Name] = &carrier.Status.ResourceStatus.Manifests[i]
		}
	}
	held := map[string]bool{}
	for _, cfg := range carrier.Spec.ManifestConfigs {
		if cfg.ResourceIdentifier.Group == "" && cfg.ResourceIdentifier.Resource == "secrets" &&
			cfg.UpdateStrategy != nil && cfg.UpdateStrategy.Type == workv1.UpdateStrategyTypeServerSideApply {
			held[cfg.ResourceIdentifier.Namespace+"/"+cfg.ResourceIdentifier.Name] = true
		}
	}
	current := answersCurrent(carrier)
	out := map[string]Claim{}
	for _, m := range carrier.Spec.Workload.Manifests {
		obj, ok := readHead(m)
		if !ok || obj.Kind != "Secret" {
			continue
		}
		key := obj.Metadata.Namespace + "/" + obj.Metadata.Name
		if held[key] {
			out[key] = ClaimOurs
			continue
		}
		claim := ClaimPending
		if r := reports[key]; r != nil {
			claim = claimOfManifest(r, FeedbackHubSecret, obj.Metadata.Annotations[HubSecretAnnotation])
		}
		if claim != ClaimForeign && !current {
			claim = ClaimPending
		}
		out[key] = claim
	}
	return out
}
