package e2e

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
)

// The report of an ApplicationSet follows what the managed cluster's Argo CD (this test) says.
func TestReportFollowsTheManagedCluster(t *testing.T) {
	requireLab(t)
	ctx := context.Background()
	hub, spoke := lab.hub.Client, lab.spoke.Client

	appSet := &unstructured.Unstructured{}
	appSet.SetGroupVersionKind(argocd.ApplicationSetGVK)
	appSet.SetName("guestbook-allclusters-app-set")
	appSet.SetNamespace(argoNamespace)
	appSet.Object["spec"] = map[string]any{"generators": []any{}, "template": map[string]any{"metadata": map[string]any{}, "spec": map[string]any{
		"project": "default", "destination": map[string]any{}, "source": map[string]any{"repoURL": "x"}}}}
	if err := hub.Create(ctx, appSet); err != nil {
		t.Fatalf("creating the ApplicationSet: %v", err)
	}
	key := types.NamespacedName{Namespace: argoNamespace, Name: "guestbook-allclusters-app-set-" + clusterName}
	app := application(key.Name)
	app.SetLabels(map[string]string{api.PullLabel: "true"})
	app.SetAnnotations(map[string]string{api.ClusterAnnotation: clusterName, argocd.SkipReconcileAnnotation: "true"})
	app.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "argoproj.io/v1alpha1", Kind: "ApplicationSet", Name: appSet.GetName(), UID: appSet.GetUID()}})
	source := map[string]any{"repoURL": "https://git.example/apps", "path": "guestbook", "targetRevision": "main"}
	app.Object["spec"] = map[string]any{"project": "default", "source": source, "destination": map[string]any{"server": argocd.LocalServer, "namespace": "guestbook"}}
	if err := hub.Create(ctx, app); err != nil {
		t.Fatalf("creating the hub Application: %v", err)
	}
	t.Cleanup(func() {
		_ = hub.Delete(context.Background(), application(key.Name))
		_ = hub.Delete(context.Background(), appSet)
	})

	report := &v1alpha1.MulticlusterApplicationSetReport{}
	reportSays := func(want v1alpha1.ClusterCondition) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			if err := hub.Get(ctx, types.NamespacedName{Namespace: argoNamespace, Name: appSet.GetName()}, report); err != nil {
				return false, err
			}
			cc := report.Statuses.ClusterConditions
			return len(cc) == 1 && cc[0].Cluster == clusterName && cc[0].HealthStatus == want.HealthStatus &&
				cc[0].SyncStatus == want.SyncStatus && cc[0].SyncRevision == want.SyncRevision, nil
		}
	}
	setSpokeStatus := func(health, sync, revision string, resources []any) {
		eventually(t, "writing status on the managed Application", step, func(ctx context.Context) (bool, error) {
			got := application(key.Name)
			if err := spoke.Get(ctx, key, got); err != nil {
				return false, err
			}
			got.Object["status"] = map[string]any{
				"health":    map[string]any{"status": health},
				"sync":      map[string]any{"status": sync, "revision": revision, "comparedTo": map[string]any{"source": source, "destination": map[string]any{"server": argocd.LocalServer, "namespace": "guestbook"}}},
				"resources": resources,
			}
			err := spoke.Update(ctx, got)
			return err == nil, err
		})
	}

	deployment := map[string]any{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "guestbook", "name": "guestbook-ui", "status": "Synced", "health": map[string]any{"status": "Progressing"}}
	setSpokeStatus("Progressing", "Synced", "rev-1", []any{deployment})
	eventually(t, "the report showing Progressing", step, reportSays(v1alpha1.ClusterCondition{HealthStatus: "Progressing", SyncStatus: "Synced", SyncRevision: "rev-1"}))
	if s := report.Statuses.Summary; s.InProgress != "1" || s.NotHealthy != "1" || s.Synced != "1" {
		t.Errorf("summary = %+v, want 1 in progress, 1 not healthy, 1 synced", s)
	}
	if r := report.Statuses.Resources; len(r) != 1 || r[0].Kind != "Deployment" || r[0].APIVersion != "apps/v1" {
		t.Errorf("resources = %+v, want the Deployment", r)
	}

	start := time.Now()
	setSpokeStatus("Healthy", "Synced", "rev-2", []any{deployment})
	eventually(t, "the report showing Healthy at rev-2", step, reportSays(v1alpha1.ClusterCondition{HealthStatus: "Healthy", SyncStatus: "Synced", SyncRevision: "rev-2"}))
	t.Logf("managed cluster status change -> report: %s", time.Since(start).Round(time.Millisecond))
	if s := report.Statuses.Summary; s.Healthy != "1" || s.NotHealthy != "0" {
		t.Errorf("summary = %+v, want 1 healthy", s)
	}
}
