package appstatus

// Fuzz target of feedback -> observed status -> derived status -> hub Application status. `go
// test` runs its seeds (f.Add and testdata/fuzz) as ordinary tests; `make fuzz` runs it as a fuzzer.

import (
	"encoding/json"
	"testing"

	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

// maxStatusWrite is what the caps guarantee for the status argocd-pull writes (see caps.go).
const maxStatusWrite = 508 * 1024

// FuzzFeedbackToStatus: whatever a managed cluster reports, as Strings or raw JSON, the values
// copied to the hub are within their caps, the status written stays under 508 KiB, and the hub
// Application never reads Synced or Healthy for feedback about another source than the one it
// wants, or for a generation the cluster has not applied.
func FuzzFeedbackToStatus(f *testing.F) {
	f.Add("Healthy", "Synced", "sha-v2", "Succeeded", "2026-01-01T00:00:00Z", "done", `{"sync":{}}`, "v2", "v2", true, false)
	f.Add("Healthy", "Synced", "sha-v1", "", "", "", "", "v1", "v2", true, false)
	f.Add("Healthy", "Synced", "sha-v2", "", "", "", "", "v2", "v2", false, false)
	f.Add("Degraded", "OutOfSync", "", "Failed", "2026-01-01T00:00:00Z", "\x1b[2J\x00 one or more objects failed", `not json`, "v2", "v2", true, true)
	f.Add("<<<<", "Synced\n", "\xff\xfe", "Running", "now", "<script>", `{"sync":{"revision":"<<<"}}`, "", "v2", true, true)
	f.Add("", "", "", "", "", "", `null`, "", "", true, false)
	f.Fuzz(func(t *testing.T, health, sync, revision, phase, startedAt, message, operation, comparedRevision, wantedRevision string, applied, raw bool) {
		values := map[string]string{
			manifestwork.FeedbackHealth:            health,
			manifestwork.FeedbackSync:              sync,
			manifestwork.FeedbackRevision:          revision,
			manifestwork.FeedbackPhase:             phase,
			manifestwork.FeedbackStartedAt:         startedAt,
			manifestwork.FeedbackMessage:           message,
			manifestwork.FeedbackOperation:         operation,
			manifestwork.FeedbackSyncStarted:       message,
			manifestwork.FeedbackComparedRepoURL:   "https://git.example/repo",
			manifestwork.FeedbackComparedRevision:  comparedRevision,
			manifestwork.FeedbackResources:         operation,
			manifestwork.FeedbackHistoryIDs:        operation,
			manifestwork.FeedbackHistoryDeployedAt: message,
			manifestwork.FeedbackHistoryRevisions:  revision,
		}
		appliedGen := int64(0)
		if applied {
			appliedGen = 2
		}
		w := work(2, appliedGen, nil)
		var fv []workv1.FeedbackValue
		for k, v := range values {
			value := workv1.FieldValue{Type: workv1.String, String: ptr.To(v)}
			if raw {
				value = workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: ptr.To(v)}
			}
			fv = append(fv, workv1.FeedbackValue{Name: k, Value: value})
		}
		w.Status.ResourceStatus.Manifests[1].StatusFeedbacks.Values = fv

		obs := Observe(w)
		for name, c := range map[string]struct {
			value string
			limit int
		}{
			"health": {obs.Health, MaxWordLength}, "sync": {obs.Sync, MaxWordLength}, "phase": {obs.Phase, MaxWordLength},
			"startedAt": {obs.StartedAt, MaxTimeLength}, "revision": {obs.Revision, MaxRevisionLength},
			"message": {obs.Message, MaxMessageLength}, "syncStarted": {obs.Delivery.SyncStarted, MaxWordLength},
		} {
			if len(c.value) > c.limit {
				t.Fatalf("%s of %d bytes copied, over its cap %d", name, len(c.value), c.limit)
			}
		}

		wanted := &Source{RepoURL: "https://git.example/repo", TargetRevision: wantedRevision}
		st := Derive(obs, wanted)
		good := st.Sync == argocd.SyncSynced || st.Health == argocd.HealthHealthy
		if good && obs.ComparedTo != nil && *obs.ComparedTo != *wanted {
			t.Fatalf("%s/%s derived from feedback about %+v, the hub wants %+v", st.Sync, st.Health, *obs.ComparedTo, *wanted)
		}
		if good && !applied {
			t.Fatalf("%s/%s derived for a generation the cluster has not applied", st.Sync, st.Health)
		}

		updated, _ := WithStatus(argocd.NewApplication(), st)
		data, err := json.Marshal(updated.Object["status"])
		if err != nil {
			t.Fatalf("the status does not encode: %v", err)
		}
		if len(data) > maxStatusWrite {
			t.Fatalf("status of %d bytes written, over %d", len(data), maxStatusWrite)
		}
	})
}
