package search

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
)

// fakeSearch answers /searchapi/graphql in the Search V2 API's shape from a table of
// Applications, and records the requests.
type fakeSearch struct {
	mu       sync.Mutex
	requests int
	auth     []string
	apps     map[AppKey]map[string]any
	related  map[AppKey][]map[string]any
}

func (f *fakeSearch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/searchapi/graphql" || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	var body struct {
		Query     string `json:"query"`
		Variables struct {
			Input []struct {
				Filters []struct {
					Property string   `json:"property"`
					Values   []string `json:"values"`
				} `json:"filters"`
			} `json:"input"`
		} `json:"variables"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || !strings.Contains(body.Query, "search(input: $input)") {
		http.Error(w, "bad query", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	f.requests++
	f.mu.Unlock()
	var results []map[string]any
	for _, in := range body.Variables.Input {
		var key AppKey
		for _, fl := range in.Filters {
			switch fl.Property {
			case "cluster":
				key.Cluster = fl.Values[0]
			case "namespace":
				key.Namespace = fl.Values[0]
			case "name":
				key.Name = fl.Values[0]
			}
		}
		result := map[string]any{"items": []any{}, "related": []any{}}
		if item, ok := f.apps[key]; ok {
			result["items"] = []any{item}
			byKind := map[string][]any{}
			for _, rel := range f.related[key] {
				byKind[rel["kind"].(string)] = append(byKind[rel["kind"].(string)], rel)
			}
			var related []any
			for kind, items := range byKind {
				related = append(related, map[string]any{"kind": kind, "items": items})
			}
			result["related"] = related
		}
		results = append(results, result)
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"data": map[string]any{"searchResult": results}})
}

func (f *fakeSearch) requestCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests
}

func newFake() *fakeSearch {
	k := AppKey{Cluster: "cluster1", Namespace: "openshift-gitops", Name: "guestbook-cluster1"}
	return &fakeSearch{
		apps: map[AppKey]map[string]any{k: {
			"cluster": "cluster1", "kind": "Application", "apigroup": "argoproj.io", "name": k.Name, "namespace": k.Namespace,
			"label":                           "apps.open-cluster-management.io/application-set=true",
			"_conditionSyncError":             "services is forbidden",
			"_conditionSharedResourceWarning": "shared",
			"_uid":                            "cluster1/abc",
		}},
		related: map[AppKey][]map[string]any{k: {
			{"kind": "Deployment", "apigroup": "apps", "apiversion": "v1", "name": "guestbook-ui", "namespace": "guestbook", "cluster": "cluster1"},
			{"kind": "Service", "apiversion": "v1", "name": "guestbook-ui", "namespace": "guestbook", "cluster": "cluster1"},
		}},
	}
}

func TestApplicationsReadsConditionsAndRelatedResources(t *testing.T) {
	g := NewWithT(t)
	fake := newFake()
	srv := httptest.NewTLSServer(fake)
	defer srv.Close()
	tokenFile := filepath.Join(t.TempDir(), "token")
	g.Expect(os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600)).To(Succeed())
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	g.Expect(os.WriteFile(caFile, certPEM(srv), 0o600)).To(Succeed())

	c, err := New(Options{URL: srv.URL, TokenFile: tokenFile, CAFile: caFile})
	g.Expect(err).NotTo(HaveOccurred())
	known := AppKey{Cluster: "cluster1", Namespace: "openshift-gitops", Name: "guestbook-cluster1"}
	unknown := AppKey{Cluster: "cluster2", Namespace: "openshift-gitops", Name: "guestbook-cluster2"}
	got, err := c.Applications(context.Background(), []AppKey{known, unknown})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(HaveLen(1), "an Application Search has not indexed has no answer")
	g.Expect(got[known].Conditions).To(Equal([]v1alpha1.Condition{
		{Type: "SharedResourceWarning", Message: "shared"},
		{Type: "SyncError", Message: "services is forbidden"},
	}))
	g.Expect(got[known].Resources).To(ConsistOf(
		v1alpha1.ResourceRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "guestbook-ui", Namespace: "guestbook"},
		v1alpha1.ResourceRef{APIVersion: "v1", Kind: "Service", Name: "guestbook-ui", Namespace: "guestbook"},
	))
	g.Expect(fake.auth).To(ConsistOf("Bearer s3cret"))
}

func TestApplicationsBatchesByCluster(t *testing.T) {
	g := NewWithT(t)
	fake := newFake()
	srv := httptest.NewServer(fake)
	defer srv.Close()
	c, err := New(Options{URL: srv.URL})
	g.Expect(err).NotTo(HaveOccurred())
	c.ClustersPerRequest = 10
	var keys []AppKey
	for i := range 25 {
		for j := range 3 {
			keys = append(keys, AppKey{Cluster: fmt.Sprintf("c%02d", i), Namespace: "argocd", Name: fmt.Sprintf("app-%d", j)})
		}
	}
	_, err = c.Applications(context.Background(), keys)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fake.requestCount()).To(Equal(3), "25 clusters, 10 per request")
}

func TestTLSIsVerifiedUnlessToldOtherwise(t *testing.T) {
	g := NewWithT(t)
	srv := httptest.NewTLSServer(newFake())
	defer srv.Close()
	keys := []AppKey{{Cluster: "cluster1", Namespace: "openshift-gitops", Name: "guestbook-cluster1"}}

	verified, err := New(Options{URL: srv.URL})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = verified.Applications(context.Background(), keys)
	g.Expect(err).To(MatchError(ContainSubstring("certificate")))

	insecure, err := New(Options{URL: srv.URL, InsecureSkipVerify: true})
	g.Expect(err).NotTo(HaveOccurred())
	got, err := insecure.Applications(context.Background(), keys)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(HaveLen(1))
}

func TestErrorsAreClearAndLeakNoToken(t *testing.T) {
	g := NewWithT(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "denied for "+r.Header.Get("Authorization"), http.StatusForbidden)
	}))
	defer srv.Close()
	tokenFile := filepath.Join(t.TempDir(), "token")
	g.Expect(os.WriteFile(tokenFile, []byte("s3cret"), 0o600)).To(Succeed())
	c, err := New(Options{URL: srv.URL, TokenFile: tokenFile})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = c.Applications(context.Background(), []AppKey{{Cluster: "c", Namespace: "n", Name: "a"}})
	g.Expect(err).To(MatchError(ContainSubstring("403 Forbidden")))
	g.Expect(err.Error()).NotTo(ContainSubstring("s3cret"))

	_, err = New(Options{URL: srv.URL, CAFile: filepath.Join(t.TempDir(), "missing.pem")})
	g.Expect(err).To(MatchError(ContainSubstring("reading the Search CA file")))
}

func certPEM(srv *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}
