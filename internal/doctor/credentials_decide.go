package doctor

import (
	"fmt"
	"slices"

	"github.com/argocd-pull/argocd-pull/internal/repocreds"
)

const (
	idCredentials    = "repository-credentials"
	titleCredentials = "The pull-model Applications' clusters receive the hub's credentials for their repositories"
	credentialsFix   = "label the hub Secret apps.open-cluster-management.io/pull-credentials=true, or give the Application's AppProject a credential of its own (docs/install.md#private-repositories)"
)

// credentialFacts is what the repository-credentials check saw.
type credentialFacts struct {
	apps []repocreds.Application
	// optedIn and notOptedIn are the hub's credentials that parse, by whether they are opted in;
	// refused are "name (why)" of those opted in that do not.
	optedIn, notOptedIn []repocreds.Credential
	refused             []string
}

// decideCredentials names each Application whose repository has a credential on the hub that its
// cluster does not receive: the credential the hub's Argo CD would use is not opted in, or the
// one opted in does not admit the Application (repocreds.Decide); and each opted-in Secret the
// controller refuses. Its cluster's Argo CD cannot fetch such a repository.
func decideCredentials(f credentialFacts) Result {
	r := Result{ID: idCredentials, Title: titleCredentials}
	var problems []string
	d := repocreds.Decide(f.optedIn, f.apps)
	users := 0
	all := slices.Concat(f.optedIn, f.notOptedIn)
	for _, app := range f.apps {
		uses := false
		for _, u := range app.URLs {
			repository, template := repocreds.Select(all, u, app.Project)
			used := template
			if repository != nil && repository.HasCredentials {
				used = repository
			}
			if used == nil {
				continue
			}
			uses = true
			if !slices.ContainsFunc(f.optedIn, func(c repocreds.Credential) bool { return c.Key == used.Key }) {
				problems = append(problems, fmt.Sprintf("%s: repository %s uses the hub credential %s, which is not opted in", app.Key, u, used.Key.Name))
			}
		}
		if uses {
			users++
		}
		if lacks := d.Lacking[app.Key]; len(lacks) > 0 {
			problems = append(problems, fmt.Sprintf("%s: %s", app.Key, repocreds.Message(lacks)))
		}
	}
	for _, refused := range f.refused {
		problems = append(problems, "the opted-in Secret "+refused+" is delivered nowhere")
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		r.Status, r.Fix = StatusWarn, credentialsFix
		r.Message = fmt.Sprintf("%d %s: %s", len(problems), plural(len(problems), "problem", "problems"), listNames(problems))
		return r
	}
	r.Status = StatusPass
	r.Message = fmt.Sprintf("pull-model Applications on a hub credential: %d of %d, each opted in and delivered to its cluster; %d %s opted in",
		users, len(f.apps), len(f.optedIn), plural(len(f.optedIn), "credential", "credentials"))
	return r
}
