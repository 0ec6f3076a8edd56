package testenv

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/jsonpath"

	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

// MaxJSONRawLength is the OCM work agent's cap on a JsonRaw feedback value (its default, and the
// ManifestWork CRD's bound): a longer value is not reported.
const MaxJSONRawLength = 1024

// AgentFeedback is the status feedback the OCM work agent (v1.2, RawFeedbackJsonString on)
// reports of the managed cluster's Application app, by name, for every path a work asks for
// (manifestwork.FeedbackRulePaths), as its statusfeedback reader computes it: a path that matched
// one value reports that value, one that matched several reports them as a JSON list, nothing
// matched reports nothing, and a list or object over MaxJSONRawLength is not reported. Strings
// are as they are; lists and objects are JSON.
//
// A stand-in for the agent's reader, kinder than it in one way: the agent reports an integer or
// a boolean as such, here as its text (argocd-pull reads both alike).
func AgentFeedback(app *unstructured.Unstructured) (map[string]string, error) {
	values := map[string]string{}
	for _, p := range manifestwork.FeedbackRulePaths() {
		j := jsonpath.New(p.Name).AllowMissingKeys(true)
		if err := j.Parse("{" + p.Path + "}"); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", p.Path, err)
		}
		results, err := j.FindResults(app.UnstructuredContent())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.Name, err)
		}
		if len(results) == 0 || len(results[0]) == 0 {
			continue
		}
		var value any
		if len(results) == 1 && len(results[0]) == 1 {
			value = results[0][0].Interface()
		} else {
			list := make([]any, 0, len(results[0]))
			for _, r := range results[0] {
				list = append(list, r.Interface())
			}
			value = list
		}
		switch v := value.(type) {
		case nil:
		case string:
			values[p.Name] = v
		case int64, bool, float64:
			values[p.Name] = fmt.Sprint(v)
		default:
			raw, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			if len(raw) <= MaxJSONRawLength {
				values[p.Name] = string(raw)
			}
		}
	}
	return values, nil
}
