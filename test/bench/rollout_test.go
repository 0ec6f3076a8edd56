package main

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestRolloutScenariosAreChosenByName(t *testing.T) {
	g := NewWithT(t)
	only, err := parseRolloutScenarios("concurrent, new-revision")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(only).To(Equal(map[string]bool{"concurrent": true, "new-revision": true}))

	_, err = parseRolloutScenarios("new-revision,concurent")
	g.Expect(err).To(MatchError(ContainSubstring(`"concurent" is none of new-revision, second-commit, failing-revision, no-rollingsync, concurrent`)))

	firstAlone, err := parseRolloutScenarios("")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(firstAlone).To(BeEmpty())
}

func TestTheConcurrentSetupSyncsItselfInTheStepsItWillRollIn(t *testing.T) {
	g := NewWithT(t)
	steps := func(set map[string]any) [][]any {
		var out [][]any
		strategy, _, _ := unstructured.NestedMap(set, "spec", "strategy")
		for _, step := range strategy["rollingSync"].(map[string]any)["steps"].([]any) {
			expr := step.(map[string]any)["matchExpressions"].([]any)[0].(map[string]any)
			g.Expect(expr["key"]).To(Equal(stepLabel))
			out = append(out, expr["values"].([]any))
		}
		return out
	}
	stepOf := func(set map[string]any) string {
		label, _, _ := unstructured.NestedString(set, "spec", "template", "metadata", "labels", stepLabel)
		return label
	}
	automated := func(set map[string]any) bool {
		_, ok, _ := unstructured.NestedMap(set, "spec", "template", "spec", "syncPolicy", "automated")
		return ok
	}

	rolling := rolloutAppSet("rollout01", "v1", 3, true, templatingGo).Object
	g.Expect(steps(rolling)).To(Equal([][]any{{"0"}, {"1"}, {"2"}}))
	g.Expect(automated(rolling)).To(BeFalse())

	setup := rolloutAppSet("rollout02", "v6", 3, false, templatingGo).Object
	g.Expect(setup["spec"]).NotTo(HaveKey("strategy"))
	g.Expect(automated(setup)).To(BeTrue())
	g.Expect(stepOf(setup)).To(Equal(stepOf(rolling)), "the setup labels each Application with the step it rolls in later")
	g.Expect(stepOf(rolloutAppSet("plain01", "v1", 0, false, templatingGo).Object)).To(BeEmpty())
}

func TestGrownCountsOnlyWhatGained(t *testing.T) {
	g := NewWithT(t)
	got := grown(map[string]float64{"PATCH": 10, "GET": 4}, map[string]float64{"PATCH": 25, "GET": 4, "PUT": 2})
	g.Expect(got).To(Equal(map[string]float64{"PATCH": 15, "PUT": 2}))
}

func TestAWaitThatMovesGoesOnPastItsStall(t *testing.T) {
	g := NewWithT(t)
	polls := 0
	moving := func() (bool, int, string) {
		polls++
		return polls == 15, polls, "moving"
	}
	// 15 polls, 100ms apart, outlast the stall: each one moves the deadline.
	g.Expect(waitForProgress(context.Background(), 500*time.Millisecond, "a moving count", "", moving)).To(Succeed())

	still := func() (bool, int, string) { return false, 3, "stuck at 3" }
	err := waitForProgress(context.Background(), 500*time.Millisecond, "a count that stopped", "log", still)
	g.Expect(err).To(MatchError(ContainSubstring("not within 500ms of its last progress (stuck at 3)")))
}

// With Argo CD's default templating, as the documents' examples: the cluster generator over the
// bench's clusters, {{name}}, and the step from the cluster's label (its cluster secret's).
func TestTheDefaultTemplatingTakesTheStepFromAClusterLabel(t *testing.T) {
	g := NewWithT(t)
	set := rolloutAppSet("rollout01", "v1", 10, true, templatingDefault).Object
	g.Expect(set["spec"]).NotTo(HaveKey("goTemplate"))
	name, _, _ := unstructured.NestedString(set, "spec", "template", "metadata", "name")
	g.Expect(name).To(Equal("{{name}}-rollout01"))
	step, _, _ := unstructured.NestedString(set, "spec", "template", "metadata", "labels", stepLabel)
	g.Expect(step).To(Equal("{{metadata.labels.rollout-step}}"))
	generators, _, _ := unstructured.NestedSlice(set, "spec", "generators")
	g.Expect(generators).To(HaveLen(1))
	g.Expect(generators[0]).To(HaveKey("clusters"))
	f := newFleet(12, 0)
	f.steps = 10
	g.Expect(f.clusterLabels(0)).To(HaveKeyWithValue(stepLabel, "0"), "cluster0001, the goTemplate's step 0")
	g.Expect(f.clusterLabels(10)).To(HaveKeyWithValue(stepLabel, "0"), "cluster0011")
	g.Expect(f.clusterLabels(11)).To(HaveKeyWithValue(stepLabel, "1"))
}
