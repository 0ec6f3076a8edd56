package gitops

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitopsv1beta1 "github.com/argocd-pull/argocd-pull/api/v1beta1"
)

func TestSetStatus(t *testing.T) {
	tests := map[string]struct {
		observed            Observation
		wantReady           metav1.ConditionStatus
		wantReason, wantMsg string
		wantPhase           string
	}{
		"every selected cluster registered": {
			observed:  Observation{Selected: 2, Registered: 2},
			wantReady: metav1.ConditionTrue, wantReason: gitopsv1beta1.ReasonSucceeded, wantMsg: "2 cluster secrets in openshift-gitops", wantPhase: gitopsv1beta1.PhaseSuccessful,
		},
		"a selected cluster without a ManagedCluster": {
			observed:  Observation{Selected: 2, Registered: 1, Missing: []string{"gone"}},
			wantReady: metav1.ConditionTrue, wantReason: gitopsv1beta1.ReasonSucceeded, wantMsg: "no ManagedCluster for gone", wantPhase: gitopsv1beta1.PhaseSuccessful,
		},
		"namespace not allowed": {
			observed:  Observation{Refusal: DecideArgoNamespace("openshift-gitops", "kube-system", []string{"openshift-gitops"}, nil)},
			wantReady: metav1.ConditionFalse, wantReason: gitopsv1beta1.ReasonArgoNamespaceForbidden, wantMsg: "--gitops-namespaces", wantPhase: gitopsv1beta1.PhaseFailed,
		},
		"namespace not granted": {
			observed:  Observation{Refusal: DecideArgoNamespace("team-a", "openshift-gitops", []string{"openshift-gitops"}, nil)},
			wantReady: metav1.ConditionFalse, wantReason: gitopsv1beta1.ReasonArgoNamespaceNotGranted, wantMsg: "--grant-argocd-namespaces team-a=openshift-gitops", wantPhase: gitopsv1beta1.PhaseFailed,
		},
		"placement not found": {
			observed:  Observation{PlacementReason: gitopsv1beta1.ReasonPlacementNotFound, PlacementMessage: "Placement bgdk not found"},
			wantReady: metav1.ConditionFalse, wantReason: gitopsv1beta1.ReasonPlacementNotFound, wantMsg: "Placement bgdk not found", wantPhase: gitopsv1beta1.PhaseFailed,
		},
		"no cluster selected": {
			observed:  Observation{},
			wantReady: metav1.ConditionFalse, wantReason: gitopsv1beta1.ReasonNoClustersSelected, wantMsg: "selects no cluster", wantPhase: gitopsv1beta1.PhaseFailed,
		},
		"a secret in the way": {
			observed:  Observation{Selected: 1, Conflicts: []string{"cluster1-cluster-secret"}},
			wantReady: metav1.ConditionFalse, wantReason: gitopsv1beta1.ReasonSecretConflict, wantMsg: "cluster1-cluster-secret", wantPhase: gitopsv1beta1.PhaseFailed,
		},
		"a write failed": {
			observed:  Observation{Selected: 2, Registered: 1, Err: errors.New("creating secret x: forbidden")},
			wantReady: metav1.ConditionFalse, wantReason: gitopsv1beta1.ReasonReconcileError, wantMsg: "Retrying: creating secret x: forbidden", wantPhase: gitopsv1beta1.PhaseFailed,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			gc := &gitopsv1beta1.GitOpsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-gitops", Generation: 3}}
			gc.Spec.ArgoServer.ArgoNamespace = "openshift-gitops"
			gc.Spec.PlacementRef = &corev1.ObjectReference{Name: "bgdk"}
			SetStatus(gc, tt.observed)
			ready := meta.FindStatusCondition(gc.Status.Conditions, gitopsv1beta1.ReadyCondition)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(tt.wantReady))
			g.Expect(ready.Reason).To(Equal(tt.wantReason))
			g.Expect(ready.Message).To(ContainSubstring(tt.wantMsg))
			g.Expect(gc.Status.Phase).To(Equal(tt.wantPhase))
			g.Expect(gc.Status.Message).To(Equal(ready.Message))
		})
	}

	// Ready cannot stay True once a write fails.
	g := NewWithT(t)
	gc := &gitopsv1beta1.GitOpsCluster{}
	SetStatus(gc, Observation{Selected: 1, Registered: 1})
	g.Expect(meta.IsStatusConditionTrue(gc.Status.Conditions, gitopsv1beta1.ReadyCondition)).To(BeTrue())
	SetStatus(gc, Observation{Selected: 1, Err: errors.New("updating secret: conflict")})
	g.Expect(meta.IsStatusConditionTrue(gc.Status.Conditions, gitopsv1beta1.ReadyCondition)).To(BeFalse())
	g.Expect(gc.Status.Phase).To(Equal(gitopsv1beta1.PhaseFailed))
}
