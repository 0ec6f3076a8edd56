package dashboard

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/intern"
)

// NewCache is a cache of what the fleet view reads, with the caller's rights: pull-model
// Applications and ApplicationSets of namespaces (all when empty), the ManifestWorks argocd-pull
// wrote, and the ManagedClusters. Objects are kept slim and share what the fleet repeats, as in
// the controller's cache.
func NewCache(cfg *rest.Config, scheme *runtime.Scheme, namespaces []string) (cache.Cache, error) {
	pullLabelled, err := labels.NewRequirement(api.PullLabel, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	byNamespace := map[string]cache.Config{}
	for _, ns := range namespaces {
		byNamespace[ns] = cache.Config{}
	}
	inNamespaces := func(c cache.ByObject) cache.ByObject {
		if len(byNamespace) > 0 {
			c.Namespaces = byNamespace
		}
		return c
	}
	return cache.New(cfg, cache.Options{
		Scheme:           scheme,
		DefaultTransform: intern.NewTable().CacheTransform(),
		ByObject: map[client.Object]cache.ByObject{
			argocd.NewApplication():    inNamespaces(cache.ByObject{Label: labels.NewSelector().Add(*pullLabelled)}),
			argocd.NewApplicationSet(): inNamespaces(cache.ByObject{}),
			&workv1.ManifestWork{}:     {Label: labels.SelectorFromSet(labels.Set{api.ManagedByLabel: api.ManagedByValue})},
		},
	})
}

// CheckAccess lists one object of each kind the fleet view reads, so that missing rights are said
// plainly before the watches start (an informer without rights retries forever).
func CheckAccess(ctx context.Context, c client.Reader, namespaces []string) error {
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	var problems []string
	check := func(list client.ObjectList, what string, opts ...client.ListOption) {
		err := c.List(ctx, list, append(opts, client.Limit(1))...)
		switch {
		case err == nil:
		case apierrors.IsForbidden(err):
			problems = append(problems, fmt.Sprintf("you may not list %s: the fleet view needs get, list and watch on them", what))
		case apierrors.IsNotFound(err) || strings.Contains(err.Error(), "no matches for kind"):
			problems = append(problems, fmt.Sprintf("the hub has no %s: install its CRD (is this an OCM hub with Argo CD?)", what))
		default:
			problems = append(problems, fmt.Sprintf("listing %s: %v", what, err))
		}
	}
	for _, ns := range namespaces {
		where := "in all namespaces"
		if ns != "" {
			where = "in namespace " + ns
		}
		check(argocd.NewApplicationList(), "Applications (argoproj.io) "+where, client.InNamespace(ns))
		appSets := &unstructured.UnstructuredList{}
		appSets.SetGroupVersionKind(argocd.ApplicationSetGVK.GroupVersion().WithKind("ApplicationSetList"))
		check(appSets, "ApplicationSets (argoproj.io) "+where, client.InNamespace(ns))
	}
	check(&workv1.ManifestWorkList{}, "ManifestWorks (work.open-cluster-management.io) in all namespaces")
	check(&clusterv1.ManagedClusterList{}, "ManagedClusters (cluster.open-cluster-management.io)")
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}

// Feed sends every event of the informers' Applications, ApplicationSets, ManifestWorks and
// ManagedClusters to the fleet. The informers may be the fleet view's own cache (NewCache) or the
// controller's. synced reports whether the fleet has received everything the informers first
// listed (a synced cache may not have handed every object to its handlers yet).
func Feed(ctx context.Context, informers cache.Informers, fleet *Fleet) (synced func() bool, err error) {
	handlers := []struct {
		obj         client.Object
		set, delete func(obj any)
	}{
		{argocd.NewApplication(), func(o any) {
			if u, ok := o.(*unstructured.Unstructured); ok {
				fleet.SetApplication(u)
			}
		}, func(o any) {
			if u, ok := o.(client.Object); ok {
				fleet.DeleteApplication(u.GetNamespace(), u.GetName())
			}
		}},
		{argocd.NewApplicationSet(), func(o any) {
			if u, ok := o.(*unstructured.Unstructured); ok {
				fleet.SetApplicationSet(u)
			}
		}, func(o any) {
			if u, ok := o.(client.Object); ok {
				fleet.DeleteApplicationSet(u.GetNamespace(), u.GetName())
			}
		}},
		{&workv1.ManifestWork{}, func(o any) {
			if w, ok := o.(*workv1.ManifestWork); ok {
				fleet.SetWork(w)
			}
		}, func(o any) {
			if w, ok := o.(*workv1.ManifestWork); ok {
				fleet.DeleteWork(w)
			}
		}},
		{&clusterv1.ManagedCluster{}, func(o any) {
			if c, ok := o.(*clusterv1.ManagedCluster); ok {
				fleet.SetCluster(c)
			}
		}, func(o any) {
			if c, ok := o.(client.Object); ok {
				fleet.DeleteCluster(c.GetName())
			}
		}},
	}
	var registrations []toolscache.ResourceEventHandlerRegistration
	for _, h := range handlers {
		inf, err := informers.GetInformer(ctx, h.obj)
		if err != nil {
			return nil, fmt.Errorf("watching %T: %w", h.obj, err)
		}
		set, del := h.set, h.delete
		reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    set,
			UpdateFunc: func(_, o any) { set(o) },
			DeleteFunc: func(o any) {
				if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
					o = t.Obj
				}
				del(o)
			},
		})
		if err != nil {
			return nil, fmt.Errorf("watching %T: %w", h.obj, err)
		}
		registrations = append(registrations, reg)
	}
	return func() bool {
		for _, r := range registrations {
			if !r.HasSynced() {
				return false
			}
		}
		return true
	}, nil
}
