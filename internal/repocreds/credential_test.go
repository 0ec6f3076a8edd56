package repocreds

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func secret(kind string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-gitops", Name: "repo-1",
		Labels: map[string]string{SecretTypeLabel: kind, OptInLabel: "true"}}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func projects(names ...string) func(string) bool {
	return func(p string) bool {
		for _, n := range names {
			if n == p {
				return true
			}
		}
		return false
	}
}

func TestParseReadsWhatTheDecisionsNeedOnly(t *testing.T) {
	c, err := Parse(secret("repository", map[string]string{"url": "https://git.example.com/org/app.git", "username": "u", "password": "p", "project": "team-a"}), projects("team-a"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Kind != Repository || c.URL != "https://git.example.com/org/app.git" || c.Project != "team-a" || !c.HasCredentials || c.Key.Name != "repo-1" {
		t.Errorf("Parse: %+v", c)
	}
	// A repository with only its url and type takes a repo-creds' credentials (Argo CD).
	c, err = Parse(secret("repository", map[string]string{"url": "https://git.example.com/org/app", "type": "git"}), projects())
	if err != nil || c.HasCredentials {
		t.Errorf("Parse of a repository without credentials: %+v, %v", c, err)
	}
	// stringData, as a kubectl apply of the documents' form writes it, counts as the apiserver merges it.
	s := secret("repo-creds", nil)
	s.StringData = map[string]string{"url": "https://git.example.com/org", "sshPrivateKey": "key"}
	if c, err = Parse(s, projects()); err != nil || c.Kind != Template || !c.HasCredentials {
		t.Errorf("Parse of stringData: %+v, %v", c, err)
	}
}

// Each bad credential is refused with its reason, and says what is wrong.
func TestParseRefusesABadCredential(t *testing.T) {
	for _, c := range []struct {
		name   string
		secret *corev1.Secret
		reason string
		says   string
	}{
		{"a cluster secret", secret("cluster", map[string]string{"url": "https://x"}), NotACredential, `"cluster"`},
		{"no url", secret("repository", map[string]string{"password": "p"}), NoURL, "no url"},
		{"an empty prefix", secret("repo-creds", map[string]string{"url": "https://", "password": "p"}), EveryRepository, "every repository"},
		{"a prefix of a user only", secret("repo-creds", map[string]string{"url": "git@", "sshPrivateKey": "k"}), EveryRepository, "names no host"},
		{"too large", secret("repository", map[string]string{"url": "https://x/y", "sshPrivateKey": strings.Repeat("k", MaxSecretBytes)}), TooLarge, "over the 32768"},
		{"a project that does not exist", secret("repository", map[string]string{"url": "https://x/y", "project": "gone"}), NoSuchProject, `"gone"`},
	} {
		_, err := Parse(c.secret, projects("team-a"))
		var refusal *Refusal
		if !errors.As(err, &refusal) || refusal.Reason != c.reason || !strings.Contains(refusal.Message, c.says) {
			t.Errorf("%s: %v, want %s saying %q", c.name, err, c.reason, c.says)
		}
	}
}
