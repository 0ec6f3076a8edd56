package manifestwork

// Fuzz targets of the pure transforms of a hub Application into its ManifestWork. `go test` runs
// their seeds (f.Add and testdata/fuzz) as ordinary tests; `make fuzz` runs them as fuzzers.

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
)

// FuzzWorkName: for every name the apiserver accepts for an Application (a DNS subdomain), its
// work name is a valid DNS subdomain of at most 253 characters, the same on every call, and
// different for another namespace with the same name; for any other string, at most 253 bytes.
func FuzzWorkName(f *testing.F) {
	f.Add("argocd", "guestbook-cluster1")
	f.Add("", "")
	f.Add("team-a", strings.Repeat("a", 300))
	f.Add("a", strings.Repeat("-.", 200))
	f.Add("team-a", "guestbook")
	f.Fuzz(func(t *testing.T, namespace, name string) {
		got := WorkName(namespace, name)
		if len(got) > validation.DNS1123SubdomainMaxLength {
			t.Fatalf("WorkName(%q, %q) has %d bytes", namespace, name, len(got))
		}
		if len(validation.IsDNS1123Subdomain(name)) > 0 {
			return // the apiserver refuses such an Application
		}
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Fatalf("WorkName(%q, %q) = %q, not a DNS subdomain: %v", namespace, name, got, errs)
		}
		if again := WorkName(namespace, name); again != got {
			t.Fatalf("WorkName(%q, %q) is %q, then %q", namespace, name, got, again)
		}
		if other := WorkName(namespace+"x", name); other == got {
			t.Fatalf("namespaces %q and %q share the work name %q of %q", namespace, namespace+"x", got, name)
		}
	})
}

// FuzzReadMarkers: the markers of any Application either make a target whose cluster and namespace are
// valid names, or an ErrInvalidMarkers, or say it is not a pull-model Application; a label that is
// not a bool is never taken for one.
func FuzzReadMarkers(f *testing.F) {
	f.Add(true, "true", "cluster1", "", "argocd")
	f.Add(true, "false", "cluster1", "", "argocd")
	f.Add(true, "yes", "cluster1", "", "argocd")
	f.Add(true, "true", "", "", "argocd")
	f.Add(true, "true", " cluster1 ", "guestbook", "team-a")
	f.Add(true, "true", "Cluster_1", "", "argocd")
	f.Add(true, "true", "cluster1", "kube-system/x", "argocd")
	f.Add(false, "", "cluster1", "", "argocd")
	f.Fuzz(func(t *testing.T, labelled bool, label, cluster, appNamespace, namespace string) {
		app := argocd.NewApplication()
		app.SetName("app")
		app.SetNamespace(namespace)
		if labelled {
			app.SetLabels(map[string]string{api.PullLabel: label})
		}
		app.SetAnnotations(map[string]string{api.ClusterAnnotation: cluster, api.AppNamespaceAnnotation: appNamespace})

		target, pull, err := ReadMarkers(app)
		switch {
		case err != nil:
			if !errors.Is(err, ErrInvalidMarkers) {
				t.Fatalf("error %v is not an ErrInvalidMarkers", err)
			}
			if target != (Target{}) {
				t.Fatalf("an error comes with the target %+v", target)
			}
		case !pull:
			if labelled && (label == "true" || label == "1" || label == "True" || label == "TRUE" || label == "t" || label == "T") {
				t.Fatalf("label %q read as not pull-model", label)
			}
		default:
			if !labelled {
				t.Fatal("an Application without the label read as pull-model")
			}
			if errs := validation.IsDNS1123Label(target.Cluster); len(errs) > 0 {
				t.Fatalf("cluster %q accepted: %v", target.Cluster, errs)
			}
			if errs := validation.IsDNS1123Label(target.AppNamespace); len(errs) > 0 {
				t.Fatalf("managed namespace %q accepted: %v", target.AppNamespace, errs)
			}
		}
	})
}

