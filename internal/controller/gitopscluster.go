package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/argocd-pull/argocd-pull/api"
	gitopsv1beta1 "github.com/argocd-pull/argocd-pull/api/v1beta1"
	"github.com/argocd-pull/argocd-pull/internal/gitops"
)

// placementReaderRole is the Role (and RoleBinding) that lets the ApplicationSet controller read
// Placements and PlacementDecisions in the Argo CD namespace.
const placementReaderRole = "argocd-pull-placement-reader"

// GitOpsClusterReconciler registers the clusters a Placement selects with the hub's Argo CD, as
// credential-free cluster secrets in the Argo CD namespace.
type GitOpsClusterReconciler struct {
	client.Client
	Recorder events.EventRecorder
	Options  Options
	// rhacmSecrets holds the metadata of RHACM's cluster secrets in the Argo CD namespaces (the
	// manager's cache holds argocd-pull's secrets only).
	rhacmSecrets cache.Cache
}

// +kubebuilder:rbac:groups=apps.open-cluster-management.io,resources=gitopsclusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=apps.open-cluster-management.io,resources=gitopsclusters/status,verbs=update;patch
// +kubebuilder:rbac:groups=apps.open-cluster-management.io,resources=gitopsclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=cluster.open-cluster-management.io,resources=placements,verbs=get;list;watch
//
// Secrets, ConfigMaps, Roles and RoleBindings: only in the Argo CD namespaces the install names,
// by a Role in each (config/argocd-namespace/role.yaml, the chart's argocd-namespace-rbac.yaml),
// never cluster-wide. The placement reader Role this controller creates grants no more than the
// ClusterRole's placements and placementdecisions get/list/watch, so it needs neither escalate
// nor bind.

// SetupWithManager registers the reconciler and its watches.
func (r *GitOpsClusterReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	namespaces := map[string]cache.Config{}
	for _, ns := range r.Options.ArgoCDNamespaces() {
		namespaces[ns] = cache.Config{LabelSelector: labels.SelectorFromSet(gitops.UpstreamSecretSelector())}
	}
	c, err := cache.New(mgr.GetConfig(), cache.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), DefaultNamespaces: namespaces})
	if err != nil {
		return fmt.Errorf("creating the cache of RHACM's cluster secrets: %w", err)
	}
	if err := mgr.Add(c); err != nil {
		return fmt.Errorf("adding the cache of RHACM's cluster secrets: %w", err)
	}
	r.rhacmSecrets = c
	return ctrl.NewControllerManagedBy(mgr).
		WatchesRawSource(source.Kind[client.Object](c, secretMetadata(), handler.EnqueueRequestsFromMapFunc(r.byClaims))).
		Named("gitopscluster").
		WithOptions(opts).
		For(&gitopsv1beta1.GitOpsCluster{}).
		Watches(&clusterv1beta1.Placement{}, handler.EnqueueRequestsFromMapFunc(r.byPlacement)).
		Watches(&clusterv1beta1.PlacementDecision{}, handler.EnqueueRequestsFromMapFunc(r.byPlacement)).
		Watches(&clusterv1.ManagedCluster{}, handler.EnqueueRequestsFromMapFunc(r.all)).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.byClaims)).
		Complete(r)
}

// Reconcile brings the cluster secrets of one GitOpsCluster in line with its Placement.
func (r *GitOpsClusterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	gc := &gitopsv1beta1.GitOpsCluster{}
	if err := r.Get(ctx, req.NamespacedName, gc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !gc.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, gc)
	}
	if !controllerutil.ContainsFinalizer(gc, api.GitOpsClusterFinalizer) {
		patch := client.MergeFrom(gc.DeepCopy())
		controllerutil.AddFinalizer(gc, api.GitOpsClusterFinalizer)
		return ctrl.Result{}, r.Patch(ctx, gc, patch)
	}

	before := gc.DeepCopy()
	result, observed := r.reconcile(ctx, gc)
	// Status is derived in one place from what the reconcile observed, and written once.
	gitops.SetStatus(gc, observed)
	return result, errors.Join(observed.Err, r.patchStatus(ctx, before, gc))
}

// reconcile does the work and returns what it observed; a failed read or write is observed.Err.
func (r *GitOpsClusterReconciler) reconcile(ctx context.Context, gc *gitopsv1beta1.GitOpsCluster) (result ctrl.Result, observed gitops.Observation) {
	argoNS := gc.Spec.ArgoServer.ArgoNamespace
	if observed.Refusal = gitops.DecideArgoNamespace(gc.Namespace, argoNS, r.Options.ArgoCDNamespaces(), r.Options.ArgoCDNamespaceGrants); observed.Refusal.Refused() {
		return result, observed
	}
	clusters, reason, msg, err := r.selectedClusters(ctx, gc)
	observed.Selected, observed.PlacementReason, observed.PlacementMessage, observed.Err = len(clusters), reason, msg, err
	if err != nil || reason != "" {
		return result, observed
	}
	if observed.Err = r.ensurePlacementGenerator(ctx, argoNS); observed.Err != nil {
		return result, observed
	}
	if observed.Err = r.ensureSecrets(ctx, gc, clusters, &observed); observed.Err != nil {
		return result, observed
	}
	result, observed.Err = r.removeUnselected(ctx, gc, clusters)
	return result, observed
}

