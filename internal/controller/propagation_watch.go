// What wakes the propagation controller: its watches, and which Applications each event concerns.

package controller

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/propagation"
)

// +kubebuilder:rbac:groups=argoproj.io,resources=applications,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=argoproj.io,resources=appprojects,verbs=get;list;watch
// +kubebuilder:rbac:groups=work.open-cluster-management.io,resources=manifestworks,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=cluster.open-cluster-management.io,resources=managedclusters;managedclustersets,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.open-cluster-management.io,resources=managedclustersetbindings;placementdecisions,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers the reconciler and its watches.
func (r *PropagationReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	upstream, err := newUpstreamWorks(mgr)
	if err != nil {
		return err
	}
	r.upstream = upstream
	if r.probes, err = newClaimProbes(mgr); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).WatchesRawSource(r.probes.source())
	for _, s := range upstream.sources() {
		b = b.WatchesRawSource(s)
	}
	return b.
		Named("propagation").
		WithOptions(opts).
		For(argocd.NewApplication(), builder.WithPredicates(beyondStatus(), observeChanges(&r.changed))).
		Watches(argocd.NewApplication(), requestsFirst()).
		Watches(&workv1.ManifestWork{}, handler.EnqueueRequestsFromMapFunc(requestForHubApplication), builder.WithPredicates(workChangedForPropagation(r.created.take))).
		Watches(&workv1.ManifestWork{}, handler.EnqueueRequestsFromMapFunc(r.appsWaitingOn), builder.WithPredicates(workCameWentOrApplied())).
		Watches(&clusterv1.ManagedCluster{}, handler.EnqueueRequestsFromMapFunc(r.appsOnCluster), builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool { return !equalLabels(e.ObjectOld, e.ObjectNew) },
		})).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.appsOnCluster), builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(event.UpdateEvent) bool { return false },
		})).
		Watches(&clusterv1beta2.ManagedClusterSetBinding{}, handler.EnqueueRequestsFromMapFunc(r.appsInNamespace)).
		Watches(&clusterv1beta2.ManagedClusterSet{}, handler.EnqueueRequestsFromMapFunc(r.appsOfSet)).
		Watches(argocd.NewAppProject(), handler.EnqueueRequestsFromMapFunc(r.appsOfProject)).
		Watches(argocd.NewApplicationSet(), handler.EnqueueRequestsFromMapFunc(r.appsOfApplicationSet), builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool {
				return e.ObjectOld.GetAnnotations()[api.PausedAnnotation] != e.ObjectNew.GetAnnotations()[api.PausedAnnotation]
			},
			CreateFunc: func(event.CreateEvent) bool { return false },
		})).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.allApps), builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetNamespace() == r.Options.ArgoCDNamespace && o.GetName() == api.PauseConfigMap
		}))).
		Complete(r)
}

func (r *PropagationReconciler) appsOfApplicationSet(ctx context.Context, o client.Object) []reconcile.Request {
	return applicationRequests(ctx, r.Client, client.MatchingFields{appOwnerIndex: o.GetNamespace() + "/" + o.GetName()})
}

func (r *PropagationReconciler) allApps(ctx context.Context, _ client.Object) []reconcile.Request {
	return applicationRequests(ctx, r.Client)
}

// appsWaitingOn requeues the Applications a work's creation, deletion or application may concern:
// those refused because of a work on the same cluster (ManagedApplicationTaken,
// ManifestWorkNameTaken), which may now be delivered or act (a refused Application's own work
// yields once the other is applied), and, when other works carry the same managed-cluster
// Application, the owners of all of them, this work's included (two created at once: the one that
// is not the oldest must learn of the other, whichever event comes first). Called for every work
// created: what it reads comes from the cache without copies.
func (r *PropagationReconciler) appsWaitingOn(ctx context.Context, o client.Object) []reconcile.Request {
	reqs := r.appsRefusedFor(ctx, o)
	others := r.worksCarryingTheSame(ctx, o)
	if len(others) == 0 {
		return reqs
	}
	reqs = append(reqs, requestForHubApplication(ctx, o)...)
	for _, w := range others {
		if key, ok := manifestwork.HubApplicationOf(&w); ok {
			reqs = append(reqs, reconcile.Request{NamespacedName: key})
		}
	}
	return reqs
}

// worksCarryingTheSame lists, from the cache, the other works that carry the managed-cluster
// Application o carries.
func (r *PropagationReconciler) worksCarryingTheSame(ctx context.Context, o client.Object) []workv1.ManifestWork {
	work, ok := o.(*workv1.ManifestWork)
	if !ok {
		return nil
	}
	managed, ok := manifestwork.ManagedApplication(work)
	if !ok {
		return nil
	}
	works := &workv1.ManifestWorkList{}
	if err := r.List(ctx, works, client.InNamespace(work.Namespace), client.MatchingFields{workPayloadIndex: managed}, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing ManifestWorks carrying the same Application", "managedApplication", managed)
		return nil
	}
	others := works.Items[:0]
	for _, w := range works.Items {
		if w.UID != work.UID {
			others = append(others, w)
		}
	}
	return others
}

// appsRefusedFor lists the Applications refused because of a work on o's cluster.
func (r *PropagationReconciler) appsRefusedFor(ctx context.Context, o client.Object) []reconcile.Request {
	apps := argocd.NewApplicationList()
	if err := r.List(ctx, apps, client.MatchingFields{appClusterIndex: o.GetNamespace()}, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing Applications to requeue")
		return nil
	}
	var reqs []reconcile.Request
	for i := range apps.Items {
		msg := propagationError(&apps.Items[i])
		if strings.HasPrefix(msg, propagation.ReasonAlreadyDelivered+":") || strings.HasPrefix(msg, propagation.ReasonWorkNameTaken+":") {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&apps.Items[i])})
		}
	}
	return reqs
}

func (r *PropagationReconciler) appsOnCluster(ctx context.Context, o client.Object) []reconcile.Request {
	return applicationRequests(ctx, r.Client, client.MatchingFields{appClusterIndex: o.GetName()})
}

func (r *PropagationReconciler) appsInNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	return applicationRequests(ctx, r.Client, client.InNamespace(o.GetNamespace()))
}

func (r *PropagationReconciler) appsOfProject(ctx context.Context, o client.Object) []reconcile.Request {
	return applicationRequests(ctx, r.Client, client.MatchingFields{appProjectIndex: o.GetName()})
}

// appsOfSet requeues the Applications of the namespaces bound to a ManagedClusterSet.
func (r *PropagationReconciler) appsOfSet(ctx context.Context, o client.Object) []reconcile.Request {
	bindings := &clusterv1beta2.ManagedClusterSetBindingList{}
	if err := r.List(ctx, bindings); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing ManagedClusterSetBindings to requeue")
		return nil
	}
	var reqs []reconcile.Request
	for _, b := range bindings.Items {
		if b.Spec.ClusterSet == o.GetName() {
			reqs = append(reqs, applicationRequests(ctx, r.Client, client.InNamespace(b.Namespace))...)
		}
	}
	return reqs
}
