package doctor

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	"github.com/argocd-pull/argocd-pull/internal/repocreds"
)

// Each Application whose repository has a hub credential its cluster does not receive is named,
// with the credential: not opted in, or opted in without admitting it (a tenant's Application and
// a credential without a project); so is a Secret opted in that the controller refuses. A
// repository no hub credential matches is public, as far as the hub knows.
func TestDecideCredentials(t *testing.T) {
	g := NewWithT(t)
	cred := func(name, url, project string) repocreds.Credential {
		return repocreds.Credential{Key: types.NamespacedName{Namespace: "openshift-gitops", Name: name}, Kind: repocreds.Repository, URL: url, Project: project, HasCredentials: true}
	}
	app := func(ns, name, project string, urls ...string) repocreds.Application {
		return repocreds.Application{Key: types.NamespacedName{Namespace: ns, Name: name}, Cluster: "cluster1", Project: project, Platform: ns == "openshift-gitops", URLs: urls}
	}
	delivered := credentialFacts{
		apps:    []repocreds.Application{app("openshift-gitops", "web", "default", "https://git.example/web"), app("openshift-gitops", "public", "default", "https://github.com/x/y")},
		optedIn: []repocreds.Credential{cred("web", "https://git.example/web", "")},
	}
	r := decideCredentials(delivered)
	g.Expect(r.Status).To(Equal(StatusPass))
	g.Expect(r.Message).To(Equal("pull-model Applications on a hub credential: 1 of 2, each opted in and delivered to its cluster; 1 credential opted in"))

	r = decideCredentials(credentialFacts{
		apps: []repocreds.Application{
			app("openshift-gitops", "web", "default", "https://git.example/web"),
			app("team", "steal", "team", "https://git.example/platform"),
		},
		optedIn:    []repocreds.Credential{cred("platform", "https://git.example/platform", "")},
		notOptedIn: []repocreds.Credential{cred("web", "https://git.example/web.git", "")},
		refused:    []string{`everything (EveryRepository: url prefix "https://" names no host: it would be every repository's credential)`},
	})
	g.Expect(r.Status).To(Equal(StatusWarn))
	g.Expect(r.Fix).To(ContainSubstring("apps.open-cluster-management.io/pull-credentials=true"))
	g.Expect(r.Message).To(Equal("3 problems: " +
		"openshift-gitops/web: repository https://git.example/web uses the hub credential web, which is not opted in, " +
		"team/steal: repository https://git.example/platform would use the credential openshift-gitops/platform, which does not reach the cluster for it: it has no project, and serves only the Applications of the hub Argo CD's namespace, " +
		`the opted-in Secret everything (EveryRepository: url prefix "https://" names no host: it would be every repository's credential) is delivered nowhere`))
}
