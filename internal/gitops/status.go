package gitops

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitopsv1beta1 "github.com/argocd-pull/argocd-pull/api/v1beta1"
	"github.com/argocd-pull/argocd-pull/internal/clusteraccess"
)

// Observation is what one reconcile of a GitOpsCluster found and did; SetStatus derives the
// whole status from it.
type Observation struct {
	// Refusal says why the GitOpsCluster may not write into its Argo CD namespace (DecideArgoNamespace).
	Refusal Refusal
	// PlacementReason and PlacementMessage say why the Placement could not be resolved ("" when
	// it was); Selected is how many clusters it selects.
	PlacementReason, PlacementMessage string
	Selected                          int
	// Registered is how many cluster secrets exist; Conflicts the secrets in the way (not ours);
	// Missing the selected clusters without a ManagedCluster.
	Registered         int
	Conflicts, Missing []string
	// Upstream are the selected clusters registered by RHACM's cluster secrets (UpstreamSecrets).
	Upstream []string
	// Reached are the registered clusters whose secrets carry OCM's channel; Unreached the
	// others, with why (spec.managedServiceAccountRef only).
	Reached   int
	Unreached []Unreached
	// Shared are the registered clusters whose secrets carry another GitOpsCluster's access (it
	// registers them too: Register); not counted in Reached nor Unreached.
	Shared []Shared
	// Recheck is when to read the clusters' tokens again (0: no channel asked for).
	Recheck time.Duration
	// Err is a read or write of the reconcile that failed; the status is then not Ready.
	Err error
}

// Unreached is a cluster whose secret stays credential-free although its GitOpsCluster asks for
// OCM's channel.
type Unreached struct {
	Cluster string
	Why     clusteraccess.Refusal
}

// Shared is a cluster whose secret carries the access of Holder, another GitOpsCluster that
// registers it in the same Argo CD namespace.
type Shared struct {
	Cluster, Holder string
}

// sharedClause says whose access the secrets of o.Shared carry ("" when none): at most
// maxUnreachedNamed clusters are named.
func sharedClause(o Observation) string {
	if len(o.Shared) == 0 {
		return ""
	}
	var named []string
	for i, s := range o.Shared {
		if i == maxUnreachedNamed {
			named = append(named, fmt.Sprintf("and %d more", len(o.Shared)-i))
			break
		}
		named = append(named, s.Cluster+": its secret carries the access of GitOpsCluster "+s.Holder)
	}
	return fmt.Sprintf("%d shared with other GitOpsClusters, which register them too (Argo CD has one cluster per name): %s", len(o.Shared), strings.Join(named, "; "))
}

// maxUnreachedNamed bounds the clusters the ClusterAccess condition names.
const maxUnreachedNamed = 10

