// The Argo CD cluster secrets of a GitOpsCluster: written for each selected cluster, released or
// removed when it is no longer selected (internal/gitops decides; this file reads and writes).

package controller

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	gitopsv1beta1 "github.com/argocd-pull/argocd-pull/api/v1beta1"
	"github.com/argocd-pull/argocd-pull/internal/clusteraccess"
	"github.com/argocd-pull/argocd-pull/internal/gitops"
)

// secretMetadata is the metadata of a Secret: its data, which may hold credentials, is never read.
func secretMetadata() *metav1.PartialObjectMetadata {
	o := &metav1.PartialObjectMetadata{}
	o.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	return o
}

// upstreamSecrets maps each cluster registered by a cluster secret of RHACM's GitOpsCluster
// controller in argoNS to that secret's name (see gitops.UpstreamSecrets).
func (r *GitOpsClusterReconciler) upstreamSecrets(ctx context.Context, argoNS string) (map[string]string, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := r.rhacmSecrets.List(ctx, list, client.InNamespace(argoNS)); err != nil {
		return nil, fmt.Errorf("listing RHACM's cluster secrets in %s: %w", argoNS, err)
	}
	return gitops.UpstreamSecrets(list.Items), nil
}

// ensureSecrets creates the secret of each selected cluster, or claims and updates an existing
// one; a cluster that RHACM's cluster secret registers gets none. It records in o what it found.
func (r *GitOpsClusterReconciler) ensureSecrets(ctx context.Context, gc *gitopsv1beta1.GitOpsCluster, clusters []string, askers channelAskers, o *gitops.Observation) error {
	argoNS := gc.Spec.ArgoServer.ArgoNamespace
	claim := gitops.ClaimKey(gc.Namespace, gc.Name)
	log := ctrl.LoggerFrom(ctx)
	theirs, err := r.upstreamSecrets(ctx, argoNS)
	if err != nil {
		return err
	}
	for _, name := range clusters {
		mc := &clusterv1.ManagedCluster{}
		if err := r.Get(ctx, types.NamespacedName{Name: name}, mc); err != nil {
			if apierrors.IsNotFound(err) {
				o.Missing = append(o.Missing, name)
				continue
			}
			return fmt.Errorf("reading ManagedCluster %s: %w", name, err)
		}
		access, err := r.clusterAccess(ctx, gc, name, askers)
		if err != nil {
			return err
		}
		desired := gitops.WithAccess(gitops.ClusterSecret(mc, argoNS, claim), r.Options.Channel, access)
		existing := &corev1.Secret{}
		// The cache holds only secrets argocd-pull created: any other secret reads as not found.
		err = r.Get(ctx, client.ObjectKeyFromObject(desired), existing)
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("reading secret %s/%s: %w", argoNS, desired.Name, err)
		}
		found := err == nil
		shared := false // the secret carries another GitOpsCluster's access
		switch secret, rhacm := theirs[name]; {
		case rhacm:
			// One Argo CD cluster per name: RHACM's secret registers it; ours would be a second.
			o.Upstream = append(o.Upstream, name)
			if !found {
				break
			}
			log.Info("Deleting cluster secret: RHACM's registers the same cluster", "secret", klog.KObj(existing), "rhacmSecret", secret)
			if err := r.Delete(ctx, existing); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting secret %s/%s: %w", argoNS, existing.Name, err)
			}
			r.Recorder.Eventf(gc, nil, corev1.EventTypeNormal, "ClusterRegisteredByRHACM", "Register",
				"Deleted cluster secret %s/%s: RHACM's secret %s registers cluster %s, and Argo CD must see it once", argoNS, existing.Name, secret, name)
		case !found:
			log.Info("Creating cluster secret", "secret", klog.KObj(desired))
			if err := r.Create(ctx, desired); err != nil {
				if apierrors.IsAlreadyExists(err) {
					o.Conflicts = append(o.Conflicts, desired.Name)
					continue
				}
				return fmt.Errorf("creating secret %s/%s: %w", argoNS, desired.Name, err)
			}
			r.Recorder.Eventf(gc, nil, corev1.EventTypeNormal, "ClusterRegistered", "Register", "Created cluster secret %s/%s", argoNS, desired.Name)
		default:
			// Another GitOpsCluster may have registered the cluster first: the secret becomes
			// theirs and ours, so that neither one leaving deletes it under the other.
			updated, changed, instead := gitops.Register(existing, desired, claim)
			if shared = instead != ""; shared {
				o.Shared = append(o.Shared, gitops.Shared{Cluster: name, Holder: instead})
			}
			if !changed {
				break
			}
			log.Info("Updating cluster secret", "secret", klog.KObj(updated), "claims", updated.Annotations[api.ClaimsAnnotation])
			if err := r.Update(ctx, updated); err != nil {
				return fmt.Errorf("updating secret %s/%s: %w", argoNS, desired.Name, err)
			}
		}
		o.Registered++
		if gc.Spec.ManagedServiceAccountRef != "" && !shared {
			if access.UsesChannel() {
				o.Reached++
			} else {
				o.Unreached = append(o.Unreached, gitops.Unreached{Cluster: name, Why: access.Refusal})
			}
			o.Recheck = minPositive(o.Recheck, clusteraccess.RecheckAfter(access, cmp.Or(r.Options.Channel.Recheck, clusteraccess.DefaultRecheck), time.Now()))
		}
	}
	return nil
}

func minPositive(a, b time.Duration) time.Duration {
	if a <= 0 || b < a {
		return b
	}
	return a
}

