// Package searchtest is an OCM Search V2 stand-in for tests: it answers the GraphQL search
// argocd-pull sends, one answer per input, and records what it was asked. It does not index
// anything: each answer comes from the test's Answer function. The real Search also filters by
// the caller's RBAC and caps results; argocd-pull's reading of the answers is what is tested here.
package searchtest

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
)

// Key names an Application Search is asked about.
type Key struct{ Cluster, Namespace, Name string }

// Fake serves POST /searchapi/graphql.
type Fake struct {
	// Answer returns the Application's item (nil: Search knows none) and its related resources.
	Answer func(Key) (item map[string]any, related []map[string]any)

	mu       sync.Mutex
	requests int
	auth     []string
	asked    map[Key]bool
}

func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/searchapi/graphql" || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	var body struct {
		Query     string `json:"query"`
		Variables struct {
			Input []struct {
				Filters []struct {
					Property string   `json:"property"`
					Values   []string `json:"values"`
				} `json:"filters"`
			} `json:"input"`
		} `json:"variables"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || !strings.Contains(body.Query, "search(input: $input)") {
		http.Error(w, "bad query", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	f.requests++
	f.mu.Unlock()
	results := make([]map[string]any, 0, len(body.Variables.Input))
	for _, in := range body.Variables.Input {
		var key Key
		for _, fl := range in.Filters {
			if len(fl.Values) != 1 {
				continue
			}
			switch fl.Property {
			case "cluster":
				key.Cluster = fl.Values[0]
			case "namespace":
				key.Namespace = fl.Values[0]
			case "name":
				key.Name = fl.Values[0]
			}
		}
		f.mu.Lock()
		if f.asked == nil {
			f.asked = map[Key]bool{}
		}
		f.asked[key] = true
		f.mu.Unlock()
		result := map[string]any{"items": []any{}, "related": []any{}}
		if item, related := f.Answer(key); item != nil {
			result["items"] = []any{item}
			var kinds []string
			byKind := map[string][]any{}
			for _, rel := range related {
				kind, _ := rel["kind"].(string)
				if _, seen := byKind[kind]; !seen {
					kinds = append(kinds, kind)
				}
				byKind[kind] = append(byKind[kind], rel)
			}
			groups := make([]any, 0, len(kinds))
			for _, kind := range kinds {
				groups = append(groups, map[string]any{"kind": kind, "items": byKind[kind]})
			}
			result["related"] = groups
		}
		results = append(results, result)
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"data": map[string]any{"searchResult": results}})
}

// Requests is how many requests were served.
func (f *Fake) Requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests
}

// Auth is the Authorization header of each request.
func (f *Fake) Auth() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.auth...)
}

// Asked reports whether Search was asked about key.
func (f *Fake) Asked(key Key) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.asked[key]
}