// SetStatus sets gc's conditions, phase and message from what the reconcile observed. Ready is
// True only when every write succeeded and every selected cluster has its secret.
func SetStatus(gc *gitopsv1beta1.GitOpsCluster, o Observation) {
	argoNS, placement := gc.Spec.ArgoServer.ArgoNamespace, ""
	if gc.Spec.PlacementRef != nil {
		placement = gc.Spec.PlacementRef.Name
	}
	switch {
	case o.Refusal.Refused():
		setReady(gc, false, o.Refusal.Reason, o.Refusal.Message)
	case o.PlacementReason != "":
		setCondition(gc, gitopsv1beta1.PlacementResolvedCondition, false, o.PlacementReason, o.PlacementMessage)
		setReady(gc, false, o.PlacementReason, o.PlacementMessage)
	case o.Err != nil:
		setCondition(gc, gitopsv1beta1.PlacementResolvedCondition, true, gitopsv1beta1.ReasonSucceeded, fmt.Sprintf("Placement %s selects %d clusters", placement, o.Selected))
		setReady(gc, false, gitopsv1beta1.ReasonReconcileError, "Retrying: "+o.Err.Error())
	default:
		setCondition(gc, gitopsv1beta1.PlacementResolvedCondition, true, gitopsv1beta1.ReasonSucceeded, fmt.Sprintf("Placement %s selects %d clusters", placement, o.Selected))
		switch {
		case len(o.Conflicts) > 0:
			msg := fmt.Sprintf("Secrets not created by argocd-pull already exist in %s, left alone: %s; rename or delete them", argoNS, strings.Join(o.Conflicts, ", "))
			setCondition(gc, gitopsv1beta1.ClustersRegisteredCondition, false, gitopsv1beta1.ReasonSecretConflict, msg)
			setReady(gc, false, gitopsv1beta1.ReasonSecretConflict, msg)
		case o.Selected == 0:
			msg := fmt.Sprintf("Placement %s selects no cluster: check its predicates and the ManagedClusterSetBindings in %s", placement, gc.Namespace)
			setCondition(gc, gitopsv1beta1.ClustersRegisteredCondition, false, gitopsv1beta1.ReasonNoClustersSelected, msg)
			setReady(gc, false, gitopsv1beta1.ReasonNoClustersSelected, msg)
		default:
			msg := fmt.Sprintf("%d cluster secrets in %s", o.Registered, argoNS)
			if len(o.Upstream) > 0 {
				msg += fmt.Sprintf(" (RHACM's secrets register %s: argocd-pull writes none for them while those exist)", strings.Join(o.Upstream, ", "))
			}
			if len(o.Missing) > 0 {
				msg += fmt.Sprintf("; no ManagedCluster for %s", strings.Join(o.Missing, ", "))
			}
			if shared := sharedClause(o); shared != "" {
				msg += "; " + shared
			}
			setCondition(gc, gitopsv1beta1.ClustersRegisteredCondition, true, gitopsv1beta1.ReasonSucceeded, msg)
			setReady(gc, true, gitopsv1beta1.ReasonSucceeded, msg)
		}
	}
	setAccess(gc, o)
	ready := meta.FindStatusCondition(gc.Status.Conditions, gitopsv1beta1.ReadyCondition)
	gc.Status.Phase, gc.Status.Message = gitopsv1beta1.PhaseFailed, ready.Message
	if ready.Status == metav1.ConditionTrue {
		gc.Status.Phase = gitopsv1beta1.PhaseSuccessful
		gc.Status.ObservedGeneration = gc.Generation
	}
}

// setAccess sets the ClusterAccess condition of a GitOpsCluster that asks for OCM's channel, from
// the clusters it registered this time, and removes it from one that does not.
func setAccess(gc *gitopsv1beta1.GitOpsCluster, o Observation) {
	ref := gc.Spec.ManagedServiceAccountRef
	if ref == "" {
		meta.RemoveStatusCondition(&gc.Status.Conditions, gitopsv1beta1.ClusterAccessCondition)
		return
	}
	if o.Refusal.Refused() || o.PlacementReason != "" || o.Err != nil {
		return // nothing registered this time: the condition stays as it was
	}
	shared := ""
	if clause := sharedClause(o); clause != "" {
		shared = "; " + clause
	}
	if len(o.Unreached) == 0 {
		setCondition(gc, gitopsv1beta1.ClusterAccessCondition, true, gitopsv1beta1.ReasonSucceeded, fmt.Sprintf(
			"%d cluster secrets reach their clusters through cluster-proxy, with ManagedServiceAccount %s's token%s", o.Reached, ref, shared))
		return
	}
	var named []string
	for i, u := range o.Unreached {
		if i == maxUnreachedNamed {
			named = append(named, fmt.Sprintf("and %d more", len(o.Unreached)-i))
			break
		}
		named = append(named, u.Cluster+": "+u.Why.Message)
	}
	setCondition(gc, gitopsv1beta1.ClusterAccessCondition, false, o.Unreached[0].Why.Reason, fmt.Sprintf(
		"%d of %d cluster secrets are credential-free (the hub cannot show their live objects): %s%s",
		len(o.Unreached), o.Reached+len(o.Unreached), strings.Join(named, "; "), shared))
}

func setCondition(gc *gitopsv1beta1.GitOpsCluster, t string, ok bool, reason, msg string) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&gc.Status.Conditions, metav1.Condition{Type: t, Status: status, Reason: reason, Message: msg, ObservedGeneration: gc.Generation})
}

func setReady(gc *gitopsv1beta1.GitOpsCluster, ok bool, reason, msg string) {
	setCondition(gc, gitopsv1beta1.ReadyCondition, ok, reason, msg)
}
