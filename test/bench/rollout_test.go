package main

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestRolloutScenariosAreChosenByName(t *testing.T) {
	g := NewWithT(t)
	only, err := parseRolloutScenarios("concurrent, new-revision")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(only).To(Equal(map[string]bool{"concurrent": true, "new-revision": true}))

	_, err = parseRolloutScenarios("new-revision,concurent")
	g.Expect(err).To(MatchError(ContainSubstring(`"concurent" is none of new-revision, second-commit, failing-revision, no-rollingsync, concurrent`)))
}

func TestTheSetupStepHoldsEveryStepsClusters(t *testing.T) {
	g := NewWithT(t)
	values := func(strategy map[string]any) [][]any {
		var out [][]any
		for _, step := range strategy["rollingSync"].(map[string]any)["steps"].([]any) {
			expr := step.(map[string]any)["matchExpressions"].([]any)[0].(map[string]any)
			g.Expect(expr["key"]).To(Equal(stepLabel))
			out = append(out, expr["values"].([]any))
		}
		return out
	}
	g.Expect(values(rollingSync(3, false))).To(Equal([][]any{{"0"}, {"1"}, {"2"}}))
	g.Expect(values(rollingSync(3, true))).To(Equal([][]any{{"0", "1", "2"}}))
}

func TestGrownCountsOnlyWhatGained(t *testing.T) {
	g := NewWithT(t)
	got := grown(map[string]float64{"PATCH": 10, "GET": 4}, map[string]float64{"PATCH": 25, "GET": 4, "PUT": 2})
	g.Expect(got).To(Equal(map[string]float64{"PATCH": 15, "PUT": 2}))
}
