// Package search reads, from the OCM Search V2 API (/searchapi/graphql), what the managed
// clusters' Argo CD Applications deployed and the errors and warnings the search collector saw on
// them. It is an optional source of the report, for hubs that run Search; the report works
// without it from ManifestWork feedback.
package search

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/tlsfiles"
)

// AppKey names an Application on a managed cluster.
type AppKey struct{ Cluster, Namespace, Name string }

// Result is what Search knows of one Application.
type Result struct {
	Resources  []v1alpha1.ResourceRef
	Conditions []v1alpha1.Condition
}

// Client queries one Search V2 endpoint.
type Client struct {
	url       string
	tokenFile string
	http      *http.Client
	// ClustersPerRequest bounds how many clusters' Applications one request asks about.
	ClustersPerRequest int
}

// Options configure a Client.
type Options struct {
	// URL is the Search API base, e.g. https://search-search-api.open-cluster-management.svc:4010.
	URL string
	// TokenFile holds the bearer token; it is read on every request, so a rotated token is used.
	TokenFile string
	// CAFile verifies the server; empty uses the system roots.
	CAFile string
	// InsecureSkipVerify turns TLS verification off. For tests and labs only.
	InsecureSkipVerify bool
}

// New returns a client, or an error when the CA file cannot be read.
func New(o Options) (*Client, error) {
	tlsConfig, err := tlsfiles.ClientConfig("Search", o.CAFile, o.InsecureSkipVerify)
	if err != nil {
		return nil, err
	}
	return &Client{
		url:                strings.TrimRight(o.URL, "/") + "/searchapi/graphql",
		tokenFile:          o.TokenFile,
		http:               &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig, Proxy: http.ProxyFromEnvironment}},
		ClustersPerRequest: 50,
	}, nil
}

const query = `query Search($input: [SearchInput]) { searchResult: search(input: $input) { items related { kind items } } }`

type filter struct {
	Property string   `json:"property"`
	Values   []string `json:"values"`
}

type input struct {
	Filters []filter `json:"filters"`
	Limit   int      `json:"limit"`
}

type response struct {
	Data struct {
		SearchResult []struct {
			Items   []map[string]any `json:"items"`
			Related []struct {
				Kind  string           `json:"kind"`
				Items []map[string]any `json:"items"`
			} `json:"related"`
		} `json:"searchResult"`
	} `json:"data"`
	Errors []struct {
		Message string `json:"message"`
	} `json:"errors"`
}

// Applications asks Search about the given Applications, one input per Application so that
// related resources are attributed to the right one, grouped by cluster into requests.
func (c *Client) Applications(ctx context.Context, apps []AppKey) (map[AppKey]Result, error) {
	byCluster := map[string][]AppKey{}
	for _, a := range apps {
		byCluster[a.Cluster] = append(byCluster[a.Cluster], a)
	}
	clusters := make([]string, 0, len(byCluster))
	for c := range byCluster {
		clusters = append(clusters, c)
	}
	sort.Strings(clusters)
	out := make(map[AppKey]Result, len(apps))
	for start := 0; start < len(clusters); start += c.ClustersPerRequest {
		var batch []AppKey
		for _, cl := range clusters[start:min(start+c.ClustersPerRequest, len(clusters))] {
			batch = append(batch, byCluster[cl]...)
		}
		if err := c.query(ctx, batch, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (c *Client) query(ctx context.Context, batch []AppKey, out map[AppKey]Result) error {
	inputs := make([]input, 0, len(batch))
	for _, a := range batch {
		inputs = append(inputs, input{Limit: -1, Filters: []filter{
			{Property: "kind", Values: []string{"Application"}},
			{Property: "apigroup", Values: []string{argocd.Group}},
			{Property: "label", Values: []string{api.ApplicationSetLabel + "=true"}},
			{Property: "cluster", Values: []string{a.Cluster}},
			{Property: "namespace", Values: []string{a.Namespace}},
			{Property: "name", Values: []string{a.Name}},
		}})
	}
	body, err := json.Marshal(map[string]any{"operationName": "Search", "query": query, "variables": map[string]any{"input": inputs}})
	if err != nil {
		return fmt.Errorf("encoding the Search query: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("building the Search request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.tokenFile != "" {
		token, err := os.ReadFile(c.tokenFile)
		if err != nil {
			return fmt.Errorf("reading the Search token file: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("querying Search at %s: %w", c.url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("reading the Search response: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("querying Search at %s: %s", c.url, resp.Status) // the body may echo the token
	}
	var r response
	if err := json.Unmarshal(data, &r); err != nil {
		return fmt.Errorf("decoding the Search response: %w", err)
	}
	if len(r.Errors) > 0 {
		return fmt.Errorf("the Search API answered with an error: %s", r.Errors[0].Message)
	}
	if len(r.Data.SearchResult) != len(batch) {
		return fmt.Errorf("the Search API answered %d results for %d inputs", len(r.Data.SearchResult), len(batch))
	}
	for i, result := range r.Data.SearchResult {
		if len(result.Items) == 0 {
			continue // not (yet) indexed
		}
		var res Result
		res.Conditions = conditionsOf(result.Items[0])
		for _, rel := range result.Related {
			for _, item := range rel.Items {
				res.Resources = append(res.Resources, resourceOf(rel.Kind, item))
			}
		}
		out[batch[i]] = res
	}
	return nil
}

// conditionsOf reads the _condition<Type> properties the search collector sets on an
// Application for its error and warning conditions.
func conditionsOf(item map[string]any) []v1alpha1.Condition {
	var out []v1alpha1.Condition
	for k, v := range item {
		t, ok := strings.CutPrefix(k, "_condition")
		msg, isString := v.(string)
		if !ok || !isString || !strings.HasSuffix(t, "Error") && !strings.HasSuffix(t, "Warning") {
			continue
		}
		out = append(out, v1alpha1.Condition{Type: t, Message: msg})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}

func resourceOf(kind string, item map[string]any) v1alpha1.ResourceRef {
	s := func(k string) string { v, _ := item[k].(string); return v }
	apiVersion := s("apiversion")
	if g := s("apigroup"); g != "" && apiVersion != "" && !strings.Contains(apiVersion, "/") {
		apiVersion = g + "/" + apiVersion
	}
	if k := s("kind"); k != "" {
		kind = k
	}
	return v1alpha1.ResourceRef{APIVersion: apiVersion, Kind: kind, Name: s("name"), Namespace: s("namespace")}
}