// claimedSecrets lists the cluster secrets in the GitOpsCluster's Argo CD namespace that carry its claim.
func (r *GitOpsClusterReconciler) claimedSecrets(ctx context.Context, gc *gitopsv1beta1.GitOpsCluster) ([]corev1.Secret, error) {
	secrets := &corev1.SecretList{}
	if err := r.List(ctx, secrets, client.InNamespace(gc.Spec.ArgoServer.ArgoNamespace), client.MatchingLabels{api.ManagedByLabel: api.ManagedByValue}); err != nil {
		return nil, fmt.Errorf("listing the cluster secrets of GitOpsCluster %s/%s: %w", gc.Namespace, gc.Name, err)
	}
	claim := gitops.ClaimKey(gc.Namespace, gc.Name)
	return slices.DeleteFunc(secrets.Items, func(s corev1.Secret) bool { return !gitops.HasClaim(&s, claim) }), nil
}

// reliedOnByOthers reports whether another GitOpsCluster that may claim the secret (it writes
// into the secret's namespace and the namespace rule allows it) claims it or selects its cluster.
// Selecting counts too: a GitOpsCluster may not have claimed the secret yet.
func (r *GitOpsClusterReconciler) reliedOnByOthers(ctx context.Context, gc *gitopsv1beta1.GitOpsCluster, s *corev1.Secret) (bool, error) {
	list := &gitopsv1beta1.GitOpsClusterList{}
	if err := r.List(ctx, list); err != nil {
		return false, fmt.Errorf("listing GitOpsClusters: %w", err)
	}
	cluster := s.Labels[api.ClusterLabel]
	for i := range list.Items {
		other := &list.Items[i]
		if other.Namespace == gc.Namespace && other.Name == gc.Name ||
			!gitops.MayClaim(other, s.Namespace, r.Options.ArgoCDNamespaces(), r.Options.ArgoCDNamespaceGrants) {
			continue
		}
		if gitops.HasClaim(s, gitops.ClaimKey(other.Namespace, other.Name)) {
			return true, nil
		}
		clusters, _, _, err := r.selectedClusters(ctx, other)
		if err != nil {
			return false, err
		}
		if slices.Contains(clusters, cluster) {
			return true, nil
		}
	}
	return false, nil
}

// release drops the GitOpsCluster's claim from a secret another GitOpsCluster relies on.
func (r *GitOpsClusterReconciler) release(ctx context.Context, gc *gitopsv1beta1.GitOpsCluster, s *corev1.Secret) error {
	released := gitops.Release(s, gitops.ClaimKey(gc.Namespace, gc.Name))
	ctrl.LoggerFrom(ctx).Info("Releasing cluster secret another GitOpsCluster relies on", "secret", klog.KObj(s), "claims", released.Annotations[api.ClaimsAnnotation])
	if err := r.Update(ctx, released); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("releasing secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}

// removeUnselected applies the removal rule to the secrets of clusters that left the placement.
func (r *GitOpsClusterReconciler) removeUnselected(ctx context.Context, gc *gitopsv1beta1.GitOpsCluster, selected []string) (ctrl.Result, error) {
	secrets, err := r.claimedSecrets(ctx, gc)
	if err != nil {
		return ctrl.Result{}, err
	}
	now := time.Now()
	var result ctrl.Result
	for i := range secrets {
		s := &secrets[i]
		cluster := s.Labels[api.ClusterLabel]
		if slices.Contains(selected, cluster) {
			continue
		}
		relied, err := r.reliedOnByOthers(ctx, gc, s)
		if err != nil {
			return ctrl.Result{}, err
		}
		since, err := time.Parse(time.RFC3339, s.Annotations[api.UnselectedSinceAnnotation])
		if err != nil && !relied {
			since = now
			patch := client.MergeFrom(s.DeepCopy())
			metav1.SetMetaDataAnnotation(&s.ObjectMeta, api.UnselectedSinceAnnotation, now.UTC().Format(time.RFC3339))
			if err := r.Patch(ctx, s, patch); err != nil {
				return ctrl.Result{}, fmt.Errorf("marking secret %s/%s unselected: %w", s.Namespace, s.Name, err)
			}
		}
		exists := r.Get(ctx, types.NamespacedName{Name: cluster}, &clusterv1.ManagedCluster{}) == nil
		targetedBy := len(applicationRequests(ctx, r.Client, client.MatchingFields{appClusterIndex: cluster}))
		verdict := gitops.DecideRemoval(since, exists, targetedBy, relied, r.Options.SecretGracePeriod, now)
		switch {
		case verdict.Release:
			if err := r.release(ctx, gc, s); err != nil {
				return ctrl.Result{}, err
			}
		case verdict.Delete:
			ctrl.LoggerFrom(ctx).Info("Deleting the secret of a cluster that left the placement", "secret", klog.KObj(s))
			if err := r.Delete(ctx, s); client.IgnoreNotFound(err) != nil {
				return ctrl.Result{}, fmt.Errorf("deleting secret %s/%s: %w", s.Namespace, s.Name, err)
			}
			r.Recorder.Eventf(gc, nil, corev1.EventTypeNormal, "ClusterUnregistered", "Register", "Deleted cluster secret %s/%s", s.Namespace, s.Name)
		case !verdict.After.IsZero():
			result = soonest(result, verdict.After.Sub(now))
		default: // kept while an Application targets it: look again later
			result = soonest(result, time.Minute)
		}
	}
	return result, nil
}