// selectedClusters reads the Placement, in the GitOpsCluster's own namespace, and all pages of
// its decisions. A non-empty reason says why it could not.
func (r *GitOpsClusterReconciler) selectedClusters(ctx context.Context, gc *gitopsv1beta1.GitOpsCluster) (clusters []string, reason, msg string, err error) {
	ref := gc.Spec.PlacementRef
	if ref == nil || ref.Name == "" || (ref.Kind != "" && ref.Kind != "Placement") {
		return nil, gitopsv1beta1.ReasonPlacementNotFound, "spec.placementRef must name a Placement (kind: Placement)", nil
	}
	if ref.Namespace != "" && ref.Namespace != gc.Namespace {
		return nil, gitopsv1beta1.ReasonPlacementNotAllowed, fmt.Sprintf(
			"Placement %s/%s is in another namespace: a GitOpsCluster may only use Placements of its own namespace %s", ref.Namespace, ref.Name, gc.Namespace), nil
	}
	placement := &clusterv1beta1.Placement{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: gc.Namespace, Name: ref.Name}, placement); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, gitopsv1beta1.ReasonPlacementNotFound, fmt.Sprintf("Placement %s not found in namespace %s", ref.Name, gc.Namespace), nil
		}
		return nil, "", "", fmt.Errorf("reading Placement %s: %w", ref.Name, err)
	}
	decisions := &clusterv1beta1.PlacementDecisionList{}
	if err := r.List(ctx, decisions, client.InNamespace(gc.Namespace), client.MatchingLabels{clusterv1beta1.PlacementLabel: ref.Name}); err != nil {
		return nil, "", "", fmt.Errorf("listing the decisions of Placement %s: %w", ref.Name, err)
	}
	seen := map[string]bool{}
	for _, d := range decisions.Items {
		for _, cd := range d.Status.Decisions {
			if cd.ClusterName != "" && !seen[cd.ClusterName] {
				seen[cd.ClusterName] = true
				clusters = append(clusters, cd.ClusterName)
			}
		}
	}
	sort.Strings(clusters)
	return clusters, "", "", nil
}

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
func (r *GitOpsClusterReconciler) ensureSecrets(ctx context.Context, gc *gitopsv1beta1.GitOpsCluster, clusters []string, o *gitops.Observation) error {
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
		desired := gitops.ClusterSecret(mc, argoNS, claim)
		existing := &corev1.Secret{}
		// The cache holds only secrets argocd-pull created: any other secret reads as not found.
		err := r.Get(ctx, client.ObjectKeyFromObject(desired), existing)
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("reading secret %s/%s: %w", argoNS, desired.Name, err)
		}
		found := err == nil
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
			updated, changed := gitops.Register(existing, desired, claim)
			if !changed {
				break
			}
			log.Info("Updating cluster secret", "secret", klog.KObj(updated), "claims", updated.Annotations[api.ClaimsAnnotation])
			if err := r.Update(ctx, updated); err != nil {
				return fmt.Errorf("updating secret %s/%s: %w", argoNS, desired.Name, err)
			}
		}
		o.Registered++
	}
	return nil
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

// ensurePlacementGenerator creates, when missing, the documents' placement generator ConfigMap
// and the Role and RoleBinding that let the ApplicationSet controller read PlacementDecisions.
// Existing ones (created by hand, as the documents tell) are left alone.
func (r *GitOpsClusterReconciler) ensurePlacementGenerator(ctx context.Context, ns string) error {
	labels := map[string]string{api.ManagedByLabel: api.ManagedByValue}
	objects := []client.Object{
		gitops.PlacementGenerator(ns),
		&rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: placementReaderRole, Namespace: ns, Labels: labels},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{clusterv1beta1.GroupName}, Resources: []string{"placements", "placementdecisions"}, Verbs: []string{"get", "list", "watch"}}},
		},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: placementReaderRole, Namespace: ns, Labels: labels},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: placementReaderRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: r.Options.ApplicationSetServiceAccount, Namespace: ns}},
		},
	}
	for _, o := range objects {
		existing := o.DeepCopyObject().(client.Object)
		if err := r.Get(ctx, client.ObjectKeyFromObject(o), existing); err == nil {
			continue
		}
		if err := r.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s/%s: %w", o, ns, o.GetName(), err)
		}
	}
	return nil
}

