// Package docs checks that the YAML examples of the source documents (test/testdata/docs) are
// accepted unchanged by a real apiserver with the project's CRDs, and come back field for field.
package docs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

const docsDir = "../testdata/docs"

func TestMain(m *testing.M) { testenv.Main(m) }

// Every document of every example file is created with strict field validation (as kubectl
// apply does by default), so an unknown or misspelt field is an error, then read back and compared
// field for field with what was sent.
func TestDocumentExamplesRoundTrip(t *testing.T) {
	env := testenv.Get(t)
	files, err := filepath.Glob(filepath.Join(docsDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no example files in %s: %v", docsDir, err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			for i, obj := range readObjects(t, file) {
				t.Run(fmt.Sprintf("%d-%s-%s", i, obj.GetKind(), obj.GetName()), func(t *testing.T) {
					got := createAndGet(t, env, obj)
					for _, diff := range missingOrChanged(expectedAfterCreate(obj).Object, got.Object, "") {
						t.Error(diff)
					}
				})
			}
		})
	}
}

// The documents' report must survive the apiserver and our Go types exactly: the report
// controller writes through these types, so any field they lose would be lost on every update.
func TestReportExampleRoundTripsThroughGoTypes(t *testing.T) {
	env := testenv.Get(t)
	g := NewWithT(t)
	objs := readObjects(t, filepath.Join(docsDir, "multiclusterapplicationsetreport.yaml"))
	g.Expect(objs).To(HaveLen(1))
	sent := objs[0]

	got := createAndGet(t, env, sent)
	g.Expect(got.Object["statuses"]).To(Equal(sent.Object["statuses"]), "statuses as stored by the apiserver")

	var typed v1alpha1.MulticlusterApplicationSetReport
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(sent), &typed)).To(Succeed())
	data, err := json.Marshal(typed.Statuses)
	g.Expect(err).NotTo(HaveOccurred())
	var back map[string]any
	g.Expect(json.Unmarshal(data, &back)).To(Succeed())
	g.Expect(back).To(Equal(sent.Object["statuses"]), "statuses through the Go types")
}

// expectedAfterCreate is what the apiserver should return for obj: a Secret's write-only
// stringData comes back base64-encoded in data.
func expectedAfterCreate(obj *unstructured.Unstructured) *unstructured.Unstructured {
	want := obj.DeepCopy()
	if want.GroupVersionKind() != corev1.SchemeGroupVersion.WithKind("Secret") {
		return want
	}
	stringData, _, _ := unstructured.NestedStringMap(want.Object, "stringData")
	for k, v := range stringData {
		_ = unstructured.SetNestedField(want.Object, base64.StdEncoding.EncodeToString([]byte(v)), "data", k)
	}
	unstructured.RemoveNestedField(want.Object, "stringData")
	return want
}

func readObjects(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("reading %s: %v", file, err)
	}
	reader := utilyaml.NewYAMLReader(bufioReader(data))
	var objs []*unstructured.Unstructured
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("reading %s: %v", file, err)
		}
		data, err := yaml.YAMLToJSON(doc)
		if err != nil {
			t.Fatalf("parsing %s: %v", file, err)
		}
		if string(data) == "null" || string(data) == "{}" {
			continue
		}
		// Decoded as the client decodes what the apiserver returns, so numbers compare alike.
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(data); err != nil {
			t.Fatalf("decoding an object of %s: %v", file, err)
		}
		objs = append(objs, obj)
	}
	if len(objs) == 0 {
		t.Fatalf("%s holds no object", file)
	}
	return objs
}

func createAndGet(t *testing.T, env *testenv.Env, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	mapping, err := env.Client.RESTMapper().RESTMapping(obj.GroupVersionKind().GroupKind(), obj.GroupVersionKind().Version)
	if err != nil {
		t.Fatalf("the apiserver does not serve %s: %v", obj.GroupVersionKind(), err)
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		if obj.GetNamespace() == "" {
			obj.SetNamespace("default")
		}
		ensureNamespace(t, env, obj.GetNamespace())
	}
	toCreate := obj.DeepCopy()
	if err := env.Client.Create(ctx, toCreate, client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
		t.Fatalf("creating %s %s/%s as the documents write it: %v", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), toCreate) })
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(obj.GroupVersionKind())
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
		t.Fatalf("reading back %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
	return got
}

func ensureNamespace(t *testing.T, env *testenv.Env, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
}

// missingOrChanged lists every field of want that got lacks or holds with another value. Fields
// the apiserver adds (metadata, defaults) are allowed.
func missingOrChanged(want, got any, path string) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: sent an object, got %#v", path, got)}
		}
		var diffs []string
		for _, k := range sortedKeys(w) {
			gv, present := g[k]
			if !present {
				diffs = append(diffs, fmt.Sprintf("%s.%s: sent %#v, the apiserver dropped it", path, k, w[k]))
				continue
			}
			diffs = append(diffs, missingOrChanged(w[k], gv, path+"."+k)...)
		}
		return diffs
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: sent %#v, got %#v", path, want, got)}
		}
		var diffs []string
		for i := range w {
			diffs = append(diffs, missingOrChanged(w[i], g[i], fmt.Sprintf("%s[%d]", path, i))...)
		}
		return diffs
	default:
		if !reflect.DeepEqual(want, got) {
			return []string{fmt.Sprintf("%s: sent %#v, got %#v", path, want, got)}
		}
		return nil
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func bufioReader(data []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(data)) }

// The round-trip test is only meaningful if a field our schema lacks is refused, not pruned.
func TestStrictValidationRefusesUnknownFields(t *testing.T) {
	env := testenv.Get(t)
	g := NewWithT(t)
	obj := readObjects(t, filepath.Join(docsDir, "gitopscluster.yaml"))[0]
	obj.SetNamespace(env.Namespace(t))
	g.Expect(unstructured.SetNestedField(obj.Object, "argocd", "spec", "argoServer", "argoNamespac")).To(Succeed())
	err := env.Client.Create(context.Background(), obj, client.FieldValidation(metav1.FieldValidationStrict))
	g.Expect(err).To(MatchError(ContainSubstring(`unknown field "spec.argoServer.argoNamespac"`)))
}
