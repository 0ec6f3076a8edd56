package repocreds

import "testing"

// Argo CD's comparison of repository URLs: case, spaces, ".git", and git's scp-like SSH form.
func TestSameURLFollowsArgoCD(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"https://github.com/org/repo.git", "https://GitHub.com/org/repo", true},
		{" https://github.com/org/repo ", "https://github.com/org/repo.git", true},
		{"git@github.com:org/repo.git", "ssh://git@github.com/org/repo", true},
		{"git@github.com:org/repo", "https://github.com/org/repo", false},
		{"https://github.com/org/repo", "https://github.com/org/repo2", false},
		{"https://github.com/org/repo", "http://github.com/org/repo", false},
		{"oci://registry.example.com/charts/app", "OCI://registry.example.com/charts/app", true},
		{"", "", false},
	} {
		if got := SameURL(c.a, c.b); got != c.same {
			t.Errorf("SameURL(%q, %q) = %t, want %t", c.a, c.b, got, c.same)
		}
	}
}

func TestNormalizeURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://GitHub.com/Org/Repo.git": "https://github.com/org/repo",
		"git@github.com:org/repo.git":     "git@github.com/org/repo",
		"ssh://git@github.com:22/org/r":   "git@github.com:22/org/r",
		"https://github.com/org/":         "https://github.com/org/",
		"https://bad host/":               "",
	} {
		if got := NormalizeURL(in); got != want {
			t.Errorf("NormalizeURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// A repo-creds prefix that names no host would serve every repository.
func TestNamesAHost(t *testing.T) {
	for prefix, want := range map[string]bool{
		"https://github.com/org": true, "https://github.com": true, "git@github.com:": true,
		"": false, "https://": false, "https:": false, "git@": false, "ssh://git@": false, "oci://": false, "/": false,
	} {
		if got := namesAHost(prefix); got != want {
			t.Errorf("namesAHost(%q) = %t, want %t", prefix, got, want)
		}
	}
}
