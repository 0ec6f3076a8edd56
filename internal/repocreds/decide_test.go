package repocreds

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func key(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: "openshift-gitops", Name: name}
}

func app(name, cluster, project string, platform bool, urls ...string) Application {
	ns := "team-web"
	if platform {
		ns = "openshift-gitops"
	}
	return Application{Key: types.NamespacedName{Namespace: ns, Name: name}, Cluster: cluster, Project: project, Platform: platform, URLs: urls}
}

// Argo CD's precedence for one URL: the repository credential scoped to the Application's project,
// else one of that URL without a project; a repository without credentials of its own takes the
// repo-creds of the longest prefix; without a repository credential, the longest prefix serves.
func TestSelectFollowsArgoCDsPrecedence(t *testing.T) {
	unscoped := Credential{Key: key("b-unscoped"), Kind: Repository, URL: "https://git.example.com/org/app", HasCredentials: true}
	scoped := Credential{Key: key("c-team-a"), Kind: Repository, URL: "https://git.example.com/org/app.git", Project: "team-a", HasCredentials: true}
	bare := Credential{Key: key("a-bare"), Kind: Repository, URL: "https://git.example.com/org/bare"}
	short := Credential{Key: key("t-short"), Kind: Template, URL: "https://git.example.com/", HasCredentials: true}
	long := Credential{Key: key("t-long"), Kind: Template, URL: "https://git.example.com/org", HasCredentials: true}
	all := []Credential{short, scoped, unscoped, bare, long}
	name := func(c *Credential) string {
		if c == nil {
			return ""
		}
		return c.Key.Name
	}
	for _, c := range []struct {
		url, project         string
		repository, template string
	}{
		{"https://git.example.com/org/app", "team-a", "c-team-a", ""},
		{"https://GIT.example.com/org/app.git", "default", "b-unscoped", ""},
		{"https://git.example.com/org/bare", "default", "a-bare", "t-long"},
		{"https://git.example.com/org/other", "default", "", "t-long"},
		{"https://git.example.com/another/x", "default", "", "t-short"},
		{"https://elsewhere.example.com/org/app", "default", "", ""},
	} {
		r, tm := Select(all, c.url, c.project)
		if name(r) != c.repository || name(tm) != c.template {
			t.Errorf("Select(%s, %s) = %q, %q; want %q, %q", c.url, c.project, name(r), name(tm), c.repository, c.template)
		}
	}
	// Two unscoped credentials of one URL: Argo CD takes either; the same one always here.
	twin := unscoped
	twin.Key = key("a-twin")
	for range 5 {
		if r, _ := Select([]Credential{unscoped, twin}, unscoped.URL, "default"); name(r) != "a-twin" {
			t.Fatalf("Select of two equal credentials = %q, want the first by name", name(r))
		}
	}
}

// One copy per cluster, whatever the number of Applications that need it; a cluster whose
// Applications need none gets none.
func TestDecideGivesEachClusterWhatItsApplicationsUseOnce(t *testing.T) {
	platform := Credential{Key: key("platform"), Kind: Template, URL: "https://git.example.com/platform", HasCredentials: true}
	teamA := Credential{Key: key("team-a"), Kind: Repository, URL: "https://git.example.com/team-a/app", Project: "team-a", HasCredentials: true}
	var apps []Application
	for _, cluster := range []string{"cluster1", "cluster2"} {
		for _, n := range []string{"a", "b", "c"} {
			apps = append(apps, app(cluster+"-"+n, cluster, "default", true, "https://git.example.com/platform/"+n))
		}
	}
	apps = append(apps, app("team-a-app", "cluster2", "team-a", false, "https://git.example.com/team-a/app"),
		app("public", "cluster3", "default", true, "https://github.com/argoproj/argocd-example-apps.git"))
	d := Decide([]Credential{platform, teamA}, apps)
	want := map[string][]types.NamespacedName{
		"cluster1": {key("platform")},
		"cluster2": {key("platform"), key("team-a")},
	}
	if !reflect.DeepEqual(d.Deliver, want) {
		t.Errorf("Deliver = %v, want %v", d.Deliver, want)
	}
	if len(d.Lacking) != 0 {
		t.Errorf("Lacking = %v, want none", d.Lacking)
	}
	// Who uses each credential, for which URL: what lacks it if its copy cannot reach the cluster.
	if got := d.Users[key("team-a")]; !reflect.DeepEqual(got, []User{{App: apps[6].Key, URL: "https://git.example.com/team-a/app"}}) {
		t.Errorf("Users of team-a = %v", got)
	}
	if got := len(d.Users[key("platform")]); got != 6 {
		t.Errorf("%d users of platform, want 6", got)
	}
}

