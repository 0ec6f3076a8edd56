package sandbox_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/repocreds"
	"github.com/argocd-pull/argocd-pull/internal/sandbox"
)

// privateManifest is what the private ApplicationSet deploys: a ConfigMap with greeting.
func privateManifest(greeting string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: private-ui\ndata:\n  greeting: " + greeting + "\n"
}

func privateGreeting(c client.Client) string {
	cm := &corev1.ConfigMap{}
	if c.Get(ctx, types.NamespacedName{Namespace: sandbox.PrivateNamespace, Name: "private-ui"}, cm) != nil {
		return ""
	}
	return cm.Data["greeting"]
}

// comparisonError is the message of the ComparisonError condition of cluster's private
// Application there, "" when it has none.
func comparisonError(c client.Client, cluster string) string {
	app := argocd.NewApplication()
	if c.Get(ctx, types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: sandbox.PrivateApplication(cluster)}, app) != nil {
		return ""
	}
	return argocd.ConditionMessage(app, "ComparisonError")
}

// The documents' ApplicationSet on a private repository (the lab's Git over HTTP with a
// password), driven as a platform engineer would: the credential added on the hub as `argocd repo
// add` writes it, then opted in. Before the opt-in each cluster's Argo CD is refused by the Git
// server; after it, both clusters sync; the password rotated on the hub and in the server, a new
// commit reaches both; the opt-in removed, the copy leaves each cluster (one cut off meanwhile: once
// it is back) and the next commit fails there with Argo CD's own authentication error, which the
// report shows (and the hub
// Applications' sync status Unknown: their clusters cannot compare).
func TestAPrivateRepositorysCredentialReachesItsClusters(t *testing.T) {
	requireLab(t)
	hub, spokes := clients(t)
	first, err := lab.GitPassword()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lab.SetGitPassword(first) })
	if _, err := lab.CommitFiles("the private app", map[string]string{sandbox.PrivatePath + "/private-ui.yaml": privateManifest("private one")}); err != nil {
		t.Fatal(err)
	}

	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: sandbox.ArgoNamespace, Name: "lab-private-repo", Labels: map[string]string{repocreds.SecretTypeLabel: "repository"}},
		StringData: map[string]string{"type": "git", "url": lab.PrivateRepoURL, "username": sandbox.GitUser, "password": first},
	}
	if err := hub.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hub.Delete(ctx, secret) })
	set, err := lab.PrivateApplicationSet()
	if err != nil {
		t.Fatal(err)
	}
	if err := hub.Create(ctx, set); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = hub.Delete(ctx, set)
		eventually(t, "the private Applications gone from the hub", 2*time.Minute, "hub-argocd-pull.log", func() (bool, error) {
			for name := range spokes {
				err := hub.Get(ctx, types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: sandbox.PrivateApplication(name)}, argocd.NewApplication())
				if !apierrors.IsNotFound(err) {
					return false, err
				}
			}
			return true, nil
		})
	})

	// Not opted in: nothing reaches the clusters, whose Argo CD the Git server refuses.
	eventually(t, "each cluster's Argo CD refused by the private repository", 3*time.Minute, "cluster1-argocd-repo-server.log", func() (bool, error) {
		for name, spoke := range spokes {
			if msg := comparisonError(spoke, name); !strings.Contains(msg, "authentication required") {
				return false, fmt.Errorf("%s: %q", name, msg)
			}
		}
		return true, nil
	})
	if err := hub.Get(ctx, types.NamespacedName{Namespace: "cluster1", Name: manifestwork.CredentialsWorkName}, &workv1.ManifestWork{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a carrier before the opt-in: %v", err)
	}

	// Opted in: each cluster gets its copy, and syncs.
	optIn := func(in bool) {
		t.Helper()
		s := &corev1.Secret{}
		if err := hub.Get(ctx, client.ObjectKeyFromObject(secret), s); err != nil {
			t.Fatal(err)
		}
		if in {
			s.Labels[repocreds.OptInLabel] = "true"
		} else {
			delete(s.Labels, repocreds.OptInLabel)
		}
		if err := hub.Update(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	optIn(true)
	synced := func(what, greeting string) {
		t.Helper()
		eventually(t, what, 3*time.Minute, "cluster1-argocd-application-controller.log", func() (bool, error) {
			for name, spoke := range spokes {
				if got := privateGreeting(spoke); got != greeting {
					return false, fmt.Errorf("%s: greeting %q, error %q", name, got, comparisonError(spoke, name))
				}
			}
			return true, nil
		})
	}
	synced("the private app on every cluster once the credential is opted in", "private one")
	for name, spoke := range spokes {
		copied := &corev1.Secret{}
		if err := spoke.Get(ctx, types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: secret.Name}, copied); err != nil {
			t.Fatalf("the copy on %s: %v", name, err)
		}
		if copied.Annotations[manifestwork.HubSecretAnnotation] != sandbox.ArgoNamespace+"/"+secret.Name || string(copied.Data["password"]) != first {
			t.Errorf("the copy on %s: annotations %v", name, copied.Annotations)
		}
	}

	// Rotated on the hub and in the Git server: a new commit still reaches both clusters.
	second := "rotated-" + time.Now().Format("150405.000")
	s := &corev1.Secret{}
	if err := hub.Get(ctx, client.ObjectKeyFromObject(secret), s); err != nil {
		t.Fatal(err)
	}
	s.Data["password"] = []byte(second)
	if err := hub.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the rotated password on every cluster", time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		for name, spoke := range spokes {
			copied := &corev1.Secret{}
			if err := spoke.Get(ctx, types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: secret.Name}, copied); err != nil || string(copied.Data["password"]) != second {
				return false, fmt.Errorf("%s: %v", name, err)
			}
		}
		return true, nil
	})
	if err := lab.SetGitPassword(second); err != nil {
		t.Fatal(err)
	}
	if _, err := lab.CommitFiles("private two", map[string]string{sandbox.PrivatePath + "/private-ui.yaml": privateManifest("private two")}); err != nil {
		t.Fatal(err)
	}
	synced("a new commit on every cluster with the rotated password", "private two")

	// The opt-in removed while cluster1 is cut off: the copy leaves cluster2 at once and cluster1
	// once it is back; then the next commit fails on each cluster with Argo CD's own
	// authentication error, which the report shows.
	if err := lab.Stop("cluster1-agents"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lab.Start(ctx, "cluster1-agents") })
	optIn(false)
	copied := func(cluster string) (bool, error) {
		err := spokes[cluster].Get(ctx, types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: secret.Name}, &corev1.Secret{})
		return err == nil, client.IgnoreNotFound(err)
	}
	eventually(t, "the copy gone from cluster2", time.Minute, "cluster2-work-agent.log", func() (bool, error) {
		there, err := copied("cluster2")
		return !there, err
	})
	if there, err := copied("cluster1"); !there {
		t.Fatalf("the copy left cluster1 while it was cut off: %v", err)
	}
	if err := lab.Start(ctx, "cluster1-agents"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the copy gone from cluster1 once it is back", 2*time.Minute, "cluster1-work-agent.log", func() (bool, error) {
		there, err := copied("cluster1")
		return !there, err
	})
	if _, err := lab.CommitFiles("private three", map[string]string{sandbox.PrivatePath + "/private-ui.yaml": privateManifest("private three")}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "Argo CD's authentication error in the report for every cluster", 3*time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		r := &v1alpha1.MulticlusterApplicationSetReport{}
		if err := hub.Get(ctx, types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: sandbox.PrivateApplicationSetName}, r); err != nil {
			return false, err
		}
		refused := 0
		for _, cc := range r.Statuses.ClusterConditions {
			for _, c := range cc.Conditions {
				if c.Type == "ComparisonError" && strings.Contains(c.Message, "authentication required") {
					refused++
					break
				}
			}
		}
		if refused != len(spokes) {
			return false, fmt.Errorf("%d of %d clusters report the error: %+v", refused, len(spokes), r.Statuses.ClusterConditions)
		}
		// The hub Applications show what their clusters' Argo CD says: it cannot compare.
		for name := range spokes {
			app := argocd.NewApplication()
			if err := hub.Get(ctx, types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: sandbox.PrivateApplication(name)}, app); err != nil {
				return false, err
			}
			if sync, _, _ := unstructured.NestedString(app.Object, "status", "sync", "status"); sync != "Unknown" {
				return false, fmt.Errorf("the hub Application of %s: sync status %q", name, sync)
			}
		}
		return true, nil
	})
	for name, spoke := range spokes {
		if got := privateGreeting(spoke); got != "private two" {
			t.Errorf("%s: greeting %q, want the last commit it could fetch", name, got)
		}
	}
}
