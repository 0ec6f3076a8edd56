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
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

// The carrier of a cluster's repository credentials (manifestwork.DesiredCredentials) with the
// real work agent: a Secret of a copy's name that the cluster already holds is only read, reported
// by its uid and no hub-Secret annotation (CredentialClaims: foreign), never by its data, and left
// as it was: no owner, no change, not deleted with the work. A held copy is created, owned by the
// agent, reported as argocd-pull's (ours), and deleted once it leaves the work.
func TestTheCarrierReadsASecretItDoesNotOwnAndLeavesIt(t *testing.T) {
	requireLab(t)
	ctx := context.Background()
	hub, spoke := lab.hub.Client, lab.spoke.Client
	const theirs = "the cluster's own password"

	foreign := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: argoNamespace, Name: "repo-taken", Labels: map[string]string{"argocd.argoproj.io/secret-type": "repository"}},
		StringData: map[string]string{"url": "https://git.example/private", "password": theirs},
	}
	if err := spoke.Create(ctx, foreign); err != nil {
		t.Fatalf("creating the cluster's own Secret: %v", err)
	}
	t.Cleanup(func() { _ = spoke.Delete(context.Background(), foreign) })
	before := &corev1.Secret{}
	if err := spoke.Get(ctx, client.ObjectKeyFromObject(foreign), before); err != nil {
		t.Fatal(err)
	}

	copyOf := func(name string, held bool) manifestwork.CredentialCopy {
		return manifestwork.CredentialCopy{Hub: types.NamespacedName{Namespace: argoNamespace, Name: name}, Namespace: argoNamespace, Held: held,
			Labels: map[string]string{"argocd.argoproj.io/secret-type": "repository"},
			Data:   map[string][]byte{"url": []byte("https://git.example/private"), "password": []byte("the hub's password")}}
	}
	work, left, err := manifestwork.DesiredCredentials(clusterName, []manifestwork.CredentialCopy{copyOf("repo-taken", false), copyOf("repo-copy", true)})
	if err != nil || len(left) > 0 {
		t.Fatalf("the carrier: %v, left out %v", err, left)
	}
	if err := hub.Create(ctx, work); err != nil {
		t.Fatalf("creating the work: %v", err)
	}
	workKey := client.ObjectKeyFromObject(work)
	t.Cleanup(func() {
		_ = hub.Delete(context.Background(), &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: clusterName, Name: workKey.Name}})
	})

	var reported *workv1.ManifestWork
	eventually(t, "the agent reporting the cluster's own Secret as foreign", step, func(ctx context.Context) (bool, error) {
		reported = &workv1.ManifestWork{}
		if err := hub.Get(ctx, workKey, reported); err != nil {
			return false, err
		}
		return manifestwork.CredentialClaims(reported)[argoNamespace+"/repo-taken"] == manifestwork.ClaimForeign, nil
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

	copyKey := types.NamespacedName{Namespace: argoNamespace, Name: "repo-copy"}
	eventually(t, "the held copy on the cluster, the agent's, reported as argocd-pull's", step, func(ctx context.Context) (bool, error) {
		copied := &corev1.Secret{}
		if err := spoke.Get(ctx, copyKey, copied); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		w := &workv1.ManifestWork{}
		if err := hub.Get(ctx, workKey, w); err != nil {
			return false, err
		}
		return string(copied.Data["password"]) == "the hub's password" && len(copied.OwnerReferences) == 1 &&
			manifestwork.CredentialClaims(w)[copyKey.String()] == manifestwork.ClaimOurs, nil
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
	untouched("read by the work")

	// The copy leaves the work: the agent deletes it.
	fewer, _, err := manifestwork.DesiredCredentials(clusterName, []manifestwork.CredentialCopy{copyOf("repo-taken", false)})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the copy out of the work", step, func(ctx context.Context) (bool, error) {
		w := &workv1.ManifestWork{}
		if err := hub.Get(ctx, workKey, w); err != nil {
			return false, err
		}
		w.Spec = fewer.Spec
		err := hub.Update(ctx, w)
		if apierrors.IsConflict(err) {
			return false, err // read again
		}
		return err == nil, err
	})
	eventually(t, "the copy gone from the cluster", step, func(ctx context.Context) (bool, error) {
		err := spoke.Get(ctx, copyKey, &corev1.Secret{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})

	// The work goes: the Secret it only read stays as it was.
	if err := hub.Delete(ctx, work); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the work gone", step, func(ctx context.Context) (bool, error) {
		err := hub.Get(ctx, workKey, &workv1.ManifestWork{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	untouched("the work deleted")
}
