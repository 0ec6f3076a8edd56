// OCM's channel from the hub to a GitOpsCluster's clusters (spec.managedServiceAccountRef):
// gathers what the hub knows of each cluster's add-ons, account and token, lets
// clusteraccess.DecideAccess decide, and creates the account and delivers its read-only rights
// when that is decided. The token Secret is read by name only, never cached or listed.

package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/argocd-pull/argocd-pull/api"
	gitopsv1beta1 "github.com/argocd-pull/argocd-pull/api/v1beta1"
	"github.com/argocd-pull/argocd-pull/internal/appstatus"
	"github.com/argocd-pull/argocd-pull/internal/clusteraccess"
	"github.com/argocd-pull/argocd-pull/internal/gather"
	"github.com/argocd-pull/argocd-pull/internal/tenancy"
)

// +kubebuilder:rbac:groups=addon.open-cluster-management.io,resources=managedclusteraddons,verbs=get;list;watch
// +kubebuilder:rbac:groups=authentication.open-cluster-management.io,resources=managedserviceaccounts,verbs=get;list;watch;create;delete
//
// The token Secrets: get only, by the names the install lets GitOpsClusters use
// (--managed-serviceaccounts), in a ClusterRole of their own (config/rbac/token_reader_role.yaml,
// the chart's cluster-access-rbac.yaml).

// ManagedServiceAccountGVK is managed-serviceaccount's API, read as unstructured: its Go module
// pins other Kubernetes versions than argocd-pull's.
var ManagedServiceAccountGVK = schema.GroupVersionKind{Group: "authentication.open-cluster-management.io", Version: "v1beta1", Kind: "ManagedServiceAccount"}

// accountValidity is how long the tokens of the ManagedServiceAccounts argocd-pull creates are
// valid; managed-serviceaccount rotates them before they expire.
const accountValidity = "168h"

// clusterAccess decides, for one selected cluster of gc, whether its secret carries OCM's channel,
// and acts on the decision. It reads nothing when gc asks for no channel, or when the install
// could not give it one.
func (r *GitOpsClusterReconciler) clusterAccess(ctx context.Context, gc *gitopsv1beta1.GitOpsCluster, cluster string, askers channelAskers) (clusteraccess.Access, error) {
	ref, ch, now := gc.Spec.ManagedServiceAccountRef, r.Options.Channel, time.Now()
	if ref == "" || !ch.Configured() || !slices.Contains(ch.Accounts, ref) {
		return clusteraccess.DecideAccess(ch, cluster, ref, clusteraccess.Facts{}, now), nil
	}
	if refusal := askers.refusal(cluster); refusal.Refused() {
		return clusteraccess.Access{Refusal: refusal}, nil
	}
	owner := gc.Namespace + "/" + gc.Name
	facts, err := r.accessFacts(ctx, owner, cluster, ref)
	if err != nil {
		return clusteraccess.Access{}, err
	}
	access := clusteraccess.DecideAccess(ch, cluster, ref, facts, now)
	if access.CreateAccount {
		if err := r.createAccount(ctx, owner, cluster, ref); err != nil {
			return access, err
		}
	}
	if access.GrantRights {
		if err := r.grantRights(ctx, *facts.Account); err != nil {
			return access, err
		}
	}
	return access, nil
}

// channelAskers are, for each cluster a GitOpsCluster selects, why it may not ask for OCM's
// channel to it (clusteraccess.DecideAsker; no entry: it may), decided once per reconcile for its
// secrets (clusterAccess) and its accounts (sweepGrants) alike.
type channelAskers map[string]clusteraccess.Refusal

func (a channelAskers) refusal(cluster string) clusteraccess.Refusal { return a[cluster] }

