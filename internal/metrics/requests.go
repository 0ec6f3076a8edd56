package metrics

import (
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
)

// APIRequests counts the controller's requests to the hub apiserver by verb and resource, as the
// apiserver's own apiserver_request_total names them: client-go's rest_client_requests_total has
// only the HTTP method, which cannot tell a hub Application's status patch from a ManifestWork's.
var APIRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "argocd_pull_api_requests_total",
	Help: "Requests argocd-pull sent to the hub apiserver, by verb (get, list, watch, create, update, patch, delete) and resource (with its subresource: manifestworks/status).",
}, []string{"verb", "resource"})

// CountAPIRequests makes cfg's clients count their requests in APIRequests.
func CountAPIRequests(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt} })
	return cfg
}

type countingTransport struct{ next http.RoundTripper }

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if verb, resource, ok := RequestOf(req.Method, req.URL.Path, req.URL.Query().Get("watch")); ok {
		APIRequests.WithLabelValues(verb, resource).Inc()
	}
	return t.next.RoundTrip(req)
}

// RequestOf names a request to a Kubernetes API path by verb and resource ("manifestworks/status");
// ok is false for a path that is not a resource's (discovery, /healthz).
func RequestOf(method, path, watch string) (verb, resource string, ok bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return "", "", false
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	resource = parts[0]
	named := len(parts) >= 2
	if len(parts) >= 3 {
		resource += "/" + parts[2]
	}
	switch method {
	case http.MethodGet:
		switch {
		case watch == "true" || watch == "1":
			verb = "watch"
		case named:
			verb = "get"
		default:
			verb = "list"
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
	default:
		verb = strings.ToLower(method)
	}
	return verb, resource, true
}
