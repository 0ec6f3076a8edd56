package controller

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/propagation"
	"github.com/argocd-pull/argocd-pull/internal/search"
)

// reportSearch feeds OCM Search answers into the reports: it tells the poller which managed-
// cluster Applications to ask about (only those argocd-pull delivers), and requeues the reports
// whose answers changed.
type reportSearch struct {
	reader client.Reader
	poller *search.Poller
	events chan event.GenericEvent
}

// newReportSearch returns the Search source of the reports, polling every opts.SearchInterval.
// The caller adds its poller to the manager.
func newReportSearch(reader client.Reader, opts Options) (*reportSearch, error) {
	c, err := search.New(opts.Search)
	if err != nil {
		return nil, err
	}
	s := &reportSearch{reader: reader, events: make(chan event.GenericEvent, 1024)}
	s.poller = &search.Poller{Client: c, Interval: opts.SearchInterval, Tracked: s.tracked, Changed: s.changed}
	return s, nil
}

// tracked lists the managed-cluster Applications of every pull-model ApplicationSet.
func (s *reportSearch) tracked(ctx context.Context) (map[search.AppKey]types.NamespacedName, error) {
	apps := argocd.NewApplicationList()
	if err := s.reader.List(ctx, apps); err != nil {
		return nil, fmt.Errorf("listing Applications for Search: %w", err)
	}
	out := map[search.AppKey]types.NamespacedName{}
	for i := range apps.Items {
		app := &apps.Items[i]
		appSet, owned := argocd.OwningApplicationSet(app)
		target, pull, err := propagation.Decide(app)
		if !owned || !pull || err != nil {
			continue
		}
		out[search.AppKey{Cluster: target.Cluster, Namespace: target.AppNamespace, Name: app.GetName()}] = types.NamespacedName{Namespace: app.GetNamespace(), Name: appSet}
	}
	return out, nil
}

// changed requeues the reports whose Search answers changed.
func (s *reportSearch) changed(appSets []types.NamespacedName) {
	for _, key := range appSets {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(argocd.ApplicationSetGVK)
		u.SetNamespace(key.Namespace)
		u.SetName(key.Name)
		s.events <- event.GenericEvent{Object: u}
	}
}
