package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/internal/appstatus"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/repocreds"
)

// The credentials' carrier, written by the controller, with the real work agent: an Application
// on two private repositories, each with a hub credential opted in. The cluster already holds a
// Secret of the first's name: it is only read, reported by its uid and no hub-Secret annotation
// (CredentialClaims: foreign), never by its data, left as it was (no owner, no change, not deleted
// with the carrier), and the hub Application says it lacks that credential. The second is held:
// created, owned by the agent, reported as argocd-pull's, and deleted once its opt-in goes.
func TestTheCarrierReadsASecretItDoesNotOwnAndLeavesIt(t *testing.T) {
	requireLab(t)
	ctx := context.Background()
	hub, spoke := lab.hub.Client, lab.spoke.Client
	const theirs = "the cluster's own password"
	const takenURL, copyURL = "https://git.example/taken", "https://git.example/copy"

	foreign := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: argoNamespace, Name: "repo-taken", Labels: map[string]string{repocreds.SecretTypeLabel: "repository"}},
		StringData: map[string]string{"url": "https://git.example/elsewhere", "password": theirs},
	}
	if err := spoke.Create(ctx, foreign); err != nil {
		t.Fatalf("creating the cluster's own Secret: %v", err)
	}
	t.Cleanup(func() { _ = spoke.Delete(context.Background(), foreign) })
	before := &corev1.Secret{}
	if err := spoke.Get(ctx, client.ObjectKeyFromObject(foreign), before); err != nil {
		t.Fatal(err)
	}
	for name, url := range map[string]string{"repo-taken": takenURL, "repo-copy": copyURL} {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: argoNamespace, Name: name,
				Labels: map[string]string{repocreds.SecretTypeLabel: "repository", repocreds.OptInLabel: "true"}},
			StringData: map[string]string{"url": url, "password": "the hub's password"},
		}
		if err := hub.Create(ctx, s); err != nil {
			t.Fatalf("creating the hub credential %s: %v", name, err)
		}
		t.Cleanup(func() { _ = hub.Delete(context.Background(), s) })
	}
	key, _ := pullApp(t, "private", func(app *unstructured.Unstructured) {
		spec := app.Object["spec"].(map[string]any)
		delete(spec, "source")
		spec["sources"] = []any{
			map[string]any{"repoURL": takenURL, "path": "guestbook", "targetRevision": "main"},
			map[string]any{"repoURL": copyURL, "path": "guestbook", "targetRevision": "main"},
		}
	})

	workKey := types.NamespacedName{Namespace: clusterName, Name: manifestwork.CredentialsWorkName}
	copyKey := types.NamespacedName{Namespace: argoNamespace, Name: "repo-copy"}
	var reported *workv1.ManifestWork
	eventually(t, "the agent reporting the cluster's own Secret as foreign, and the copy held", step, func(ctx context.Context) (bool, error) {
		reported = &workv1.ManifestWork{}
		if err := hub.Get(ctx, workKey, reported); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		claims := manifestwork.CredentialClaims(reported)
		return claims[argoNamespace+"/repo-taken"] == manifestwork.ClaimForeign && claims[copyKey.String()] == manifestwork.ClaimOurs, nil
	})
	status, err := json.Marshal(reported.Status)
	if err != nil {
		t.Fatal(err)
	}
	for _, secretValue := range []string{theirs, base64.StdEncoding.EncodeToString([]byte(theirs))} {
		if strings.Contains(string(status), secretValue) {
			t.Errorf("the work's status carries the cluster's own Secret's data: %s", status)
		}
	}
	eventually(t, "the held copy on the cluster, the agent's", step, func(ctx context.Context) (bool, error) {
		copied := &corev1.Secret{}
		if err := spoke.Get(ctx, copyKey, copied); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return string(copied.Data["password"]) == "the hub's password" && len(copied.OwnerReferences) == 1, nil
	})
	eventually(t, "the hub Application saying which credential it lacks", step, func(ctx context.Context) (bool, error) {
		app := argocd.NewApplication()
		if err := hub.Get(ctx, key, app); err != nil {
			return false, err
		}
		msg := argocd.ConditionMessage(app, appstatus.CredentialWarningCondition)
		return strings.Contains(msg, "repository "+takenURL+" would use the credential "+argoNamespace+"/repo-taken") &&
			strings.Contains(msg, "holds a Secret "+argoNamespace+"/repo-taken that argocd-pull did not write"), nil
	})
	untouched := func(when string) {
		t.Helper()
		now := &corev1.Secret{}
		if err := spoke.Get(ctx, client.ObjectKeyFromObject(foreign), now); err != nil {
			t.Fatalf("%s, the cluster's own Secret: %v", when, err)
		}
		if now.ResourceVersion != before.ResourceVersion || len(now.OwnerReferences) > 0 || string(now.Data["password"]) != theirs {
			t.Errorf("%s, the cluster's own Secret changed: resourceVersion %s (was %s), owners %v", when, now.ResourceVersion, before.ResourceVersion, now.OwnerReferences)
		}
	}
	untouched("read by the carrier")

	// The copy's opt-in goes: the agent deletes it.
	optedOut := &corev1.Secret{}
	if err := hub.Get(ctx, copyKey, optedOut); err != nil {
		t.Fatal(err)
	}
	delete(optedOut.Labels, repocreds.OptInLabel)
	if err := hub.Update(ctx, optedOut); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the copy gone from the cluster", step, func(ctx context.Context) (bool, error) {
		err := spoke.Get(ctx, copyKey, &corev1.Secret{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})

	// The Application goes, and the carrier with it: the Secret it only read stays as it was.
	if err := hub.Delete(ctx, application(key.Name)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the carrier gone", step, func(ctx context.Context) (bool, error) {
		err := hub.Get(ctx, workKey, &workv1.ManifestWork{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	untouched("the carrier deleted")
}