// channelAskers decides the channelAskers of gc's selected clusters, reading its namespace's
// bindings once; none when gc asks for no channel.
func (r *GitOpsClusterReconciler) channelAskers(ctx context.Context, gc *gitopsv1beta1.GitOpsCluster, clusters []string) (channelAskers, error) {
	if gc.Spec.ManagedServiceAccountRef == "" || !r.Options.Channel.Configured() || len(clusters) == 0 {
		return nil, nil
	}
	bindings, err := tenancy.ReadBindings(ctx, r.Client, gc.Namespace)
	if err != nil {
		return nil, err
	}
	out := channelAskers{}
	for _, cluster := range clusters {
		asker := clusteraccess.Asker{Namespace: gc.Namespace, Cluster: cluster, Allowed: r.Options.ArgoCDNamespaces()}
		mc := &clusterv1.ManagedCluster{}
		switch err := r.Get(ctx, types.NamespacedName{Name: cluster}, mc); {
		case apierrors.IsNotFound(err):
			mc = nil
		case err != nil:
			return nil, fmt.Errorf("reading ManagedCluster %s: %w", cluster, err)
		}
		asker.Hub = tenancy.IsHub(cluster, mc)
		if mc != nil {
			asker.Bound, _ = bindings.Allows(mc)
		}
		if refusal := clusteraccess.DecideAsker(asker); refusal.Refused() {
			out[cluster] = refusal
		}
	}
	return out, nil
}

// accessFacts reads the cluster's add-ons, its ManagedServiceAccount named ref, and that
// account's token Secret when the account is argocd-pull's, made for owner (the asking
// GitOpsCluster, "<namespace>/<name>").
func (r *GitOpsClusterReconciler) accessFacts(ctx context.Context, owner, cluster, ref string) (clusteraccess.Facts, error) {
	var f clusteraccess.Facts
	addOns, saNamespace, err := gather.ChannelAddOns(ctx, r.Client, cluster)
	if err != nil {
		return f, err
	}
	f.AddOns = addOns
	msa := &unstructured.Unstructured{}
	msa.SetGroupVersionKind(ManagedServiceAccountGVK)
	switch err := r.Get(ctx, types.NamespacedName{Namespace: cluster, Name: ref}, msa); {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return f, nil
	case err != nil:
		return f, fmt.Errorf("reading ManagedServiceAccount %s/%s: %w", cluster, ref, err)
	}
	f.Account = &clusteraccess.Account{Cluster: cluster, Name: ref, UID: msa.GetUID(), ServiceAccountNamespace: saNamespace, Owner: owner}
	f.Ours = msa.GetLabels()[api.ManagedByLabel] == api.ManagedByValue
	if !f.Ours {
		return f, nil // a tenant's: its token is not read
	}
	if made := msa.GetAnnotations()[clusteraccess.AccountOwnerAnnotation]; made != "" && made != owner {
		f.OtherOwner, f.Account.Owner = made, made
		return f, nil // another GitOpsCluster's: its token is not read for this one
	}
	secret := &corev1.Secret{}
	switch err := r.tokens.Get(ctx, types.NamespacedName{Namespace: cluster, Name: ref}, secret); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return f, fmt.Errorf("reading the token Secret %s/%s: %w", cluster, ref, err)
	default:
		f.TokenSecret = secret
	}
	return f, nil
}

// accountMetadata is the metadata of a ManagedServiceAccount: all the watch needs of it (its owner
// annotation; its resourceVersion moves with each status the agent writes).
func accountMetadata() *metav1.PartialObjectMetadata {
	o := &metav1.PartialObjectMetadata{}
	o.SetGroupVersionKind(ManagedServiceAccountGVK)
	return o
}

// accountsCache is a cache of the metadata of the ManagedServiceAccounts argocd-pull made (its
// label, server-side): managed-serviceaccount's agent writes an account's status after each token
// it writes, a rotation or a new token after the cluster refused the old one (its ServiceAccount
// made again), and that token then reaches the cluster's secret at once rather than at the next
// recheck (the token Secret itself may be read by name only, never watched). nil when
// managed-serviceaccount's API is not installed: the recheck alone finds the tokens then.
func accountsCache(mgr ctrl.Manager) (cache.Cache, error) {
	if _, err := mgr.GetRESTMapper().RESTMapping(ManagedServiceAccountGVK.GroupKind(), ManagedServiceAccountGVK.Version); err != nil {
		mgr.GetLogger().Info("managed-serviceaccount's API is not installed: the channel's tokens are read at each recheck only", "reason", err.Error())
		return nil, nil
	}
	c, err := cache.New(mgr.GetConfig(), cache.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		DefaultLabelSelector: labels.SelectorFromSet(labels.Set{api.ManagedByLabel: api.ManagedByValue})})
	if err != nil {
		return nil, fmt.Errorf("creating the cache of argocd-pull's ManagedServiceAccounts: %w", err)
	}
	if err := mgr.Add(c); err != nil {
		return nil, fmt.Errorf("adding the cache of argocd-pull's ManagedServiceAccounts: %w", err)
	}
	return c, nil
}

