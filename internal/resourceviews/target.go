package resourceviews

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/argocd-pull/argocd-pull/internal/appstatus"
	"github.com/argocd-pull/argocd-pull/internal/tlsfiles"
)

// ServerOptions say how to reach the hub's Argo CD API server.
type ServerOptions struct {
	// URL is its base URL (https://argocd-server.argocd.svc); empty: not asked.
	URL string
	// TokenFile holds the API token of argocd-pull's Argo CD account (`argocd account
	// generate-token`); read at each request, so a rotated token is used.
	TokenFile string
	// CAFile verifies the server; empty uses the system roots.
	CAFile string
	// InsecureSkipVerify turns TLS verification off (Argo CD's self-signed default certificate).
	InsecureSkipVerify bool
}

// NewArgoCDServer is the API server o names, or an error when o is incomplete or its CA file
// cannot be read.
func NewArgoCDServer(o ServerOptions) (*ArgoCDServer, error) {
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("the Argo CD API server's URL %q is not an http(s) URL", o.URL)
	}
	if u.Scheme == "http" && !loopback(u.Hostname()) {
		return nil, fmt.Errorf("the Argo CD API server's URL %q is plain http off the loopback: argocd-pull's Argo CD token would cross the network in clear; use https (with --argocd-server-ca-certificate), or http on the loopback only", o.URL)
	}
	if o.TokenFile == "" {
		return nil, errors.New("the Argo CD API server needs a token file")
	}
	tlsConfig, err := tlsfiles.ClientConfig("Argo CD API server", o.CAFile, o.InsecureSkipVerify)
	if err != nil {
		return nil, err
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsConfig
	return &ArgoCDServer{
		URL:    o.URL,
		Client: &http.Client{Transport: transport, Timeout: time.Minute},
		Token: func(context.Context) (string, error) {
			data, err := os.ReadFile(o.TokenFile)
			if err != nil {
				return "", err
			}
			return strings.TrimSpace(string(data)), nil
		},
		MaxBody: MaxManifestsSize,
	}, nil
}

// MaxManifestsSize is the largest answer of the API server read for one Application's manifests.
const MaxManifestsSize = 64 << 20

// ArgoCDServer is the hub's Argo CD API server, asked for an Application's manifests as Argo CD's
// own CLI asks (`argocd app manifests --revision`): its repo-server renders the Application's
// sources with the hub's repositories, credentials and settings, checks the Application's project,
// and hides Secrets' data. argocd-pull asks as its own Argo CD account, which needs only
// `applications, get`.
type ArgoCDServer struct {
	// URL is the API server's base URL (https://argocd-server.argocd.svc).
	URL string
	// Client is the HTTP client (its TLS trusts the API server's certificate).
	Client *http.Client
	// Token gives the account's API token, read when asked: a rotated token is picked up.
	Token func(ctx context.Context) (string, error)
	// MaxBody is the largest answer read, in bytes.
	MaxBody int64
}

// Manifests are app's sources rendered at the revisions its cluster compared (the hub
// Application's status.sync.revision, or revisions for several sources): what the managed Argo
// CD's DIFF compares with, given the same Git.
func (s *ArgoCDServer) Manifests(ctx context.Context, app *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	u, err := ManifestsURL(s.URL, app)
	if err != nil {
		return nil, err
	}
	token, err := s.Token(ctx)
	if err != nil {
		return nil, fmt.Errorf("the Argo CD API token: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	resp, err := s.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("asking the hub's Argo CD API server for the manifests: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, s.MaxBody+1))
	if err != nil {
		return nil, fmt.Errorf("reading the manifests from the hub's Argo CD API server: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the hub's Argo CD API server answers %s: %s", resp.Status, serverMessage(body))
	}
	if int64(len(body)) > s.MaxBody {
		return nil, fmt.Errorf("the manifests are larger than %d bytes", s.MaxBody)
	}
	var answer struct {
		Manifests []string `json:"manifests"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return nil, fmt.Errorf("the hub's Argo CD API server's manifests: %w", err)
	}
	out := make([]*unstructured.Unstructured, 0, len(answer.Manifests))
	for _, m := range answer.Manifests {
		o := &unstructured.Unstructured{}
		if err := json.Unmarshal([]byte(m), &o.Object); err != nil || o.Object == nil {
			return nil, fmt.Errorf("a manifest from the hub's Argo CD API server is not a JSON object: %s", appstatus.Truncate(m, 80))
		}
		out = append(out, o)
	}
	return out, nil
}

// serverMessage is the message of an API server's error answer ({"error": ..., "message": ...}),
// or its first bytes.
func serverMessage(body []byte) string {
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) == nil && e.Message != "" {
		return appstatus.Truncate(e.Message, 300)
	}
	return appstatus.Truncate(string(body), 300)
}

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

// loopback says whether host (a URL's hostname) is this machine's loopback.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
