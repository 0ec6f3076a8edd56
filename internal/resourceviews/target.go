package resourceviews

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ErrNoRevision is ManifestsURL's error for an Application whose cluster has not reported the
// revision it compared.
var ErrNoRevision = errors.New("the cluster has reported no revision yet")

// ManifestsURL is the hub's Argo CD API server's GetManifests of app at the revisions its cluster
// compared (status.sync.revision, or revisions with their source positions): what the managed
// Argo CD compared with, rendered with the hub's repositories, as `argocd app manifests
// --revision` asks for it.
func ManifestsURL(base string, app *unstructured.Unstructured) (string, error) {
	q := url.Values{"appNamespace": {app.GetNamespace()}}
	sources, _, _ := unstructured.NestedSlice(app.Object, "spec", "sources")
	if len(sources) > 0 {
		revisions, _, _ := unstructured.NestedStringSlice(app.Object, "status", "sync", "revisions")
		if len(revisions) != len(sources) {
			return "", fmt.Errorf("%w for each of its %d sources", ErrNoRevision, len(sources))
		}
		for i, r := range revisions {
			if r == "" {
				return "", fmt.Errorf("%w for its source %d", ErrNoRevision, i+1)
			}
			q.Add("revisions", r)
			q.Add("sourcePositions", strconv.Itoa(i+1))
		}
	} else {
		r, _, _ := unstructured.NestedString(app.Object, "status", "sync", "revision")
		if r == "" {
			return "", ErrNoRevision
		}
		q.Set("revision", r)
	}
	return strings.TrimSuffix(base, "/") + "/api/v1/applications/" + url.PathEscape(app.GetName()) + "/manifests?" + q.Encode(), nil
}