// byAccountOwner maps a ManagedServiceAccount argocd-pull made to the GitOpsCluster it made it for.
func byAccountOwner(_ context.Context, o client.Object) []reconcile.Request {
	ns, name, ok := strings.Cut(o.GetAnnotations()[clusteraccess.AccountOwnerAnnotation], "/")
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}

// createAccount creates the ManagedServiceAccount ref in the cluster's namespace, argocd-pull's,
// for the GitOpsCluster owner.
func (r *GitOpsClusterReconciler) createAccount(ctx context.Context, owner, cluster, ref string) error {
	msa := &unstructured.Unstructured{}
	msa.SetGroupVersionKind(ManagedServiceAccountGVK)
	msa.SetNamespace(cluster)
	msa.SetName(ref)
	msa.SetLabels(map[string]string{api.ManagedByLabel: api.ManagedByValue, clusteraccess.OwnerLabel: clusteraccess.OwnerLabelValue(owner)})
	msa.SetAnnotations(map[string]string{clusteraccess.AccountOwnerAnnotation: owner})
	if err := unstructured.SetNestedField(msa.Object, accountValidity, "spec", "rotation", "validity"); err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Creating the ManagedServiceAccount of the hub's way to a cluster", "managedServiceAccount", klog.KObj(msa))
	if err := r.Create(ctx, msa); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ManagedServiceAccount %s/%s: %w", cluster, ref, err)
	}
	return nil
}

// grantRights delivers the account's read-only rights to its cluster (clusteraccess.RightsWork),
// with the API groups of the resources argocd-pull delivered there: what the cluster's Argo CD
// reports in the feedback of argocd-pull's works in the cluster's namespace, frozen ones left out.
// Not an Application's status.resources: Applications have no status subresource, so whoever may
// update one writes them (issue 92).
func (r *GitOpsClusterReconciler) grantRights(ctx context.Context, account clusteraccess.Account) error {
	works := &workv1.ManifestWorkList{}
	if err := r.List(ctx, works, client.InNamespace(account.Cluster), client.MatchingLabels{api.ManagedByLabel: api.ManagedByValue}, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing the ManifestWorks of %s: %w", account.Cluster, err)
	}
	var groups []string
	for i := range works.Items {
		w := &works.Items[i]
		if w.Annotations[api.FrozenAnnotation] != "" {
			continue
		}
		for _, res := range appstatus.ReportedResources(w) {
			if m, ok := res.(map[string]any); ok {
				if g, _ := m["group"].(string); g != "" && !slices.Contains(groups, g) {
					groups = append(groups, g)
				}
			}
		}
	}
	desired, err := clusteraccess.RightsWork(account, groups)
	if err != nil {
		return err
	}
	// Not labelled as argocd-pull's Application works, the work is not in the manager's cache.
	existing := &workv1.ManifestWork{}
	switch err := r.tokens.Get(ctx, client.ObjectKeyFromObject(desired), existing); {
	case apierrors.IsNotFound(err):
		ctrl.LoggerFrom(ctx).Info("Delivering the read-only rights of the hub's account on a cluster", "manifestWork", klog.KObj(desired))
		if err := r.Create(ctx, desired); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ManifestWork %s/%s: %w", desired.Namespace, desired.Name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("reading ManifestWork %s/%s: %w", desired.Namespace, desired.Name, err)
	}
	// The apiserver re-encodes the manifests: the work's annotation says what was written.
	if sameKeys(existing.Annotations, desired.Annotations) && sameKeys(existing.Labels, desired.Labels) {
		return nil
	}
	existing.Spec = desired.Spec
	for k, v := range desired.Labels {
		metav1.SetMetaDataLabel(&existing.ObjectMeta, k, v)
	}
	for k, v := range desired.Annotations {
		metav1.SetMetaDataAnnotation(&existing.ObjectMeta, k, v)
	}
	if err := r.Update(ctx, existing); err != nil {
		return fmt.Errorf("updating ManifestWork %s/%s: %w", desired.Namespace, desired.Name, err)
	}
	return nil
}

