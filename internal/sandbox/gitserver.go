// The lab's Git repository over HTTP with basic authentication: a private repository, as a
// platform's usually is, for the credentials argocd-pull delivers (docs/install.md#private-repositories).

package sandbox

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/argocd-pull/argocd-pull/internal/assets"
)

// GitUser is the user of the lab's private Git server; its password is in GitPasswordFile,
// InitialGitPassword until a test or a user changes it (SetGitPassword).
const (
	GitUser            = "lab"
	InitialGitPassword = "argocd-pull-sandbox-git"
)

// gitHTTPBackend is Debian's (and most distributions') git http-backend.
const gitHTTPBackend = "/usr/lib/git-core/git-http-backend"

// GitPasswordFile is where the lab's private Git server reads its password, at each request: a
// new password takes effect at once.
func GitPasswordFile(dir string) string { return filepath.Join(dir, "git", "password") }

// GitHandler serves the repositories under root read only with git's smart HTTP protocol (git
// http-backend), to the GitUser with the password passwordFile holds, and refuses everyone else
// with 401, as a private Git host does.
func GitHandler(root, passwordFile string) http.Handler {
	backend := &cgi.Handler{Path: gitHTTPBackend, Root: "/", Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		password, err := os.ReadFile(passwordFile)
		user, given, ok := r.BasicAuth()
		if err != nil || !ok || user != GitUser ||
			subtle.ConstantTimeCompare([]byte(given), []byte(strings.TrimSpace(string(password)))) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="argocd-pull lab"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/git-receive-pack") || r.URL.Query().Get("service") == "git-receive-pack" {
			http.Error(w, "the lab's repository is read only over HTTP", http.StatusForbidden)
			return
		}
		backend.ServeHTTP(w, r)
	})
}

// ServeGit serves GitHandler on addr until ctx ends.
func ServeGit(ctx context.Context, addr, root, passwordFile string) error {
	if _, err := os.Stat(gitHTTPBackend); err != nil {
		return fmt.Errorf("the lab's Git server needs git http-backend (Debian's git package): %w", err)
	}
	srv := &http.Server{Addr: addr, Handler: GitHandler(root, passwordFile), ReadHeaderTimeout: 10 * time.Second}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// SetGitPassword changes the password of the lab's private Git server.
func (l *Lab) SetGitPassword(password string) error {
	return os.WriteFile(GitPasswordFile(l.Dir), []byte(password+"\n"), 0o600)
}

// GitPassword is the password of the lab's private Git server.
func (l *Lab) GitPassword() (string, error) {
	data, err := os.ReadFile(GitPasswordFile(l.Dir))
	return strings.TrimSpace(string(data)), err
}

// startGitServer starts the lab's private Git server (argocd-pull's hidden "sandbox git-server",
// from bin, the controller's binary), with a password of its own on its first start, and returns
// the repository's URL.
func startGitServer(dir, bin string, ports *portBook) (string, error) {
	addr, err := ports.addr("hub-git")
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(GitPasswordFile(dir)); errors.Is(err, os.ErrNotExist) {
		if err := os.WriteFile(GitPasswordFile(dir), []byte(InitialGitPassword+"\n"), 0o600); err != nil {
			return "", err
		}
	}
	if _, err := start(dir, "hub-git", bin, []string{"sandbox", "git-server", "--listen=" + addr,
		"--root=" + filepath.Join(dir, "git"), "--password-file=" + GitPasswordFile(dir)}); err != nil {
		return "", err
	}
	url := "http://" + addr + "/apps"
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url + "/info/refs?service=git-upload-pack")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusUnauthorized {
				return url, nil
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("the lab's Git server did not answer on %s (read %s): %v", addr, filepath.Join(dir, "logs", "hub-git.log"), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The documents' ApplicationSet on the lab's private repository (PrivateApplicationSet).
const (
	PrivateApplicationSetName = "guestbook-private-app-set"
	PrivateNamespace          = "guestbook-private"
	// PrivatePath is the directory of the private repository the ApplicationSet deploys.
	PrivatePath = "private"
)

// PrivateApplication is the name of the private ApplicationSet's Application for cluster.
func PrivateApplication(cluster string) string { return cluster + "-private-app" }

// PrivateApplicationSet is the documents' pull-model ApplicationSet with its repoURL pointed at the
// lab's private repository (PrivateRepoURL), its path at PrivatePath and its Applications named
// and deploying apart from the documents' own.
func (l *Lab) PrivateApplicationSet() (*unstructured.Unstructured, error) {
	root, err := assets.RepoRoot()
	if err != nil {
		return nil, err
	}
	set, err := documentsApplicationSet(root, l.PrivateRepoURL)
	if err != nil {
		return nil, err
	}
	set.SetName(PrivateApplicationSetName)
	if err := unstructured.SetNestedField(set.Object, PrivateApplication("{{name}}"), "spec", "template", "metadata", "name"); err != nil {
		return nil, err
	}
	if err := unstructured.SetNestedField(set.Object, PrivateNamespace, "spec", "template", "spec", "destination", "namespace"); err != nil {
		return nil, err
	}
	sources, _, _ := unstructured.NestedSlice(set.Object, "spec", "template", "spec", "sources")
	for _, s := range sources {
		if m, ok := s.(map[string]any); ok {
			m["path"] = PrivatePath
		}
	}
	return set, unstructured.SetNestedSlice(set.Object, sources, "spec", "template", "spec", "sources")
}