// The attack: a tenant's Application names the platform's private repository. The platform's
// credential (no project) does not reach the tenant's cluster, and the Application says which
// credential it lacks and why; another project's credential is not one it would use (Argo CD uses
// a project's repository credential for that project's Applications only), so it is not named.
func TestATenantNamingThePlatformsRepositoryGetsNoCredential(t *testing.T) {
	platform := Credential{Key: key("platform-repo"), Kind: Repository, URL: "https://git.example.com/platform/secrets", HasCredentials: true}
	prefix := Credential{Key: key("platform-prefix"), Kind: Template, URL: "https://git.example.com/platform", HasCredentials: true}
	teamB := Credential{Key: key("team-b-repo"), Kind: Repository, URL: "https://git.example.com/team-b/app", Project: "team-b", HasCredentials: true}
	// A repo-creds has no project to Argo CD; one given a project serves that project's
	// Applications only here.
	teamBPrefix := Credential{Key: key("team-b-prefix"), Kind: Template, URL: "https://git.example.com/team-b/charts", Project: "team-b", HasCredentials: true}
	tenant := app("steal", "tenant-cluster", "team-a", false,
		"https://git.example.com/platform/secrets", "https://git.example.com/platform/other", "https://git.example.com/team-b/app",
		"https://git.example.com/team-b/charts/x")
	d := Decide([]Credential{platform, prefix, teamB, teamBPrefix}, []Application{tenant})
	if len(d.Deliver) != 0 {
		t.Errorf("Deliver = %v, want nothing for the tenant's cluster", d.Deliver)
	}
	want := []Lack{
		{URL: "https://git.example.com/platform/secrets", Credential: key("platform-repo"), Why: "it has no project, and serves only the Applications of the hub Argo CD's namespace"},
		{URL: "https://git.example.com/platform/other", Credential: key("platform-prefix"), Why: "it has no project, and serves only the Applications of the hub Argo CD's namespace"},
		{URL: "https://git.example.com/team-b/charts/x", Credential: key("team-b-prefix"), Why: "it serves project team-b only"},
	}
	if got := d.Lacking[tenant.Key]; !reflect.DeepEqual(got, want) {
		t.Errorf("Lacking = %+v, want %+v", got, want)
	}
	// The same repository in a platform Application on that cluster brings the credential there.
	d = Decide([]Credential{platform, prefix, teamB, teamBPrefix}, []Application{tenant, app("platform", "tenant-cluster", "default", true, "https://git.example.com/platform/secrets")})
	if got := d.Deliver["tenant-cluster"]; !reflect.DeepEqual(got, []types.NamespacedName{key("platform-repo")}) {
		t.Errorf("Deliver with the platform's Application = %v", got)
	}
}

// A tenant's own project-scoped credential reaches its clusters; a scoped one never falls back to
// the platform's for another project.
func TestAProjectsCredentialServesThatProject(t *testing.T) {
	teamA := Credential{Key: key("team-a"), Kind: Repository, URL: "https://git.example.com/shared/app", Project: "team-a", HasCredentials: true}
	platform := Credential{Key: key("platform"), Kind: Repository, URL: "https://git.example.com/shared/app", HasCredentials: true}
	d := Decide([]Credential{teamA, platform}, []Application{
		app("a", "cluster1", "team-a", false, "https://git.example.com/shared/app"),
		app("p", "cluster2", "default", true, "https://git.example.com/shared/app"),
		app("pa", "cluster3", "team-a", true, "https://git.example.com/shared/app"),
	})
	want := map[string][]types.NamespacedName{"cluster1": {key("team-a")}, "cluster2": {key("platform")}, "cluster3": {key("team-a")}}
	if !reflect.DeepEqual(d.Deliver, want) || len(d.Lacking) != 0 {
		t.Errorf("Deliver = %v, Lacking = %v; want %v and none", d.Deliver, d.Lacking, want)
	}
}
