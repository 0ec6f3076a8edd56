package gitops

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/argocd-pull/argocd-pull/api"
)

// written is a secret as the apiserver returns it: StringData folded into Data.
func written(s *corev1.Secret) *corev1.Secret {
	out := s.DeepCopy()
	out.Data = map[string][]byte{}
	for k, v := range s.StringData {
		out.Data[k] = []byte(v)
	}
	out.StringData = nil
	return out
}

func TestClaims(t *testing.T) {
	tests := map[string]struct {
		labels, annotations map[string]string
		want                []string
	}{
		"none":                          {nil, nil, nil},
		"one":                           {nil, map[string]string{api.ClaimsAnnotation: "openshift-gitops/a"}, []string{"openshift-gitops/a"}},
		"several, sorted, deduplicated": {nil, map[string]string{api.ClaimsAnnotation: "team-a/gc, openshift-gitops/a,team-a/gc"}, []string{"openshift-gitops/a", "team-a/gc"}},
		"all released":                  {map[string]string{api.OwnerLabel: "team-a.gc"}, map[string]string{api.ClaimsAnnotation: ""}, nil},
		"written before claims":         {map[string]string{api.OwnerLabel: "team-a.gc.with.dots"}, nil, []string{"team-a/gc.with.dots"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: tt.labels, Annotations: tt.annotations}}
			NewWithT(t).Expect(Claims(s)).To(Equal(tt.want))
		})
	}
}

func TestRegisterAndRelease(t *testing.T) {
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Labels: map[string]string{"env": "prod"}}}
	platform, tenant := ClaimKey("openshift-gitops", "platform"), ClaimKey("team-a", "gc")
	mine := written(ClusterSecret(mc, "openshift-gitops", platform))

	tests := map[string]struct {
		existing    *corev1.Secret
		key         string
		wantChanged bool
		wantClaims  string
	}{
		"ours, up to date": {existing: mine, key: platform, wantClaims: platform},
		"another's: claimed too, not taken over": {existing: mine, key: tenant, wantChanged: true,
			wantClaims: "openshift-gitops/platform,team-a/gc"},
		"ours, marked unselected": {existing: func() *corev1.Secret {
			s := mine.DeepCopy()
			s.Annotations[api.UnselectedSinceAnnotation] = "2026-11-21T12:00:00Z"
			return s
		}(), key: platform, wantChanged: true, wantClaims: platform},
		"ours, written before claims": {existing: writtenBeforeClaims(mine, "openshift-gitops.platform"), key: platform,
			wantChanged: true, wantClaims: platform},
		"another's, written before claims": {existing: writtenBeforeClaims(mine, "team-a.gc"), key: platform,
			wantChanged: true, wantClaims: "openshift-gitops/platform,team-a/gc"},
		"ours, cluster labels changed": {existing: func() *corev1.Secret {
			s := mine.DeepCopy()
			s.Labels["env"] = "dev"
			return s
		}(), key: platform, wantChanged: true, wantClaims: platform},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got, changed, _ := Register(tt.existing, ClusterSecret(mc, "openshift-gitops", tt.key), tt.key)
			g.Expect(changed).To(Equal(tt.wantChanged))
			g.Expect(got.Annotations[api.ClaimsAnnotation]).To(Equal(tt.wantClaims))
			g.Expect(got.Annotations).NotTo(HaveKey(api.UnselectedSinceAnnotation))
			g.Expect(got.Labels).NotTo(HaveKey(api.OwnerLabel))
			g.Expect(got.Labels).To(HaveKeyWithValue("env", "prod"))
		})
	}

	g := NewWithT(t)
	shared, _, _ := Register(mine, ClusterSecret(mc, "openshift-gitops", tenant), tenant)
	g.Expect(Claims(Release(shared, tenant))).To(Equal([]string{platform}))
	g.Expect(Claims(Release(Release(shared, tenant), platform))).To(BeEmpty())
	g.Expect(Claims(shared)).To(HaveLen(2), "Release does not modify its argument")
}

