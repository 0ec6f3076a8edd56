package doctor

// The decision of the managed-argocd-version check: pure functions from the managed cluster's
// Application CRD and its Argo CD image to a Result.

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/argocd-pull/argocd-pull/internal/argocd"
)

const (
	idArgoCDVersion    = "managed-argocd-version"
	titleArgoCDVersion = "Argo CD on the managed cluster reports what argocd-pull reads"
)

var jsonPathBrackets = regexp.MustCompile(`\[[^\]]*\]`)

// fieldPath turns a feedback JSONPath (".status.history[*].source.repoURL",
// `.status.operationState.operation.info[?(@.name=="x")].value`) into the fields it walks: list
// indexes and filters are dropped, list items are walked through. Paths outside the Application's
// schema (its metadata) give nil.
func fieldPath(jsonPath string) []string {
	p := jsonPathBrackets.ReplaceAllString(jsonPath, "")
	fields := strings.Split(strings.TrimPrefix(p, "."), ".")
	if len(fields) == 0 || fields[0] == "metadata" {
		return nil
	}
	return fields
}

// missingFields are the feedback paths whose fields the Application CRD's schema (its served
// version's openAPIV3Schema) does not declare: an apiserver prunes an undeclared field, so a
// managed cluster whose CRD lacks one never reports it. A schema that keeps unknown fields at some
// level declares whatever is below it.
func missingFields(schema map[string]any, jsonPaths []string) []string {
	var missing []string
	for _, jp := range jsonPaths {
		fields := fieldPath(jp)
		if fields == nil {
			continue
		}
		if !declares(schema, fields) {
			missing = append(missing, strings.Join(fields, "."))
		}
	}
	return missing
}

func declares(node map[string]any, fields []string) bool {
	for _, f := range fields {
		if items, ok := node["items"].(map[string]any); ok && node["type"] == "array" {
			node = items
		}
		if keep, _ := node["x-kubernetes-preserve-unknown-fields"].(bool); keep && node["properties"] == nil {
			return true
		}
		props, _ := node["properties"].(map[string]any)
		next, ok := props[f].(map[string]any)
		if !ok {
			return false
		}
		node = next
	}
	return true
}

var imageTag = regexp.MustCompile(`:(v\d+\.\d+\.\d+)(?:[-+@].*)?$`)

// imageVersion is the Argo CD release an image reference names by its tag
// ("quay.io/argoproj/argocd:v3.5.1"), "" when its tag is not a release (a digest alone, "latest").
func imageVersion(image string) string {
	if m := imageTag.FindStringSubmatch(image); m != nil {
		return m[1]
	}
	return ""
}

// decideArgoCDVersion warns when the managed cluster's Argo CD is older than the supported range,
// or its Application CRD lacks fields argocd-pull reads: the hub then shows what the cluster
// reports without them, and nothing in their place. version is "" when no workload named it.
func decideArgoCDVersion(cluster, version string, missing []string) Result {
	r := Result{ID: idArgoCDVersion, Title: titleArgoCDVersion, Subject: cluster}
	var problems []string
	if version != "" && !argocd.Supported(version) {
		problems = append(problems, fmt.Sprintf("Argo CD %s is outside the supported range (%s)", version, argocd.SupportedRange))
	}
	if len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("its Application CRD does not declare %s: the hub shows what the cluster reports, without these fields",
			strings.Join(missing, ", ")))
	}
	known := "Argo CD " + version
	if version == "" {
		known = "Argo CD of unknown version (no argocd-application-controller workload with a release tag)"
	}
	if len(problems) == 0 {
		r.Status, r.Message = StatusPass, known+"; its Application CRD declares every status field argocd-pull reads"
		return r
	}
	r.Status, r.Message = StatusWarn, strings.Join(problems, "; ")
	r.Fix = fmt.Sprintf("upgrade Argo CD on the managed cluster to a supported release (%s) and apply its CRDs (kubectl apply --server-side --force-conflicts -k https://github.com/argoproj/argo-cd/manifests/crds?ref=<release>)", argocd.SupportedRange)
	return r
}
