package repocreds

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

func hubSecret(name, password string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-gitops", Name: name,
			Labels: map[string]string{SecretTypeLabel: string(Repository), OptInLabel: "true", "team": "web"}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"url": []byte("https://git.example/" + name), "password": []byte(password)},
	}
}

// carried reads a carrier's copies: name → password for a held one, "" for one only read; and
// each held copy's labels.
func carried(t *testing.T, work *workv1.ManifestWork) (map[string]string, map[string]map[string]string) {
	t.Helper()
	copies, labels := map[string]string{}, map[string]map[string]string{}
	if work == nil {
		return nil, nil
	}
	for _, m := range work.Spec.Workload.Manifests {
		var s struct {
			Metadata struct {
				Name   string
				Labels map[string]string
			}
			Data map[string][]byte
		}
		if err := json.Unmarshal(m.Raw, &s); err != nil {
			t.Fatal(err)
		}
		copies[s.Metadata.Name] = string(s.Data["password"])
		if s.Metadata.Labels != nil {
			labels[s.Metadata.Name] = s.Metadata.Labels
		}
	}
	return copies, labels
}

// Each credential the decision delivers is carried: held with its Secret's type, Argo CD's label
// (and no other) and data where the cluster's Secret of its name is free or ours, read only where
// the cluster has not answered or holds another Secret of that name; the Applications that use a
// foreign one lack it. A credential whose Secret is gone is not carried; nothing delivered, no
// carrier.
func TestCarryHoldsOnlyWhatTheClusterLetsItHold(t *testing.T) {
	web, api := types.NamespacedName{Namespace: "openshift-gitops", Name: "web"}, types.NamespacedName{Namespace: "openshift-gitops", Name: "api"}
	d := Decision{
		Deliver: map[string][]types.NamespacedName{"cluster1": {key("free"), key("ours"), key("pending"), key("theirs"), key("gone")}},
		Lacking: map[types.NamespacedName][]Lack{web: {{URL: "https://git.example/platform", Credential: key("platform"), Why: "it serves project x only"}}},
		Users: map[types.NamespacedName][]User{
			key("theirs"): {{App: web, URL: "https://git.example/theirs"}, {App: api, URL: "https://git.example/theirs"}},
			key("free"):   {{App: web, URL: "https://git.example/free"}},
		},
	}
	secrets := map[types.NamespacedName]*corev1.Secret{}
	for _, n := range []string{"free", "ours", "pending", "theirs"} {
		secrets[key(n)] = hubSecret(n, "pw-"+n)
	}
	claims := map[string]manifestwork.Claim{
		"openshift-gitops/free": manifestwork.ClaimFree, "openshift-gitops/ours": manifestwork.ClaimOurs,
		"openshift-gitops/theirs": manifestwork.ClaimForeign,
	}
	work, lacking, err := Carry("cluster1", "openshift-gitops", d, secrets, claims)
	if err != nil {
		t.Fatal(err)
	}
	copies, labels := carried(t, work)
	if want := map[string]string{"free": "pw-free", "ours": "pw-ours", "pending": "", "theirs": ""}; !reflect.DeepEqual(copies, want) {
		t.Errorf("copies = %v, want %v", copies, want)
	}
	if want := map[string]string{SecretTypeLabel: string(Repository)}; !reflect.DeepEqual(labels["free"], want) {
		t.Errorf("a held copy's labels = %v, want only Argo CD's %v", labels["free"], want)
	}
	if len(lacking[web]) != 2 || lacking[web][0].Credential != key("platform") || lacking[web][1].Credential != key("theirs") ||
		len(lacking[api]) != 1 || !strings.Contains(lacking[api][0].Why, "cluster cluster1 holds a Secret openshift-gitops/theirs that argocd-pull did not write") {
		t.Errorf("lacking = %+v", lacking)
	}
	if work, _, _ := Carry("cluster2", "openshift-gitops", d, secrets, nil); work != nil {
		t.Errorf("a cluster that needs nothing has a carrier: %v", work.Spec)
	}
}

// A carrier over its bound leaves the rest out, and the Applications that use them say so.
func TestCarryBeyondTheBoundIsSaid(t *testing.T) {
	d := Decision{Deliver: map[string][]types.NamespacedName{}, Users: map[types.NamespacedName][]User{}}
	secrets := map[types.NamespacedName]*corev1.Secret{}
	claims := map[string]manifestwork.Claim{}
	app := types.NamespacedName{Namespace: "openshift-gitops", Name: "many"}
	for i := range 20 {
		n := "repo-" + string(rune('a'+i))
		s := hubSecret(n, strings.Repeat("k", MaxSecretBytes-100))
		secrets[key(n)], claims["openshift-gitops/"+n] = s, manifestwork.ClaimFree
		d.Deliver["cluster1"] = append(d.Deliver["cluster1"], key(n))
		d.Users[key(n)] = []User{{App: app, URL: "https://git.example/" + n}}
	}
	work, lacking, err := Carry("cluster1", "openshift-gitops", d, secrets, claims)
	if err != nil {
		t.Fatal(err)
	}
	held := len(work.Spec.Workload.Manifests)
	if held == 0 || held == 20 || len(lacking[app]) != 20-held {
		t.Fatalf("carried %d of 20, lacking %d", held, len(lacking[app]))
	}
	if !strings.Contains(Message(lacking[app]), "over the 409600 bytes one ManifestWork carries") {
		t.Errorf("message = %s", Message(lacking[app]))
	}
}
