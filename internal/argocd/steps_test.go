package argocd

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// randomStepSet is an ApplicationSet of uid at version whose status lists up to 20 of the
// Applications a0..a24 (some twice, some without a time), each in a random step status.
func randomStepSet(r *rand.Rand, uid, version string) *unstructured.Unstructured {
	u := NewApplicationSet()
	u.SetUID(types.UID(uid))
	u.SetResourceVersion(version)
	statuses := []string{"Waiting", StepPending, StepProgressing, "Healthy"}
	var entries []any
	for range r.IntN(20) {
		entry := map[string]any{"application": fmt.Sprintf("a%d", r.IntN(25)), "status": statuses[r.IntN(len(statuses))], "step": "1"}
		if r.IntN(4) > 0 {
			entry["lastTransitionTime"] = fmt.Sprintf("2026-11-28T10:%02d:%02dZ", r.IntN(60), r.IntN(60))
		}
		entries = append(entries, entry)
	}
	if r.IntN(10) > 0 {
		_ = unstructured.SetNestedSlice(u.Object, entries, "status", "applicationStatus")
	}
	return u
}

// scanStep is what the index must answer: the last entry of app in appSet's status.
func scanStep(appSet *unstructured.Unstructured, app string) (status string, since time.Time) {
	eachStep(appSet, func(name, s string, entry map[string]any) {
		if name == app {
			at, _ := entry["lastTransitionTime"].(string)
			status = s
			since, _ = time.Parse(time.RFC3339, at)
		}
	})
	return status, since
}

// The index answers as a scan of the status does, across ApplicationSets, their updates (a new
// resourceVersion), and objects without a resourceVersion (never indexed for long).
func TestStepIndexAnswersAsAScan(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var x stepIndex
	versions := map[string]int{}
	for i := range 2000 {
		uid := fmt.Sprintf("set%d", r.IntN(5))
		version := ""
		if r.IntN(10) > 0 {
			versions[uid]++
			version = strconv.Itoa(versions[uid])
		}
		set := randomStepSet(r, uid, version)
		for j := range 25 {
			app := fmt.Sprintf("a%d", j)
			wantStatus, wantSince := scanStep(set, app)
			status, since := x.of(set, app)
			if status != wantStatus || !since.Equal(wantSince) {
				t.Fatalf("round %d, %s at %q, %s: the index says %q %v, the scan %q %v", i, uid, version, app, status, since, wantStatus, wantSince)
			}
		}
	}
}

// Reading a set again at the same resourceVersion does not scan it again: the index answers what
// the set said then (a resourceVersion names one content of an object).
func TestStepIndexReadsEachVersionOnce(t *testing.T) {
	var x stepIndex
	set := NewApplicationSet()
	set.SetUID("s")
	set.SetResourceVersion("7")
	_ = unstructured.SetNestedSlice(set.Object, []any{map[string]any{"application": "a", "status": StepPending}}, "status", "applicationStatus")
	if status, _ := x.of(set, "a"); status != StepPending {
		t.Fatalf("the index says %q, want Pending", status)
	}
	_ = unstructured.SetNestedSlice(set.Object, []any{map[string]any{"application": "a", "status": "Healthy"}}, "status", "applicationStatus")
	if status, _ := x.of(set, "a"); status != StepPending {
		t.Errorf("at the same resourceVersion, the index says %q: the set was scanned again", status)
	}
	set.SetResourceVersion("8")
	if status, _ := x.of(set, "a"); status != "Healthy" {
		t.Errorf("at a new resourceVersion, the index says %q, want Healthy", status)
	}
}

// The index holds a bounded number of ApplicationSets however many it is shown.
func TestStepIndexIsBounded(t *testing.T) {
	var x stepIndex
	for i := range 5 * stepIndexSets {
		set := NewApplicationSet()
		set.SetUID(types.UID(strconv.Itoa(i)))
		set.SetResourceVersion("1")
		x.of(set, "a")
		if x.len() > stepIndexSets {
			t.Fatalf("after %d sets the index holds %d, more than %d", i+1, x.len(), stepIndexSets)
		}
	}
}