// sameKeys reports whether have holds every key of want with its value.
func sameKeys(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// sweepGrants deletes the accounts and rights argocd-pull made for gc (clusteraccess.Grant) that
// it no longer asks for: its managedServiceAccountRef changed or went, a cluster left its
// placement (selected: the clusters it selects now), or it is being deleted. Only gc's own are
// read, by their clusteraccess.OwnerLabel, server-side: another GitOpsCluster's are never looked
// at, whatever it names. The cluster's ServiceAccount goes with its ManagedServiceAccount, and the
// token with it. Nothing is read without the channel, which made none.
func (r *GitOpsClusterReconciler) sweepGrants(ctx context.Context, gc *gitopsv1beta1.GitOpsCluster, selected []string, askers channelAskers) error {
	if !r.Options.Channel.Configured() {
		return nil
	}
	owner := gc.Namespace + "/" + gc.Name
	mine := client.MatchingLabels{clusteraccess.OwnerLabel: clusteraccess.OwnerLabelValue(owner)}
	// Metadata only: a work's name, labels and annotations are all the sweep needs, and works
	// are large.
	works := &metav1.PartialObjectMetadataList{}
	works.SetGroupVersionKind(schema.GroupVersionKind{Group: workv1.GroupName, Version: workv1.GroupVersion.Version, Kind: "ManifestWorkList"})
	if err := r.tokens.List(ctx, works, mine, client.HasLabels{clusteraccess.AccessWorkLabel}); err != nil {
		return fmt.Errorf("listing the works of the rights of GitOpsCluster %s's accounts: %w", owner, err)
	}
	accounts := &metav1.PartialObjectMetadataList{}
	accounts.SetGroupVersionKind(ManagedServiceAccountGVK.GroupVersion().WithKind(ManagedServiceAccountGVK.Kind + "List"))
	switch err := r.tokens.List(ctx, accounts, mine, client.MatchingLabels{api.ManagedByLabel: api.ManagedByValue}); {
	case meta.IsNoMatchError(err): // managed-serviceaccount is not installed: argocd-pull made none
	case err != nil:
		return fmt.Errorf("listing the ManagedServiceAccounts of GitOpsCluster %s: %w", owner, err)
	}
	// The label is a hash: the annotation says whose each one is.
	var made []clusteraccess.Grant
	for _, a := range accounts.Items {
		if a.Annotations[clusteraccess.AccountOwnerAnnotation] == owner {
			made = append(made, clusteraccess.Grant{Cluster: a.Namespace, Account: a.Name})
		}
	}
	for _, w := range works.Items {
		if w.Annotations[clusteraccess.AccountOwnerAnnotation] == owner {
			made = append(made, clusteraccess.Grant{Cluster: w.Namespace, Account: w.Labels[clusteraccess.AccessWorkLabel]})
		}
	}
	var asked []clusteraccess.Grant
	if ref := gc.Spec.ManagedServiceAccountRef; ref != "" && gc.DeletionTimestamp.IsZero() {
		for _, c := range selected {
			// A cluster it may no longer ask for (its binding gone): its account goes.
			if !askers.refusal(c).Refused() {
				asked = append(asked, clusteraccess.Grant{Cluster: c, Account: ref})
			}
		}
	}
	for _, g := range clusteraccess.Unasked(made, asked) {
		ctrl.LoggerFrom(ctx).Info("Removing an account its GitOpsCluster no longer asks for, and its rights", "cluster", g.Cluster, "managedServiceAccount", g.Account)
		work := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: g.Cluster, Name: clusteraccess.AccessWorkName(g.Account)}}
		if err := r.Delete(ctx, work); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting ManifestWork %s/%s: %w", work.Namespace, work.Name, err)
		}
		// Only this GitOpsCluster's: a tenant's account of that name is never deleted.
		if a := findAccount(accounts.Items, g, owner); a != nil {
			if err := r.Delete(ctx, a, client.Preconditions{UID: ptr.To(a.UID)}); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("deleting ManagedServiceAccount %s/%s: %w", g.Cluster, g.Account, err)
			}
		}
	}
	return nil
}

func findAccount(accounts []metav1.PartialObjectMetadata, g clusteraccess.Grant, owner string) *metav1.PartialObjectMetadata {
	for i := range accounts {
		if a := &accounts[i]; a.Namespace == g.Cluster && a.Name == g.Account && a.Annotations[clusteraccess.AccountOwnerAnnotation] == owner {
			return a
		}
	}
	return nil
}
