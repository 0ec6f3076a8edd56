package search

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
	"github.com/argocd-pull/argocd-pull/internal/test/searchtest"
)

// newFake is a Search that knows one Application, with two related resources.
func newFake() *searchtest.Fake {
	k := searchtest.Key{Cluster: "cluster1", Namespace: "openshift-gitops", Name: "guestbook-cluster1"}
	item := map[string]any{
		"cluster": "cluster1", "kind": "Application", "apigroup": "argoproj.io", "name": k.Name, "namespace": k.Namespace,
		"label":                           "apps.open-cluster-management.io/application-set=true",
		"_conditionSyncError":             "services is forbidden",
		"_conditionSharedResourceWarning": "shared",
		"_uid":                            "cluster1/abc",
	}
	related := []map[string]any{
		{"kind": "Deployment", "apigroup": "apps", "apiversion": "v1", "name": "guestbook-ui", "namespace": "guestbook", "cluster": "cluster1"},
		{"kind": "Service", "apiversion": "v1", "name": "guestbook-ui", "namespace": "guestbook", "cluster": "cluster1"},
	}
	return &searchtest.Fake{Answer: func(key searchtest.Key) (map[string]any, []map[string]any) {
		if key != k {
			return nil, nil
		}
		return item, related
	}}
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
	g.Expect(fake.Auth()).To(ConsistOf("Bearer s3cret"))
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
	g.Expect(fake.Requests()).To(Equal(3), "25 clusters, 10 per request")
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
