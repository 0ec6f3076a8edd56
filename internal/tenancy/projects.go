package tenancy

import (
	"strings"
	"time"

	"github.com/dlclark/regexp2"
	"github.com/gobwas/glob"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ProjectPermits applies Argo CD's own rule (AppProject.IsAppNamespacePermitted): an Application
// in the Argo CD namespace may use any AppProject; one in another namespace only an AppProject
// whose spec.sourceNamespaces matches that namespace. Entries are globs (gobwas/glob, as Argo CD),
// or regular expressions when wrapped in slashes ("/^team-.*$/").
func ProjectPermits(project *unstructured.Unstructured, appNamespace, argoCDNamespace string) bool {
	if appNamespace == argoCDNamespace {
		return true
	}
	if project == nil {
		return false
	}
	patterns, _, _ := unstructured.NestedStringSlice(project.Object, "spec", "sourceNamespaces")
	for _, p := range patterns {
		if matchPattern(p, appNamespace) {
			return true
		}
	}
	return false
}

// regexTimeout bounds one regular expression match: AppProjects are the platform's, but a
// backtracking pattern must never stall a reconcile.
const regexTimeout = 100 * time.Millisecond

func matchPattern(pattern, s string) bool {
	if len(pattern) > 1 && strings.HasPrefix(pattern, "/") && strings.HasSuffix(pattern, "/") {
		re, err := regexp2.Compile(pattern[1:len(pattern)-1], 0)
		if err != nil {
			return false
		}
		re.MatchTimeout = regexTimeout
		ok, err := re.MatchString(s)
		if err == nil && ok {
			return true
		}
		// Argo CD also tries the entry as a glob when the expression does not match.
	}
	return matchGlob(pattern, s)
}

// matchGlob matches s against a gobwas glob, as Argo CD does; a pattern that does not compile
// matches nothing.
func matchGlob(pattern, s string) bool {
	g, err := glob.Compile(pattern)
	return err == nil && g.Match(s)
}
