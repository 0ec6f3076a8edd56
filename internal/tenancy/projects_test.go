package tenancy

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/argocd-pull/argocd-pull/internal/argocd"
)

func TestProjectPermitsFollowsArgoCD(t *testing.T) {
	project := func(sourceNamespaces ...any) *unstructured.Unstructured {
		p := argocd.NewAppProject()
		p.SetName("p")
		p.Object["spec"] = map[string]any{"sourceNamespaces": sourceNamespaces}
		return p
	}
	for _, c := range []struct {
		name    string
		project *unstructured.Unstructured
		ns      string
		want    bool
	}{
		{"the Argo CD namespace uses any project", project(), "argocd", true},
		{"the Argo CD namespace, even without the project", nil, "argocd", true},
		{"no sourceNamespaces", project(), "team-a", false},
		{"a missing project", nil, "team-a", false},
		{"listed", project("team-a"), "team-a", true},
		{"another tenant", project("team-a"), "team-b", false},
		{"glob", project("team-*"), "team-b", true},
		{"glob does not match a prefix only", project("team-*"), "teams", false},
		{"glob alternatives", project("{team-a,team-b}"), "team-b", true},
		{"regular expression", project("/^team-[ab]$/"), "team-b", true},
		{"regular expression not matching", project("/^team-[ab]$/"), "team-c", false},
		{"a bad pattern permits nothing", project("[team"), "[team", false},
		{"star permits every namespace", project("*"), "kube-system", true},
	} {
		if got := ProjectPermits(c.project, c.ns, "argocd"); got != c.want {
			t.Errorf("%s: ProjectPermits(%v, %s) = %v, want %v", c.name, c.project, c.ns, got, c.want)
		}
	}
}
