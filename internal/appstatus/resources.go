package appstatus

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/util/validation"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

// The values Argo CD writes in a resource's sync and health status; any other is not Argo CD's.
var (
	resourceSyncStatuses   = []string{"Synced", "OutOfSync", "Unknown"}
	resourceHealthStatuses = []string{"Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown"}
)

// hubResources is the managed Application's status.resources (raw, JSON) as copied to the hub:
// Argo CD's fields only, each cut to its cap, as many as fit in MaxResourcesSize; nil when it
// reported none or a list that does not parse. An entry that names no Kubernetes object (see
// InvalidResource), or one named before, is dropped and counted: the hub's resource tree is built
// from this list (internal/resourcetree) and must name only what Kubernetes could hold. trimmed
// says what was cut, dropped or ignored: a warning on the hub Application only, since the report
// reads the raw list with caps of its own.
// ReportedResources is what Observe(work).Resources would be, read alone: the resources the
// cluster's Argo CD reports for the work's Application, validated and cut to their caps (nil when
// the work is not the hub's or the Application is not there).
func ReportedResources(work *workv1.ManifestWork) []any {
	if _, r := observeSync(work); r != nil {
		out, _ := hubResources(r.raw(manifestwork.FeedbackResources))
		return out
	}
	return nil
}

func hubResources(raw string) (out []any, trimmed []string) {
	if raw == "" {
		return nil, nil
	}
	name := manifestwork.FeedbackResources
	var list []map[string]any
	if err := json.Unmarshal([]byte(raw), &list); err != nil {
		return nil, []string{fmt.Sprintf("%s ignored: not a JSON list of objects (%d bytes)", name, len(raw))}
	}
	seen := make(map[string]bool, min(len(list), 1024))
	invalid, twice, firstReason := 0, 0, ""
	out, trimmed = cappedList(name, list, len(list), MaxResourcesSize, func(item map[string]any, cut *int) any {
		if reason := InvalidResource(item); reason != "" {
			if invalid++; invalid == 1 {
				firstReason = reason
			}
			return nil
		}
		id := fmt.Sprint(item["group"], "/", item["kind"], "/", item["namespace"], "/", item["name"])
		if seen[id] {
			twice++
			return nil
		}
		seen[id] = true
		res := map[string]any{}
		for _, k := range []string{"group", "version", "kind", "namespace", "name", "status"} {
			putString(res, k, item[k], MaxResourceNameLength, cut)
		}
		for _, k := range []string{"hook", "requiresPruning"} { // booleans, true or left out
			if b, ok := item[k].(bool); ok && b {
				res[k] = true
			}
		}
		if w, ok := item["syncWave"].(float64); ok && w == float64(int64(w)) {
			res["syncWave"] = int64(w)
		}
		if h, ok := item["health"].(map[string]any); ok {
			health := map[string]any{}
			putString(health, "status", h["status"], MaxWordLength, cut)
			putString(health, "message", h["message"], MaxResourceMessageLength, cut)
			if len(health) > 0 {
				res["health"] = health
			}
		}
		return res
	})
	if invalid > 0 {
		trimmed = append(trimmed, fmt.Sprintf("%s: %d invalid entries dropped (the first: %s)", name, invalid, firstReason))
	}
	if twice > 0 {
		trimmed = append(trimmed, fmt.Sprintf("%s: %d entries listed twice dropped", name, twice))
	}
	return out, trimmed
}

// InvalidResource says why a reported resource names no object Kubernetes could hold, or has a
// status Argo CD never writes; "" when it is valid. Kind and name are required; group, version
// and namespace may be empty (the core group, a cluster-scoped object).
func InvalidResource(item map[string]any) string {
	str := func(k string) (string, bool) {
		v, present := item[k]
		if !present || v == nil {
			return "", true
		}
		s, ok := v.(string)
		return s, ok
	}
	check := func(k string, required bool, valid func(string) []string) string {
		s, ok := str(k)
		switch {
		case !ok:
			return k + " is not a string"
		case s == "" && required:
			return k + " is missing"
		case s == "":
			return ""
		}
		if errs := valid(s); len(errs) > 0 {
			return fmt.Sprintf("%s %q: %s", k, Truncate(s, 64), errs[0])
		}
		return ""
	}
	for _, c := range []struct {
		key      string
		required bool
		valid    func(string) []string
	}{
		{"kind", true, kindName},
		{"name", true, objectName},
		{"namespace", false, validation.IsDNS1123Label},
		{"group", false, validation.IsDNS1123Subdomain},
		{"version", false, validation.IsDNS1123Label},
		{"status", false, oneOf(resourceSyncStatuses)},
	} {
		if reason := check(c.key, c.required, c.valid); reason != "" {
			return reason
		}
	}
	if h, present := item["health"]; present && h != nil {
		health, ok := h.(map[string]any)
		if !ok {
			return "health is not an object"
		}
		if s, ok := health["status"].(string); health["status"] != nil && (!ok || !slices.Contains(resourceHealthStatuses, s)) {
			return fmt.Sprintf("health status %q is not one of Argo CD's (%s)", Truncate(fmt.Sprint(health["status"]), 64), strings.Join(resourceHealthStatuses, ", "))
		}
	}
	return ""
}

// kindName checks a kind as Kubernetes names them: a letter, then letters and digits, at most 63.
func kindName(s string) []string {
	if len(s) > validation.DNS1123LabelMaxLength {
		return []string{validation.MaxLenError(validation.DNS1123LabelMaxLength)}
	}
	for i, r := range s {
		letterOrDigit := unicode.IsLetter(r) || (i > 0 && unicode.IsDigit(r))
		if r > unicode.MaxASCII || !letterOrDigit {
			return []string{"a kind is a letter followed by letters and digits"}
		}
	}
	return nil
}

// objectName checks an object's name as the apiserver checks the names of every kind: at most 253
// characters, printable, and a path segment (no "/" or "%", not "." or ".."). Most kinds are
// stricter (DNS subdomains), and some allow more (RBAC's "system:..." names).
func objectName(s string) []string {
	if len(s) > validation.DNS1123SubdomainMaxLength {
		return []string{validation.MaxLenError(validation.DNS1123SubdomainMaxLength)}
	}
	if strings.IndexFunc(s, func(r rune) bool { return r > unicode.MaxASCII || !unicode.IsPrint(r) || unicode.IsSpace(r) }) >= 0 {
		return []string{"a name holds printable ASCII characters only"}
	}
	return content.IsPathSegmentName(s)
}

func oneOf(values []string) func(string) []string {
	return func(s string) []string {
		if !slices.Contains(values, s) {
			return []string{"not one of " + strings.Join(values, ", ")}
		}
		return nil
	}
}
