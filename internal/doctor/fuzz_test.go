package doctor

// Fuzz target of the doctor's ApplicationSet decisions. `go test` runs its seeds (f.Add and
// testdata/fuzz) as ordinary tests; `make fuzz` runs it as a fuzzer.

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

// FuzzDecideApplicationSet: whatever an ApplicationSet holds, the doctor answers with a known
// status, says what it found, and says how to fix a warning or failure; and a template it passes
// stamps Applications that the controller takes as pull-model ones with a valid target, so the
// doctor never reassures a person about a template the controller refuses.
func FuzzDecideApplicationSet(f *testing.F) {
	f.Add(`{"spec":{"generators":[{"clusterDecisionResource":{"configMapRef":"acm-placement","labelSelector":{"matchLabels":{"cluster.open-cluster-management.io/placement":"p"}}}}],` +
		`"template":{"metadata":{"name":"guestbook-{{name}}","labels":{"apps.open-cluster-management.io/pull-to-ocm-managed-cluster":"true"},` +
		`"annotations":{"argocd.argoproj.io/skip-reconcile":"true","apps.open-cluster-management.io/ocm-managed-cluster":"{{name}}","apps.open-cluster-management.io/ocm-managed-cluster-app-namespace":"openshift-gitops"}},` +
		`"spec":{"destination":{"server":"https://kubernetes.default.svc","namespace":"guestbook"}}}}}`)
	f.Add(`{"spec":{"template":{"metadata":{"labels":{"apps.open-cluster-management.io/pull-to-ocm-managed-cluster":"yes"}}}}}`)
	f.Add(`{"spec":{"template":{"metadata":{"labels":{"apps.open-cluster-management.io/pull-to-ocm-managed-cluster":"true"},` +
		`"annotations":{"argocd.argoproj.io/skip-reconcile":"true","apps.open-cluster-management.io/ocm-managed-cluster":"{{name}}","apps.open-cluster-management.io/ocm-managed-cluster-app-namespace":"Not_A_Namespace"}},` +
		`"spec":{"destination":{"server":"https://kubernetes.default.svc"}}}}}`)
	f.Add(`{"spec":{"generators":[{"matrix":{"generators":[{"merge":{"generators":[{"clusterDecisionResource":{}}]}},{"list":{}}]}}],"template":{"metadata":{"labels":{"a":1}}}}}`)
	f.Add(`{"spec":{"template":{"metadata":{"labels":{"apps.open-cluster-management.io/pull-to-ocm-managed-cluster":"true"},` +
		`"annotations":{"argocd.argoproj.io/skip-reconcile":"true","apps.open-cluster-management.io/ocm-managed-cluster":"Cluster_1"}},` +
		`"spec":{"destination":{"server":"https://kubernetes.default.svc"}}}}}`)
	f.Add(`{"spec":"not an object"}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, appsetJSON string) {
		obj := map[string]any{}
		if json.Unmarshal([]byte(appsetJSON), &obj) != nil {
			return
		}
		appset := &unstructured.Unstructured{Object: obj}
		appset.SetAPIVersion("argoproj.io/v1alpha1")
		appset.SetKind("ApplicationSet")
		appset.SetNamespace("openshift-gitops")
		appset.SetName("guestbook")

		decisionGenerators(appset)
		r := decideApplicationSet(appset)
		switch r.Status {
		case StatusPass, StatusWarn, StatusFail:
		default:
			t.Fatalf("status %q", r.Status)
		}
		if r.ID == "" || r.Title == "" || r.Message == "" {
			t.Fatalf("result without an ID, title or message: %+v", r)
		}
		if r.Status != StatusPass && r.Fix == "" {
			t.Fatalf("%s without a fix: %+v", r.Status, r)
		}
		if r.Status != StatusPass {
			return
		}
		labels, annotations := templateMarkers(appset)
		app := argocd.NewApplication()
		app.SetNamespace(appset.GetNamespace())
		app.SetName("guestbook-cluster1")
		app.SetLabels(labels)
		stamped := map[string]string{}
		for k, v := range annotations {
			if strings.Contains(v, "{{") {
				v = "cluster1" // what a generator parameter becomes
			}
			stamped[k] = v
		}
		app.SetAnnotations(stamped)
		target, pull, err := manifestwork.ReadMarkers(app)
		if err != nil || !pull {
			t.Fatalf("the doctor passes a template whose Applications the controller refuses (pull %v): %v; markers %v %v", pull, err, labels, stamped)
		}
		if target.Cluster == "" || annotations[api.ClusterAnnotation] == "" {
			t.Fatalf("passed without a cluster: %+v", target)
		}
	})
}
