package sandbox_test

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/sandbox"
)

// rolloutEvidence is what a failed step-order check needs to be explained without the lab's
// directory: the ApplicationSet set's step statuses, and for each cluster its hub Application's
// and its own Application's sync, health, revision, operation and request, as they are now.
func rolloutEvidence(hub client.Client, spokes map[string]client.Client, set string, key func(cluster string) types.NamespacedName) string {
	var b strings.Builder
	s := &unstructured.Unstructured{}
	s.SetGroupVersionKind(argocd.ApplicationSetGVK)
	if err := hub.Get(ctx, types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: set}, s); err == nil {
		statuses, _, _ := unstructured.NestedSlice(s.Object, "status", "applicationStatus")
		fmt.Fprintf(&b, "\nApplicationSet %s (resourceVersion %s): %s", set, s.GetResourceVersion(), compactJSON(statuses))
	}
	for _, cluster := range []string{"cluster1", "cluster2"} {
		for _, side := range []struct {
			name string
			c    client.Client
		}{{"hub", hub}, {cluster, spokes[cluster]}} {
			app := argocd.NewApplication()
			if err := side.c.Get(ctx, key(cluster), app); err != nil {
				fmt.Fprintf(&b, "\n%s's Application on %s: %v", cluster, side.name, err)
				continue
			}
			status, _, _ := unstructured.NestedMap(app.Object, "status")
			for _, drop := range []string{"resources", "history", "summary", "conditions"} {
				delete(status, drop)
			}
			fmt.Fprintf(&b, "\n%s's Application on %s (resourceVersion %s): .operation %s, status %s", cluster, side.name, app.GetResourceVersion(), compactJSON(app.Object["operation"]), compactJSON(status))
		}
	}
	return b.String()
}

func compactJSON(v any) string {
	out, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(out)
}