// finalize deletes the secrets only this GitOpsCluster claims, releases those another relies on,
// then lets it go. Outside the install's Argo CD namespaces it has written nothing (and argocd-pull
// may read nothing there).
func (r *GitOpsClusterReconciler) finalize(ctx context.Context, gc *gitopsv1beta1.GitOpsCluster) error {
	if !controllerutil.ContainsFinalizer(gc, api.GitOpsClusterFinalizer) {
		return nil
	}
	if slices.Contains(r.Options.ArgoCDNamespaces(), gc.Spec.ArgoServer.ArgoNamespace) {
		secrets, err := r.claimedSecrets(ctx, gc)
		if err != nil {
			return err
		}
		for i := range secrets {
			s := &secrets[i]
			relied, err := r.reliedOnByOthers(ctx, gc, s)
			switch {
			case err != nil:
				return err
			case relied:
				err = r.release(ctx, gc, s)
			default:
				ctrl.LoggerFrom(ctx).Info("Deleting the cluster secret of a deleted GitOpsCluster", "secret", klog.KObj(s))
				err = client.IgnoreNotFound(r.Delete(ctx, s))
			}
			if err != nil {
				return fmt.Errorf("removing the claim of GitOpsCluster %s/%s on secret %s/%s: %w", gc.Namespace, gc.Name, s.Namespace, s.Name, err)
			}
		}
	}
	patch := client.MergeFrom(gc.DeepCopy())
	controllerutil.RemoveFinalizer(gc, api.GitOpsClusterFinalizer)
	return client.IgnoreNotFound(r.Patch(ctx, gc, patch))
}

// patchStatus writes the status derived during the reconcile, once, when it changed, with an
// event when Ready changed.
func (r *GitOpsClusterReconciler) patchStatus(ctx context.Context, before, gc *gitopsv1beta1.GitOpsCluster) error {
	ready := meta.FindStatusCondition(gc.Status.Conditions, gitopsv1beta1.ReadyCondition)
	if equality.Semantic.DeepEqual(before.Status.Conditions, gc.Status.Conditions) && before.Status.Phase == gc.Status.Phase &&
		before.Status.Message == gc.Status.Message && before.Status.ObservedGeneration == gc.Status.ObservedGeneration {
		return nil
	}
	gc.Status.LastUpdateTime = metav1.Now()
	if old := meta.FindStatusCondition(before.Status.Conditions, gitopsv1beta1.ReadyCondition); old == nil || old.Reason != ready.Reason || old.Status != ready.Status {
		eventType := corev1.EventTypeNormal
		if ready.Status != metav1.ConditionTrue {
			eventType = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(gc, nil, eventType, ready.Reason, "Reconcile", ready.Message)
	}
	if err := r.Status().Patch(ctx, gc, client.MergeFrom(before)); err != nil {
		return client.IgnoreNotFound(err)
	}
	return nil
}

func soonest(r ctrl.Result, after time.Duration) ctrl.Result {
	if after <= 0 {
		after = time.Second
	}
	if r.RequeueAfter == 0 || after < r.RequeueAfter {
		r.RequeueAfter = after
	}
	return r
}

// byPlacement maps a Placement or PlacementDecision to the GitOpsClusters of its namespace that
// reference the placement.
func (r *GitOpsClusterReconciler) byPlacement(ctx context.Context, o client.Object) []reconcile.Request {
	placement := o.GetName()
	if p, ok := o.GetLabels()[clusterv1beta1.PlacementLabel]; ok {
		placement = p
	}
	list := &gitopsv1beta1.GitOpsClusterList{}
	if err := r.List(ctx, list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, gc := range list.Items {
		if gc.Spec.PlacementRef != nil && gc.Spec.PlacementRef.Name == placement {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&gc)})
		}
	}
	return reqs
}

// all maps a ManagedCluster change to every GitOpsCluster (there are few).
func (r *GitOpsClusterReconciler) all(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &gitopsv1beta1.GitOpsClusterList{}
	if err := r.List(ctx, list); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, gc := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&gc)})
	}
	return reqs
}

// byClaims maps a cluster secret to the GitOpsClusters that claim it and to every GitOpsCluster
// writing into its namespace: one may select its cluster without having claimed it yet (two
// registering the same cluster at once: the second one's create failed as already existing).
func (r *GitOpsClusterReconciler) byClaims(ctx context.Context, o client.Object) []reconcile.Request {
	seen := map[types.NamespacedName]bool{}
	for _, c := range gitops.Claims(o) {
		if ns, name, ok := strings.Cut(c, "/"); ok {
			seen[types.NamespacedName{Namespace: ns, Name: name}] = true
		}
	}
	list := &gitopsv1beta1.GitOpsClusterList{}
	if err := r.List(ctx, list); err == nil {
		for _, gc := range list.Items {
			if gc.Spec.ArgoServer.ArgoNamespace == o.GetNamespace() {
				seen[client.ObjectKeyFromObject(&gc)] = true
			}
		}
	}
	reqs := make([]reconcile.Request, 0, len(seen))
	for key := range seen {
		reqs = append(reqs, reconcile.Request{NamespacedName: key})
	}
	return reqs
}
