package resourceviews

import (
	"errors"
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
