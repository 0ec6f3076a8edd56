package repocreds

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// Application is a hub Application delivered to a cluster, as the decisions see it.
type Application struct {
	Key types.NamespacedName
	// Cluster is the managed cluster it is delivered to.
	Cluster string
	Project string
	// Platform says whether it is in the hub Argo CD's namespace, as the propagation ladder reads
	// the platform's Applications (a tenant's are in the namespaces it was given).
	Platform bool
	// URLs are its sources' repoURLs.
	URLs []string
}

// Admits says whether credential c may reach a cluster for app, and why not: a credential scoped
// to a project serves that project's Applications; one without a project serves the platform's
// own only, so that a tenant cannot send the platform's credential to a cluster it controls by
// naming the platform's repository.
func Admits(c Credential, app Application) (bool, string) {
	switch {
	case c.Project != "" && c.Project != app.Project:
		return false, fmt.Sprintf("it serves project %s only", c.Project)
	case c.Project == "" && !app.Platform:
		return false, "it has no project, and serves only the Applications of the hub Argo CD's namespace"
	}
	return true, ""
}

// Select is the credential Argo CD uses for repoURL in an Application of project, among creds: the
// repository credential of that URL scoped to the project, else one of that URL with no project;
// when that one carries no credentials of its own (or there is none), the repo-creds whose URL is
// the longest prefix of repoURL as well. Where Argo CD would take either of two equal candidates,
// the first by namespace and name is taken. nil where there is none.
func Select(creds []Credential, repoURL, project string) (repository, template *Credential) {
	return selectSorted(sortedByKey(creds), repoURL, project)
}

func sortedByKey(creds []Credential) []Credential {
	return slices.SortedFunc(slices.Values(creds), func(a, b Credential) int { return compareKeys(a.Key, b.Key) })
}

// selectSorted is Select among creds sorted by their keys.
func selectSorted(sorted []Credential, repoURL, project string) (repository, template *Credential) {
	for i := range sorted {
		c := &sorted[i]
		if c.Kind != Repository || !SameURL(c.URL, repoURL) {
			continue
		}
		if c.Project == project {
			repository = c
			break
		}
		if c.Project == "" && repository == nil {
			repository = c
		}
	}
	if repository != nil && repository.HasCredentials {
		return repository, nil
	}
	normal := NormalizeURL(repoURL)
	longest := 0
	for i := range sorted {
		c := &sorted[i]
		prefix := NormalizeURL(c.URL)
		if c.Kind == Template && prefix != "" && strings.HasPrefix(normal, prefix) && len(prefix) > longest {
			template, longest = c, len(prefix)
		}
	}
	return repository, template
}

// Lack is a credential an Application's repository would use that may not reach its cluster.
type Lack struct {
	URL        string
	Credential types.NamespacedName
	Why        string
}

// Decision is what each cluster receives, and what each Application lacks.
type Decision struct {
	// Deliver holds, per cluster, the credentials its delivered Applications need, sorted.
	Deliver map[string][]types.NamespacedName
	// Lacking holds, per Application, the credentials its repositories would use that its
	// cluster does not receive for it.
	Lacking map[types.NamespacedName][]Lack
	// Users holds, per credential delivered, the Applications that use it and for which URL, in
	// the order of apps: what each lacks if its copy cannot reach the cluster (Carry).
	Users map[types.NamespacedName][]User
}

// User is an Application that uses a credential, for one of its sources' URLs.
type User struct {
	App types.NamespacedName
	URL string
}

// Decide gives each cluster the credentials its Applications use, each chosen as Argo CD would
// among those the Application admits (Admits); where a repository would use a credential the
// Application does not admit, and none it admits serves it, the Application lacks it.
func Decide(creds []Credential, apps []Application) Decision {
	d := Decision{Deliver: map[string][]types.NamespacedName{}, Lacking: map[types.NamespacedName][]Lack{}, Users: map[types.NamespacedName][]User{}}
	deliver := map[string]map[types.NamespacedName]bool{}
	creds = sortedByKey(creds) // once: sorted, every subset below is too
	for _, app := range apps {
		var admitted []Credential
		for _, c := range creds {
			if ok, _ := Admits(c, app); ok {
				admitted = append(admitted, c)
			}
		}
		for _, u := range app.URLs {
			repository, template := selectSorted(admitted, u, app.Project)
			for _, c := range []*Credential{repository, template} {
				if c != nil {
					if deliver[app.Cluster] == nil {
						deliver[app.Cluster] = map[types.NamespacedName]bool{}
					}
					deliver[app.Cluster][c.Key] = true
					d.Users[c.Key] = append(d.Users[c.Key], User{App: app.Key, URL: u})
				}
			}
			if (repository != nil && repository.HasCredentials) || template != nil {
				continue
			}
			// Served by nothing it admits: name what it would use with every credential.
			var wanted *Credential
			if anyRepository, anyTemplate := selectSorted(creds, u, app.Project); anyRepository != nil && anyRepository.HasCredentials {
				wanted = anyRepository
			} else {
				wanted = anyTemplate
			}
			if wanted != nil {
				_, why := Admits(*wanted, app)
				d.Lacking[app.Key] = append(d.Lacking[app.Key], Lack{URL: u, Credential: wanted.Key, Why: why})
			}
		}
	}
	for cluster, keys := range deliver {
		d.Deliver[cluster] = slices.SortedFunc(maps.Keys(keys), compareKeys)
	}
	return d
}

func compareKeys(a, b types.NamespacedName) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}
