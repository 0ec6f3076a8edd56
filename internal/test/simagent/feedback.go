package simagent

import (
	"encoding/json"
	"fmt"
	"sync"

	"k8s.io/client-go/util/jsonpath"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

// MaxJSONRaw is the OCM work agent's default limit on one JsonRaw feedback value, in bytes: a
// longer value is left out of the feedback (and the agent's StatusFeedbackSynced condition says
// so).
const MaxJSONRaw = 1024

// Feedback is what the OCM work agent reports of obj under rules: for each JSONPaths rule, each
// path's value as the agent's status reader finds it (with the RawFeedbackJsonString feature
// gate on, as argocd-pull's install asks): nothing for a missing or null value, a string, an
// integer or a boolean as such, anything else (a list of several matches, a map) as JSON, left out
// when it is longer than MaxJSONRaw. Rules of the WellKnownStatus type are not read (argocd-pull
// asks for none).
func Feedback(obj map[string]any, rules []workv1.FeedbackRule) []workv1.FeedbackValue {
	var values []workv1.FeedbackValue
	for _, rule := range rules {
		if rule.Type != workv1.JSONPathsType {
			continue
		}
		for _, p := range rule.JsonPaths {
			if v, ok := valueAt(obj, p); ok {
				values = append(values, workv1.FeedbackValue{Name: p.Name, Value: v})
			}
		}
	}
	return values
}

// paths caches parsed JSONPaths by expression; a JSONPath keeps state while it runs, so each is
// used under its own lock.
var paths sync.Map // string -> *lockedPath

type lockedPath struct {
	sync.Mutex
	*jsonpath.JSONPath
	err error
}

func parsedPath(expr string) *lockedPath {
	if p, ok := paths.Load(expr); ok {
		return p.(*lockedPath)
	}
	j := jsonpath.New(expr).AllowMissingKeys(true)
	p := &lockedPath{JSONPath: j, err: j.Parse(fmt.Sprintf("{%s}", expr))}
	actual, _ := paths.LoadOrStore(expr, p)
	return actual.(*lockedPath)
}

func valueAt(obj map[string]any, p workv1.JsonPath) (workv1.FieldValue, bool) {
	lp := parsedPath(p.Path)
	if lp.err != nil {
		return workv1.FieldValue{}, false
	}
	lp.Lock()
	results, err := lp.FindResults(obj)
	lp.Unlock()
	if err != nil || len(results) == 0 || len(results[0]) == 0 {
		return workv1.FieldValue{}, false
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
		return workv1.FieldValue{}, false
	case string:
		return workv1.FieldValue{Type: workv1.String, String: ptr.To(v)}, true
	case int64:
		return workv1.FieldValue{Type: workv1.Integer, Integer: ptr.To(v)}, true
	case bool:
		return workv1.FieldValue{Type: workv1.Boolean, Boolean: ptr.To(v)}, true
	default:
		raw, err := json.Marshal(v)
		if err != nil || len(raw) > MaxJSONRaw {
			return workv1.FieldValue{}, false
		}
		return workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: ptr.To(string(raw))}, true
	}
}

// FeedbackOf is Feedback of the managed cluster's Application app for every path a work asks
// for (manifestwork.FeedbackRulePaths), by name, as appstatus reads it.
func FeedbackOf(app map[string]any) map[string]string {
	return manifestwork.FeedbackText(Feedback(app, []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: manifestwork.FeedbackRulePaths()}}))
}
