package benchresults

import (
	"encoding/json"
	"fmt"
	"os"
)

// The kinds of results file (Run.Kind).
const (
	KindScale    = "scale"
	KindRollouts = "rollouts"
)

// KindOf says what a results file holds, from what it holds: its kind when it names one, else
// (files written before it was recorded) rollouts when a result has a rollout's fields.
func KindOf(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var doc struct {
		Kind    string                       `json:"kind"`
		Results []map[string]json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if doc.Kind != "" {
		return doc.Kind, nil
	}
	for _, r := range doc.Results {
		if _, ok := r["syncSeconds"]; ok {
			return KindRollouts, nil
		}
	}
	return KindScale, nil
}

// RenderFile is the results.md of a results.json, of either kind.
func RenderFile(path string) (string, error) { return renderAs(path, RolloutReport.RolloutMarkdown) }

// tableFile is the table a bench-table marker shows for a results file, of either kind.
func tableFile(path string) (string, error) { return renderAs(path, RolloutReport.RolloutTable) }

// renderAs renders a results file by its kind: a rollouts file with rollouts, a scale file as its
// markdown.
func renderAs(path string, rollouts func(RolloutReport) string) (string, error) {
	kind, err := KindOf(path)
	if err != nil {
		return "", err
	}
	if kind == KindRollouts {
		r, err := LoadRollouts(path)
		return rollouts(r), err
	}
	r, err := Load(path)
	return r.Markdown(), err
}
