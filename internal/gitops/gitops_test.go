package gitops

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/argocd-pull/argocd-pull/api"
)

func TestClusterSecret(t *testing.T) {
	g := NewWithT(t)
	mc := &clusterv1.ManagedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster1", Labels: map[string]string{"env": "prod", "cloud": "Amazon", api.ManagedByLabel: "someone-else"}},
		Spec:       clusterv1.ManagedClusterSpec{ManagedClusterClientConfigs: []clusterv1.ClientConfig{{URL: "https://api.cluster1.example:6443"}}},
	}
	s := ClusterSecret(mc, "openshift-gitops", "openshift-gitops/argo-acm-importer")
	g.Expect(s.Name).To(Equal("cluster1-cluster-secret"))
	g.Expect(s.Namespace).To(Equal("openshift-gitops"))
	g.Expect(s.Labels).To(Equal(map[string]string{
		"env": "prod", "cloud": "Amazon",
		SecretTypeLabel: "cluster", api.ManagedByLabel: api.ManagedByValue, api.ClusterLabel: "cluster1",
	}))
	g.Expect(s.Annotations).To(Equal(map[string]string{api.ClaimsAnnotation: "openshift-gitops/argo-acm-importer", AccessHolderAnnotation: "openshift-gitops/argo-acm-importer"}))
	g.Expect(s.StringData).To(Equal(map[string]string{"name": "cluster1", "server": "https://cluster1.pull-model.invalid"}),
		"no credentials, and never the URL the cluster registered: the cluster's agent may write it")
	g.Expect(mc.Labels).To(HaveKeyWithValue(api.ManagedByLabel, "someone-else"), "the cluster is not modified")

	g.Expect(Server("c2")).To(Equal("https://c2.pull-model.invalid"))
}

func TestSecretUpToDate(t *testing.T) {
	g := NewWithT(t)
	desired := ClusterSecret(&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Labels: map[string]string{"env": "prod"}}}, "argocd", "argocd/x")
	existing := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: desired.Labels}, Data: map[string][]byte{"name": []byte("c1"), "server": []byte(desired.StringData["server"])}}
	g.Expect(SecretUpToDate(existing, desired)).To(BeTrue())
	existing.Labels = map[string]string{"env": "dev"}
	g.Expect(SecretUpToDate(existing, desired)).To(BeFalse(), "cluster labels changed")
	existing.Labels = desired.Labels
	existing.Data["config"] = []byte("{}")
	g.Expect(SecretUpToDate(existing, desired)).To(BeFalse(), "credentials added by hand are removed")
}

func TestDecideRemoval(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	grace := 10 * time.Minute
	tests := map[string]struct {
		since      time.Time
		exists     bool
		targetedBy int
		others     bool
		want       Removal
	}{
		"just left":                    {now, true, 0, false, Removal{After: now.Add(grace), Why: "within the grace period after leaving the placement"}},
		"grace over":                   {now.Add(-grace), true, 0, false, Removal{Delete: true}},
		"cluster gone":                 {now, false, 0, false, Removal{Delete: true}},
		"still targeted, grace over":   {now.Add(-time.Hour), true, 2, false, Removal{Why: "an Application still targets the cluster"}},
		"still targeted, cluster gone": {now, false, 1, false, Removal{Why: "an Application still targets the cluster"}},
		"another GitOpsCluster relies": {now.Add(-time.Hour), false, 0, true, Removal{Release: true, Why: "another GitOpsCluster registers the cluster in this namespace"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(DecideRemoval(tt.since, tt.exists, tt.targetedBy, tt.others, grace, now)).To(Equal(tt.want))
		})
	}
}

func TestUpstreamSecretsAreRHACMsClusterSecretsOnly(t *testing.T) {
	g := NewWithT(t)
	secret := func(name string, labels map[string]string) metav1.PartialObjectMetadata {
		return metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	rhacm := func(cluster string) map[string]string {
		return map[string]string{SecretTypeLabel: "cluster", UpstreamSecretLabel: "true", api.ClusterLabel: cluster}
	}
	ours := rhacm("c3")
	ours[api.ManagedByLabel] = api.ManagedByValue
	g.Expect(UpstreamSecrets([]metav1.PartialObjectMetadata{
		secret("c1-application-manager-cluster-secret", rhacm("c1")),
		secret("c1-another-msa-cluster-secret", rhacm("c1")),                                               // another managed service account: the first name in order is shown
		secret("c2-cluster-secret", map[string]string{SecretTypeLabel: "cluster", api.ClusterLabel: "c2"}), // not RHACM's
		secret("c3-cluster-secret", ours),
		secret("c4-repo", map[string]string{SecretTypeLabel: "repository", UpstreamSecretLabel: "true", api.ClusterLabel: "c4"}),
		secret("no-cluster", map[string]string{SecretTypeLabel: "cluster", UpstreamSecretLabel: "true"}),
	})).To(Equal(map[string]string{"c1": "c1-another-msa-cluster-secret"}))
}
