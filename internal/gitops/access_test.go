package gitops

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitopsv1beta1 "github.com/argocd-pull/argocd-pull/api/v1beta1"
	"github.com/argocd-pull/argocd-pull/internal/tenancy"
)

func TestDecideArgoNamespace(t *testing.T) {
	installed := []string{"openshift-gitops", "argocd-team"}
	grants := tenancy.Grants{"team-a": {"openshift-gitops"}, "team-b": {"kube-system"}}
	tests := map[string]struct {
		tenant, argoNS string
		reason         string
		msg            string
	}{
		"the documents: Argo CD namespace writes into itself": {tenant: "openshift-gitops", argoNS: "openshift-gitops"},
		"a second Argo CD namespace writes into itself":       {tenant: "argocd-team", argoNS: "argocd-team"},
		"a tenant granted the platform's namespace":           {tenant: "team-a", argoNS: "openshift-gitops"},
		"a tenant aimed at the platform's namespace": {tenant: "team-c", argoNS: "openshift-gitops",
			reason: gitopsv1beta1.ReasonArgoNamespaceNotGranted, msg: "(--grant-argocd-namespaces team-c=openshift-gitops); team-c may use team-c"},
		"a grant covers the namespaces granted, no more": {tenant: "team-a", argoNS: "argocd-team",
			reason: gitopsv1beta1.ReasonArgoNamespaceNotGranted, msg: "team-a may use team-a, openshift-gitops"},
		"one Argo CD namespace into another, not granted": {tenant: "openshift-gitops", argoNS: "argocd-team",
			reason: gitopsv1beta1.ReasonArgoNamespaceNotGranted},
		"not an Argo CD namespace of the install": {tenant: "team-c", argoNS: "kube-system",
			reason: gitopsv1beta1.ReasonArgoNamespaceForbidden, msg: "(openshift-gitops, argocd-team); the operator must add it to --gitops-namespaces"},
		"a tenant's own namespace the install does not name": {tenant: "team-c", argoNS: "team-c",
			reason: gitopsv1beta1.ReasonArgoNamespaceForbidden},
		"a grant of a namespace the install does not name": {tenant: "team-b", argoNS: "kube-system",
			reason: gitopsv1beta1.ReasonArgoNamespaceForbidden},
		"no namespace": {tenant: "team-a", argoNS: "", reason: gitopsv1beta1.ReasonArgoNamespaceForbidden},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got := DecideArgoNamespace(tt.tenant, tt.argoNS, installed, grants)
			g.Expect(got.Reason).To(Equal(tt.reason))
			g.Expect(got.Refused()).To(Equal(tt.reason != ""))
			g.Expect(got.Message).To(ContainSubstring(tt.msg))
		})
	}
}

func TestMayClaim(t *testing.T) {
	installed := []string{"openshift-gitops"}
	grants := tenancy.Grants{"team-a": {"openshift-gitops"}}
	gc := func(ns, argoNS string, deleting bool) *gitopsv1beta1.GitOpsCluster {
		g := &gitopsv1beta1.GitOpsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gc"}}
		g.Spec.ArgoServer.ArgoNamespace = argoNS
		if deleting {
			now := metav1.Now()
			g.DeletionTimestamp = &now
		}
		return g
	}
	tests := map[string]struct {
		gc   *gitopsv1beta1.GitOpsCluster
		want bool
	}{
		"the platform's":             {gc("openshift-gitops", "openshift-gitops", false), true},
		"a granted tenant's":         {gc("team-a", "openshift-gitops", false), true},
		"a tenant's without a grant": {gc("team-c", "openshift-gitops", false), false},
		"one writing elsewhere":      {gc("team-a", "team-a", false), false},
		"one being deleted":          {gc("openshift-gitops", "openshift-gitops", true), false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(MayClaim(tt.gc, "openshift-gitops", installed, grants)).To(Equal(tt.want))
		})
	}
}
