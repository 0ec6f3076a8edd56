package repocreds

import (
	"net/url"
	"regexp"
	"strings"
)

// scpLike matches an SSH URL with a user, in its ssh:// form or git's scp-like one
// (git@github.com:org/repo): Argo CD's test of an SSH URL.
var scpLike = regexp.MustCompile(`^(ssh://)?([^/:]*?)@[^@]+$`)

// NormalizeURL is the form of a repository URL that Argo CD compares (its util/git
// NormalizeGitURL): lower case, trimmed, the scp-like SSH form written as a path, without a
// trailing ".git", re-encoded as a URL and without "ssh://". "" when it does not parse.
func NormalizeURL(repo string) string {
	repo = strings.ToLower(strings.TrimSpace(repo))
	if scpLike.MatchString(repo) && !strings.HasPrefix(repo, "ssh://") {
		// The first colon of git@host:path is a path separator, not a port.
		repo = "ssh://" + strings.Replace(repo, ":", "/", 1)
	}
	repo = strings.TrimSuffix(repo, ".git")
	u, err := url.Parse(repo)
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(u.String(), "ssh://")
}

// SameURL says whether two repository URLs name the same repository to Argo CD: their normal
// forms are equal (a URL that does not parse is compared as written), and neither is empty.
func SameURL(a, b string) bool {
	na, nb := normalOrAsWritten(a), normalOrAsWritten(b)
	return na != "" && nb != "" && na == nb
}

func normalOrAsWritten(repo string) string {
	if n := NormalizeURL(repo); n != "" {
		return n
	}
	return repo
}

// namesAHost says whether a URL prefix names at least a host: a repo-creds prefix that does not
// ("", "https://", "git@") is every repository's.
func namesAHost(prefix string) bool {
	p := strings.ToLower(strings.TrimSpace(prefix))
	if scpLike.MatchString(p) && !strings.HasPrefix(p, "ssh://") {
		p = "ssh://" + strings.Replace(p, ":", "/", 1)
	}
	u, err := url.Parse(p)
	return err == nil && strings.Trim(u.Hostname(), ".") != ""
}