// FuzzDesiredWork: any Application (odd metadata, any spec) becomes a work named WorkName in the
// target cluster's namespace whose payload lands in the target namespace, carries no hub-only
// marker and fits OCM's limit, or a clear ErrPayloadTooLarge.
func FuzzDesiredWork(f *testing.F) {
	f.Add("guestbook", "argocd", "note", "kept", `{"project":"default","source":{"repoURL":"https://git.example/repo"}}`, 0)
	f.Add(strings.Repeat("n", 253), "team-a", "a", "", `{}`, 0)
	f.Add("app", "argocd", api.ClusterAnnotation, "cluster9", `{"destination":{"name":"in-cluster"}}`, 0)
	f.Add("app", "argocd", "big", "", `{"project":"default"}`, MaxManifestsSize)
	f.Add("app", "argocd", "example.com/ctl", "\x00\x1b[31m\u202e", `[1,2]`, 10)
	f.Add("app", "argocd", "x", "y", `{"destination":"not an object","source":null}`, 0)
	f.Fuzz(func(t *testing.T, name, namespace, annKey, annValue, specJSON string, padding int) {
		if len(validation.IsDNS1123Subdomain(name)) > 0 || len(validation.IsDNS1123Label(namespace)) > 0 ||
			len(validation.IsQualifiedName(annKey)) > 0 || !utf8.ValidString(annValue) {
			return // the apiserver refuses such an Application
		}
		app := argocd.NewApplication()
		app.SetName(name)
		app.SetNamespace(namespace)
		app.SetLabels(map[string]string{api.PullLabel: "true"})
		annotations := map[string]string{
			api.ClusterAnnotation: "cluster1", argocd.SkipReconcileAnnotation: "true", argocd.RefreshAnnotation: "hard",
			annKey: annValue,
		}
		if padding > 0 {
			annotations["padding"] = strings.Repeat("p", min(padding, 2*MaxManifestsSize))
		}
		app.SetAnnotations(annotations)
		var spec any
		if json.Unmarshal([]byte(specJSON), &spec) == nil {
			app.Object["spec"] = spec
		}
		target := Target{Cluster: "cluster1", AppNamespace: "guestbook", ArgoCDNamespace: "argocd"}

		work, err := DesiredWork(app, nil, target, Deliveries{})
		if err != nil {
			if !errors.Is(err, ErrPayloadTooLarge) {
				t.Fatalf("unexpected error: %v", err)
			}
			return
		}
		if work.Name != WorkName(namespace, name) || work.Namespace != target.Cluster {
			t.Fatalf("work %s/%s, want %s/%s", work.Namespace, work.Name, target.Cluster, WorkName(namespace, name))
		}
		size := 0
		for _, m := range work.Spec.Workload.Manifests {
			size += len(m.Raw)
		}
		if size > MaxManifestsSize {
			t.Fatalf("payload of %d bytes accepted, over %d", size, MaxManifestsSize)
		}
		payload := &unstructured.Unstructured{}
		if err := json.Unmarshal(work.Spec.Workload.Manifests[0].Raw, &payload.Object); err != nil {
			t.Fatalf("payload does not decode: %v", err)
		}
		if payload.GetNamespace() != target.AppNamespace || payload.GetName() != name {
			t.Fatalf("payload %s/%s, want %s/%s", payload.GetNamespace(), payload.GetName(), target.AppNamespace, name)
		}
		if _, ok := payload.GetLabels()[api.PullLabel]; ok {
			t.Fatal("the pull label travels to the managed cluster")
		}
		for _, k := range append(slices.Clip(hubOnlyAnnotations), requestAnnotations...) { // no request is carried
			if _, ok := payload.GetAnnotations()[k]; ok {
				t.Fatalf("hub-only annotation %s travels to the managed cluster", k)
			}
		}
		destinationSet := (annKey == api.DestinationNameAnnotation || annKey == api.DestinationServerAnnotation) && annValue != ""
		if spec, ok := payload.Object["spec"].(map[string]any); ok && !destinationSet {
			dest, _ := spec["destination"].(map[string]any)
			if dest["server"] != argocd.LocalServer || dest["name"] != nil {
				t.Fatalf("payload destination %v, want the managed cluster itself", spec["destination"])
			}
		}
	})
}

// FuzzParseDeliveries: whatever a person or another controller writes in the deliveries
// annotation, parsing never panics and what it reads writes back to itself.
func FuzzParseDeliveries(f *testing.F) {
	f.Add("")
	f.Add(`{"sync":{"id":"a1b2c3d4e5f60718"},"refresh":{"id":"0011223344556677"}}`)
	f.Add(`{"sync":{"id":"x","revision":"v2"}}`)
	f.Add(`not json`)
	f.Add(`{"sync":null,"refresh":{}}`)
	f.Fuzz(func(t *testing.T, s string) {
		d := ParseDeliveries(s)
		again := ParseDeliveries(d.String())
		if again.String() != d.String() {
			t.Fatalf("%q reads as %q, which reads as %q", s, d.String(), again.String())
		}
	})
}
