package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// installCRDs creates the CustomResourceDefinitions in the YAML files of paths (files, or
// directories of them) and waits until each is established. The lab does this itself rather than
// with envtest, so that the argocd-pull binary links no test machinery.
func installCRDs(ctx context.Context, cfg *rest.Config, paths []string) error {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	var names []string
	for _, path := range paths {
		files, err := yamlFiles(path)
		if err != nil {
			return err
		}
		for _, f := range files {
			crds, err := readCRDs(f)
			if err != nil {
				return err
			}
			for _, crd := range crds {
				if err := c.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
					return fmt.Errorf("creating CRD %s from %s: %w", crd.GetName(), f, err)
				}
				names = append(names, crd.GetName())
			}
		}
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			crd := &unstructured.Unstructured{}
			crd.SetAPIVersion("apiextensions.k8s.io/v1")
			crd.SetKind("CustomResourceDefinition")
			if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return false, nil
			}
			if !established(crd) {
				return false, nil
			}
		}
		return true, nil
	})
}

func yamlFiles(path string) ([]string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	var out []string
	for _, pattern := range []string{"*.yaml", "*.yml"} {
		m, err := filepath.Glob(filepath.Join(path, pattern))
		if err != nil {
			return nil, err
		}
		out = append(out, m...)
	}
	return out, nil
}

// readCRDs returns the CustomResourceDefinitions of a (multi-document) YAML file.
func readCRDs(path string) ([]*unstructured.Unstructured, error) {
	objs, err := readObjects(path)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, obj := range objs {
		if obj.GetKind() == "CustomResourceDefinition" && strings.HasPrefix(obj.GetAPIVersion(), "apiextensions.k8s.io/") {
			out = append(out, obj)
		}
	}
	return out, nil
}

// readObjects returns the objects of a (multi-document) YAML file.
func readObjects(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		if len(obj.Object) > 0 {
			out = append(out, obj)
		}
	}
}

// installAdmissionPolicies creates, on the hub, the admission policies of the install's
// config/admission (root: the repository), as the install does: the lab's hub refuses what a
// production hub refuses (docs/security.md, "Resource views").
func installAdmissionPolicies(ctx context.Context, cfg *rest.Config, root string) error {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	var objs []*unstructured.Unstructured
	for _, file := range []string{"resource_views_policy.yaml", "view_holders_policy.yaml"} {
		read, err := readObjects(filepath.Join(root, "config", "admission", file))
		if err != nil {
			return err
		}
		objs = append(objs, read...)
	}
	for _, obj := range objs {
		if _, ok, _ := unstructured.NestedString(obj.Object, "spec", "paramRef", "namespace"); ok {
			// The Argo CD namespace, the lab's instead of the install's default.
			if err := unstructured.SetNestedField(obj.Object, ArgoNamespace, "spec", "paramRef", "namespace"); err != nil {
				return err
			}
		}
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	return nil
}

func established(crd *unstructured.Unstructured) bool {
	conditions, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}
