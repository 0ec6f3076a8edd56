package benchresults

import (
	"strings"
	"testing"
)

// The fleet's table gives the propagation and the direct create both timed to their last answer,
// once a run measured them; a file made before has no such row.
func TestTheFleetTableTimesBothSidesToTheirLastAnswer(t *testing.T) {
	const rowName = "both to their last answer: propagation / direct create"
	measured := Report{Results: []Result{{Clusters: 1000, ApplicationSets: 10, Applications: 10000,
		PropagationSeconds: 120, PropagationToLastAnswerSeconds: 150, DirectToLastAnswerPerSecond: 95.2, PropagationToLastAnswerRatio: 0.7}}}
	table := measured.Markdown()
	if !strings.Contains(table, "| "+rowName+" | 150.0 s / 95 works/s: **0.70** |") {
		t.Errorf("the row of a run that measured it is missing or wrong:\n%s", table)
	}
	before := Report{Results: []Result{{Clusters: 1000, ApplicationSets: 10, Applications: 10000, PropagationSeconds: 120}}}
	if table := before.Markdown(); strings.Contains(table, rowName) {
		t.Errorf("a file made before both sides were timed to their last answer has the row:\n%s", table)
	}
}
