package resourceviews

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestManifestsURLAsksForTheRevisionsTheClusterCompared(t *testing.T) {
	for _, c := range []struct {
		name, app, want string
		err             error
	}{
		{
			name: "one source",
			app:  `{metadata: {name: guestbook, namespace: tenant}, spec: {source: {repoURL: r}}, status: {sync: {revision: abc123}}}`,
			want: "https://argocd-server.argocd.svc/api/v1/applications/guestbook/manifests?appNamespace=tenant&revision=abc123",
		},
		{
			name: "several sources, each at its own revision",
			app:  `{metadata: {name: guestbook, namespace: tenant}, spec: {sources: [{repoURL: r}, {repoURL: s}]}, status: {sync: {revisions: [abc123, 1.2.0]}}}`,
			want: "https://argocd-server.argocd.svc/api/v1/applications/guestbook/manifests?appNamespace=tenant&revisions=abc123&revisions=1.2.0&sourcePositions=1&sourcePositions=2",
		},
		{
			name: "no revision reported yet",
			app:  `{metadata: {name: guestbook, namespace: tenant}, spec: {source: {repoURL: r}}}`,
			err:  ErrNoRevision,
		},
		{
			name: "fewer revisions than sources",
			app:  `{metadata: {name: guestbook, namespace: tenant}, spec: {sources: [{repoURL: r}, {repoURL: s}]}, status: {sync: {revisions: [abc123]}}}`,
			err:  ErrNoRevision,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ManifestsURL("https://argocd-server.argocd.svc/", object(t, c.app))
			if !errors.Is(err, c.err) || got != c.want {
				t.Errorf("got %q, %v; want %q, %v", got, err, c.want, c.err)
			}
		})
	}
}

func TestManifestsAreAskedForAsArgoCDsOwnAccountAndBounded(t *testing.T) {
	var gotAuth, gotQuery string
	answer, status := `{"manifests": ["{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\"}}"]}`, http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth, gotQuery = r.Header.Get("Authorization"), r.URL.RequestURI()
		w.WriteHeader(status)
		_, _ = w.Write([]byte(answer))
	}))
	defer srv.Close()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("secret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := NewArgoCDServer(ServerOptions{URL: srv.URL, TokenFile: tokenFile})
	if err != nil {
		t.Fatal(err)
	}
	app := object(t, `{metadata: {name: web, namespace: argocd}, spec: {source: {repoURL: r}}, status: {sync: {revision: abc}}}`)
	got, err := s.Manifests(context.Background(), app)
	if err != nil || len(got) != 1 || got[0].GetKind() != "Deployment" || got[0].GetName() != "web" {
		t.Fatalf("got %v, %v; want the one Deployment", got, err)
	}
	if gotAuth != "Bearer secret-token" || gotQuery != "/api/v1/applications/web/manifests?appNamespace=argocd&revision=abc" {
		t.Errorf("asked with %q at %q", gotAuth, gotQuery)
	}

	answer, status = `{"error":"permission denied","code":7,"message":"permission denied: applications, get, default/web"}`, http.StatusForbidden
	if _, err := s.Manifests(context.Background(), app); err == nil || !strings.Contains(err.Error(), "403 Forbidden: permission denied: applications, get, default/web") {
		t.Errorf("a refusal: got %v; want the API server's message", err)
	}
	answer, status = `{"manifests": ["[1, 2]"]}`, http.StatusOK
	if _, err := s.Manifests(context.Background(), app); err == nil || !strings.Contains(err.Error(), "not a JSON object") {
		t.Errorf("a manifest that is no object: got %v", err)
	}
	answer = `{"manifests": ["` + strings.Repeat("x", 200) + `"]}`
	s.MaxBody = 100
	if _, err := s.Manifests(context.Background(), app); err == nil || !strings.Contains(err.Error(), "larger than 100 bytes") {
		t.Errorf("an answer over the cap: got %v", err)
	}
	if _, err := NewArgoCDServer(ServerOptions{URL: "argocd-server:443", TokenFile: tokenFile}); err == nil {
		t.Error("a URL without a scheme was taken")
	}
	if _, err := NewArgoCDServer(ServerOptions{URL: srv.URL}); err == nil {
		t.Error("no token file was taken")
	}
}

// argocd-pull's Argo CD token never crosses the network in clear: plain http is refused off the
// loopback, at start (issue 92, a lesser hole).
func TestTheArgoCDServerIsHTTPSOffTheLoopback(t *testing.T) {
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("t"), 0o600); err != nil {
		t.Fatal(err)
	}
	for url, ok := range map[string]bool{
		"https://argocd-server.argocd.svc": true,
		"http://127.0.0.1:8080":            true,
		"http://localhost:8080":            true,
		"http://[::1]:8080":                true,
		"http://argocd-server.argocd.svc":  false,
		"http://10.0.0.7":                  false,
		"ftp://argocd-server":              false,
	} {
		_, err := NewArgoCDServer(ServerOptions{URL: url, TokenFile: token})
		if (err == nil) != ok {
			t.Errorf("%s: %v, want accepted %t", url, err, ok)
		}
	}
}
