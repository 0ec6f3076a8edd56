// Package repocreds decides which of the hub's repository credentials each managed cluster
// receives: Argo CD's repository and repo-creds Secrets that the platform opted in, for the
// Applications delivered there that need them, by Argo CD's own rules of which credential a
// repository URL uses, and only where the credential's scope admits the Application (its project,
// or the platform's own Argo CD namespaces). Pure: the controller gathers the Secrets and the
// delivered Applications, and writes what Decide returns.
package repocreds

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

const (
	// OptInLabel, "true" on a hub credential Secret, lets argocd-pull deliver it to the clusters
	// whose Applications need it.
	OptInLabel = "apps.open-cluster-management.io/pull-credentials"
	// SecretTypeLabel is Argo CD's label of its credential Secrets.
	SecretTypeLabel = "argocd.argoproj.io/secret-type"
	// MaxSecretBytes bounds one credential Secret (its keys and values): an SSH key, a TLS client
	// pair or a GitHub App key is a few KiB; one work carries all of a cluster's credentials.
	MaxSecretBytes = 32 << 10
)

// Kind is a credential's Argo CD kind.
type Kind string

const (
	// Repository is one repository's credential (secret-type repository): its url is the
	// repository's.
	Repository Kind = "repository"
	// Template is a URL prefix's credential (secret-type repo-creds), for each repository whose URL
	// starts with it and that has no credential of its own.
	Template Kind = "repo-creds"
)

// Credential is an opted-in hub credential Secret as the decisions see it: never its values.
type Credential struct {
	Key  types.NamespacedName
	Kind Kind
	// URL is the Secret's url, as written.
	URL string
	// Project is the Secret's project, "" for none: then the credential serves only the
	// platform's Applications (those in the hub Argo CD's namespace).
	Project string
	// HasCredentials says whether a Repository carries credentials of its own; one that does not
	// takes a Template's, as Argo CD does.
	HasCredentials bool
}

// Refusal is why a hub Secret opted in is not delivered anywhere.
type Refusal struct {
	Reason  string
	Message string
}

func (r *Refusal) Error() string { return r.Reason + ": " + r.Message }

// The reasons of a Refusal.
const (
	NotACredential  = "NotACredential"
	NoURL           = "NoURL"
	EveryRepository = "EveryRepository"
	TooLarge        = "TooLarge"
	NoSuchProject   = "NoSuchProject"
)

// credentialKeys are the Secret keys that make a repository carry credentials of its own (Argo
// CD's Repository.HasCredentials).
var credentialKeys = []string{"username", "password", "bearerToken", "sshPrivateKey", "tlsClientCertData",
	"githubAppPrivateKey", "azureServicePrincipalClientSecret"}

// Parse reads an opted-in hub Secret as a Credential, or refuses it: not one of Argo CD's
// credential kinds, no url, a repo-creds prefix that names no host (every repository's), over
// MaxSecretBytes, or scoped to a project that does not exist (projectExists).
func Parse(s *corev1.Secret, projectExists func(string) bool) (Credential, error) {
	c := Credential{Key: types.NamespacedName{Namespace: s.Namespace, Name: s.Name}}
	switch kind := s.Labels[SecretTypeLabel]; kind {
	case string(Repository), string(Template):
		c.Kind = Kind(kind)
	default:
		return c, &Refusal{NotACredential, fmt.Sprintf("label %s is %q, not %q or %q", SecretTypeLabel, kind, Repository, Template)}
	}
	size := 0
	for k, v := range s.Data {
		size += len(k) + len(v)
	}
	for k, v := range s.StringData {
		size += len(k) + len(v)
	}
	if size > MaxSecretBytes {
		return c, &Refusal{TooLarge, fmt.Sprintf("%d bytes, over the %d a credential may hold", size, MaxSecretBytes)}
	}
	c.URL, c.Project = value(s, "url"), value(s, "project")
	switch {
	case c.URL == "":
		return c, &Refusal{NoURL, "the Secret has no url"}
	case NormalizeURL(c.URL) == "" && c.Kind == Template:
		return c, &Refusal{NoURL, fmt.Sprintf("url %q does not parse", c.URL)}
	case c.Kind == Template && !namesAHost(c.URL):
		return c, &Refusal{EveryRepository, fmt.Sprintf("url prefix %q names no host: it would be every repository's credential", c.URL)}
	case c.Project != "" && !projectExists(c.Project):
		return c, &Refusal{NoSuchProject, fmt.Sprintf("project %q does not exist", c.Project)}
	}
	for _, k := range credentialKeys {
		if value(s, k) != "" {
			c.HasCredentials = true
		}
	}
	return c, nil
}

// value is a Secret key's value, from data or, as the apiserver would merge it, stringData.
func value(s *corev1.Secret, key string) string {
	if v, ok := s.StringData[key]; ok {
		return v
	}
	return string(s.Data[key])
}
