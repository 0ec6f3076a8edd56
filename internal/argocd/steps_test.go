package argocd

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

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

// The index answers as the scan does, across ApplicationSets, their updates (a new
// resourceVersion), and objects without a resourceVersion (never indexed for long).
func TestStepIndexAnswersAsStepOf(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var x StepIndex
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
			wantStatus, wantSince := StepOf(set, app)
			status, since := x.Of(set, app)
			if status != wantStatus || !since.Equal(wantSince) {
				t.Fatalf("round %d, %s at %q, %s: Of = %q %v, StepOf = %q %v", i, uid, version, app, status, since, wantStatus, wantSince)
			}
		}
	}
}

// Reading a set again at the same resourceVersion does not scan it again: the index answers what
// the set said then (a resourceVersion names one content of an object).
func TestStepIndexReadsEachVersionOnce(t *testing.T) {
	var x StepIndex
	set := NewApplicationSet()
	set.SetUID("s")
	set.SetResourceVersion("7")
	_ = unstructured.SetNestedSlice(set.Object, []any{map[string]any{"application": "a", "status": StepPending}}, "status", "applicationStatus")
	if status, _ := x.Of(set, "a"); status != StepPending {
		t.Fatalf("Of = %q, want Pending", status)
	}
	_ = unstructured.SetNestedSlice(set.Object, []any{map[string]any{"application": "a", "status": "Healthy"}}, "status", "applicationStatus")
	if status, _ := x.Of(set, "a"); status != StepPending {
		t.Errorf("at the same resourceVersion, Of = %q: the set was scanned again", status)
	}
	set.SetResourceVersion("8")
	if status, _ := x.Of(set, "a"); status != "Healthy" {
		t.Errorf("at a new resourceVersion, Of = %q, want Healthy", status)
	}
}

// The index holds a bounded number of ApplicationSets however many it is shown.
func TestStepIndexIsBounded(t *testing.T) {
	var x StepIndex
	for i := range 5 * stepIndexSets {
		set := NewApplicationSet()
		set.SetUID(types.UID(strconv.Itoa(i)))
		set.SetResourceVersion("1")
		x.Of(set, "a")
		if x.Len() > stepIndexSets {
			t.Fatalf("after %d sets the index holds %d, more than %d", i+1, x.Len(), stepIndexSets)
		}
	}
}