// GitOpsClusters sharing a cluster's secret ask for different access: the secret carries its
// holder's, the others leave it, a holder that no longer claims it loses it, and access that
// reaches the cluster takes it from access that does not.
func TestASharedSecretCarriesOneGitOpsClustersAccess(t *testing.T) {
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}
	a, b := ClaimKey("argocd", "a"), ClaimKey("argocd", "b")
	channel := func(key, token string) *corev1.Secret {
		s := ClusterSecret(mc, "argocd", key)
		s.StringData["server"], s.StringData["config"] = "https://proxy/c1", `{"bearerToken":"`+token+`"}`
		return s
	}
	refused := func(key string) *corev1.Secret {
		s := ClusterSecret(mc, "argocd", key)
		s.Annotations[AccessRefusedAnnotation] = "AccountInUse: another's"
		return s
	}
	none := func(key string) *corev1.Secret { return ClusterSecret(mc, "argocd", key) }
	claimedBy := func(s *corev1.Secret, keys ...string) *corev1.Secret {
		s = written(s)
		setClaims(s, keys)
		return s
	}
	tests := map[string]struct {
		existing, desired *corev1.Secret
		key               string
		want              *corev1.Secret // whose data and refusal the secret ends with
		wantHolder        string
		wantInstead       bool // the secret carries the holder's access instead of key's
		wantChanged       bool
	}{
		"the channel's holder, none asked: left, claimed": {existing: claimedBy(channel(a, "t"), a), desired: none(b), key: b,
			want: channel(a, "t"), wantHolder: a, wantInstead: true, wantChanged: true},
		"the channel's holder, another account's token: left": {existing: claimedBy(channel(a, "t"), a, b), desired: channel(b, "u"), key: b,
			want: channel(a, "t"), wantHolder: a, wantInstead: true},
		"the channel's holder, a refused ask: left": {existing: claimedBy(channel(a, "t"), a, b), desired: refused(b), key: b,
			want: channel(a, "t"), wantHolder: a, wantInstead: true},
		"credential-free, a channel: taken": {existing: claimedBy(refused(a), a, b), desired: channel(b, "u"), key: b,
			want: channel(b, "u"), wantHolder: b, wantChanged: true},
		"credential-free, another credential-free way: left": {existing: claimedBy(refused(a), a, b), desired: none(b), key: b,
			want: refused(a), wantHolder: a, wantInstead: true},
		"the same access as the holder's: left, nothing said": {existing: claimedBy(none(a), a, b), desired: none(b), key: b,
			want: none(a), wantHolder: a},
		"its holder gone from the claims: taken": {existing: claimedBy(channel(a, "t"), b), desired: none(b), key: b,
			want: none(b), wantHolder: b, wantChanged: true},
		"no holder named (written before holders): written": {existing: func() *corev1.Secret {
			s := claimedBy(channel(a, "t"), a, b)
			delete(s.Annotations, AccessHolderAnnotation)
			return s
		}(), desired: none(b), key: b, want: none(b), wantHolder: b, wantChanged: true},
		"its own holder stops asking: written": {existing: claimedBy(channel(a, "t"), a, b), desired: none(a), key: a,
			want: none(a), wantHolder: a, wantChanged: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got, changed, instead := Register(tt.existing, tt.desired, tt.key)
			g.Expect(instead != "").To(Equal(tt.wantInstead), "instead: %q", instead)
			if tt.wantInstead {
				g.Expect(instead).To(Equal(tt.wantHolder))
			}
			g.Expect(AccessHolder(got)).To(Equal(tt.wantHolder))
			g.Expect(changed).To(Equal(tt.wantChanged))
			g.Expect(got.Annotations[AccessRefusedAnnotation]).To(Equal(tt.want.Annotations[AccessRefusedAnnotation]))
			g.Expect(stringData(got)).To(Equal(tt.want.StringData))
			g.Expect(Claims(got)).To(ContainElement(tt.key))
			if changed {
				again, changedAgain, _ := Register(written(got), tt.desired, tt.key)
				g.Expect(changedAgain).To(BeFalse(), "settled: %v", again.Annotations)
			}
		})
	}
}

// writtenBeforeClaims is secret as a release before claims wrote it: its owner in a label only.
func writtenBeforeClaims(secret *corev1.Secret, owner string) *corev1.Secret {
	s := secret.DeepCopy()
	s.Annotations = nil
	s.Labels[api.OwnerLabel] = owner
	return s
}
