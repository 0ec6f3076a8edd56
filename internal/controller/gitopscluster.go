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
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/argocd-pull/argocd-pull/api"
	gitopsv1beta1 "github.com/argocd-pull/argocd-pull/api/v1beta1"
	"github.com/argocd-pull/argocd-pull/internal/clusteraccess"
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
	// tokens reads, straight from the apiserver, what the cache does not hold: the token Secrets
	// of the ManagedServiceAccounts (by name: the RBAC grants get on those names only) and the
	// works of their rights.
	tokens client.Reader
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
	b := ctrl.NewControllerManagedBy(mgr).
		WatchesRawSource(source.Kind[client.Object](c, secretMetadata(), handler.EnqueueRequestsFromMapFunc(r.byClaims))).
		Named("gitopscluster").
		WithOptions(opts).
		For(&gitopsv1beta1.GitOpsCluster{}).
		Watches(&clusterv1beta1.Placement{}, handler.EnqueueRequestsFromMapFunc(r.byPlacement)).
		Watches(&clusterv1beta1.PlacementDecision{}, handler.EnqueueRequestsFromMapFunc(r.byPlacement)).
		Watches(&clusterv1.ManagedCluster{}, handler.EnqueueRequestsFromMapFunc(r.all)).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.byClaims))
	if r.Options.Channel.Configured() {
		// An add-on of the channel becoming available (or not) on a cluster changes its secret.
		channelAddOn := predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetName() == clusteraccess.ClusterProxyAddOn || o.GetName() == clusteraccess.ManagedServiceAccountAddOn
		})
		b = b.Watches(&addonv1alpha1.ManagedClusterAddOn{}, handler.EnqueueRequestsFromMapFunc(r.all), builder.WithPredicates(channelAddOn))
		accounts, err := accountsCache(mgr)
		if err != nil {
			return err
		}
		if accounts != nil {
			b = b.WatchesRawSource(source.Kind[client.Object](accounts, accountMetadata(), handler.EnqueueRequestsFromMapFunc(byAccountOwner)))
		}
	}
	return b.Complete(r)
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
	askers, err := r.channelAskers(ctx, gc, clusters)
	if observed.Err = err; err != nil {
		return result, observed
	}
	if observed.Err = r.ensureSecrets(ctx, gc, clusters, askers, &observed); observed.Err != nil {
		return result, observed
	}
	if result, observed.Err = r.removeUnselected(ctx, gc, clusters); observed.Err != nil {
		return result, observed
	}
	observed.Err = r.sweepGrants(ctx, gc, clusters, askers)
	if observed.Recheck > 0 {
		result = soonest(result, observed.Recheck)
	}
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
	if err := r.sweepGrants(ctx, gc, nil, nil); err != nil {
		return err
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
	if access := meta.FindStatusCondition(gc.Status.Conditions, gitopsv1beta1.ClusterAccessCondition); access != nil {
		if old := meta.FindStatusCondition(before.Status.Conditions, gitopsv1beta1.ClusterAccessCondition); old == nil || old.Reason != access.Reason || old.Status != access.Status {
			eventType := corev1.EventTypeNormal
			if access.Status != metav1.ConditionTrue {
				eventType = corev1.EventTypeWarning
			}
			r.Recorder.Eventf(gc, nil, eventType, access.Reason, "ClusterAccess", access.Message)
		}
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
