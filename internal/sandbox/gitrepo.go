// The lab's Git repository (the sample app, the commits tests make) and the documents'
// ApplicationSet that points at it.

package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/argocd-pull/argocd-pull/internal/assets"
)

// sampleApp is what the local Git repository holds at path guestbook, the documents'
// ApplicationSet's: a ConfigMap-only app, Healthy on any cluster, with or without a node.
const sampleApp = `apiVersion: v1
kind: ConfigMap
metadata:
  name: guestbook-ui
data:
  greeting: hello from the pull model
`

// webApp is what path WebAppPath holds, the hardened ApplicationSet's (views.go): the sample app's
// ConfigMap and a Deployment, whose Pod runs on the cluster's node (node.go) from the lab's own
// image, so that its logs show in the hub's Argo CD.
const webApp = sampleApp + `---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: guestbook-ui
spec:
  replicas: 1
  selector:
    matchLabels: {app: guestbook-ui}
  template:
    metadata:
      labels: {app: guestbook-ui}
    spec:
      terminationGracePeriodSeconds: 5
      containers:
      - name: guestbook-ui
        image: registry.invalid/guestbook-ui:1
        ports:
        - containerPort: 8080
`

// WebAppPath is the path of webApp in the lab's Git repository.
const WebAppPath = "guestbook-web"

// initGitRepo makes the local Git repository the ApplicationSet points at, with the sample app at
// path guestbook and webApp at WebAppPath on branch main, and returns its file:// URL.
func initGitRepo(dir string) (string, error) {
	repo := filepath.Join(dir, "git", "apps")
	if _, err := os.Stat(filepath.Join(repo, ".git")); err == nil {
		return "file://" + repo, nil // a restarted lab keeps its repository and its commits
	}
	for path, data := range map[string]string{"guestbook/guestbook-ui.yaml": sampleApp, WebAppPath + "/guestbook-ui.yaml": webApp} {
		if err := os.MkdirAll(filepath.Join(repo, filepath.Dir(path)), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(repo, path), []byte(data), 0o644); err != nil {
			return "", err
		}
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"-c", "user.name=argocd-pull sandbox", "-c", "user.email=sandbox@argocd-pull.invalid", "commit", "-q", "--allow-empty", "-m", "guestbook"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	return "file://" + repo, nil
}

// Commit writes the sample app's manifest with a new greeting to the lab's Git repository and
// returns the new commit's SHA.
func (l *Lab) Commit(greeting string) (string, error) {
	manifest := strings.Replace(sampleApp, "hello from the pull model", greeting, 1)
	return l.CommitFiles(greeting, map[string]string{"guestbook/guestbook-ui.yaml": manifest})
}

// AddManifest adds a manifest file to the sample app and commits it; it returns the new SHA.
func (l *Lab) AddManifest(name, manifest string) (string, error) {
	return l.CommitFiles("add "+name, map[string]string{"guestbook/" + name: manifest})
}

// CommitFiles writes files (paths relative to the repository's root; an empty content removes the
// file) to the lab's Git repository, commits them and returns the commit's SHA. When nothing
// changed, nothing is committed and the SHA is HEAD's.
func (l *Lab) CommitFiles(message string, files map[string]string) (string, error) {
	repo := filepath.Join(l.Dir, "git", "apps")
	for name, content := range files {
		path := filepath.Join(repo, filepath.FromSlash(name))
		if content == "" {
			if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
				return "", err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	changes, err := exec.Command("git", "-C", repo, "status", "--porcelain").Output()
	if err != nil {
		return "", fmt.Errorf("git status: %w", err)
	}
	if len(strings.TrimSpace(string(changes))) == 0 {
		return gitHead(l.Dir)
	}
	for _, args := range [][]string{
		{"add", "-A"},
		{"-c", "user.name=argocd-pull sandbox", "-c", "user.email=sandbox@argocd-pull.invalid", "commit", "-q", "-m", message},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	return gitHead(l.Dir)
}

// Head is the SHA of the lab repository's main branch.
func (l *Lab) Head() (string, error) { return gitHead(l.Dir) }

// ApplyDocumentsApplicationSet creates the documents' ApplicationSet again (after a test deleted it).
func (l *Lab) ApplyDocumentsApplicationSet(ctx context.Context) error {
	root, err := assets.RepoRoot()
	if err != nil {
		return err
	}
	hub, err := l.Hub.Client()
	if err != nil {
		return err
	}
	_, err = applyDocumentsApplicationSet(ctx, hub, root, l.RepoURL)
	return err
}

func gitHead(dir string) (string, error) {
	out, err := exec.Command("git", "-C", filepath.Join(dir, "git", "apps"), "rev-parse", "HEAD").Output()
	if err != nil {
		return "", fmt.Errorf("reading the lab repository's HEAD: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// applyDocumentsApplicationSet creates the documents' pull-model ApplicationSet with only its
// repoURL pointed at the local repository.
func applyDocumentsApplicationSet(ctx context.Context, c client.Client, root, repoURL string) (*unstructured.Unstructured, error) {
	appSet, err := documentsApplicationSet(root, repoURL)
	if err != nil {
		return nil, err
	}
	if err := c.Create(ctx, appSet); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating the ApplicationSet: %w", err)
	}
	return appSet, nil
}

// documentsApplicationSet is the documents' pull-model ApplicationSet with only its repoURL pointed
// at the local repository.
func documentsApplicationSet(root, repoURL string) (*unstructured.Unstructured, error) {
	data, err := os.ReadFile(filepath.Join(root, "test", "testdata", "docs", "pull-applicationset.yaml"))
	if err != nil {
		return nil, err
	}
	appSet := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &appSet.Object); err != nil {
		return nil, fmt.Errorf("reading the documents' ApplicationSet: %w", err)
	}
	if err := setEachSource(appSet, "repoURL", repoURL); err != nil {
		return nil, err
	}
	return appSet, nil
}

// setEachSource sets key to value in each source of an ApplicationSet's template.
func setEachSource(set *unstructured.Unstructured, key, value string) error {
	sources, _, _ := unstructured.NestedSlice(set.Object, "spec", "template", "spec", "sources")
	for _, s := range sources {
		if m, ok := s.(map[string]any); ok {
			m[key] = value
		}
	}
	return unstructured.SetNestedSlice(set.Object, sources, "spec", "template", "spec", "sources")
}
