package controller

import (
	"context"
	"fmt"

	"strings"

	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
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

// tracked lists the managed-cluster Applications argocd-pull delivers for ApplicationSets: read
// from the works it wrote (so only Applications that passed the propagation ladder: an allowed
// namespace, a bound cluster, the namespace the hub computed), each with the ApplicationSet of
// the work's hub Application. Nothing a tenant writes elsewhere makes the controller ask Search.
func (s *reportSearch) tracked(ctx context.Context) (map[search.AppKey]types.NamespacedName, error) {
	works := &workv1.ManifestWorkList{}
	if err := s.reader.List(ctx, works, client.HasLabels{api.ApplicationSetLabel}); err != nil {
		return nil, fmt.Errorf("listing ManifestWorks for Search: %w", err)
	}
	out := map[search.AppKey]types.NamespacedName{}
	for i := range works.Items {
		w := &works.Items[i]
		hubApp, linked := manifestwork.HubApplicationOf(w)
		appSetNamespace, appSet, owned := strings.Cut(w.Annotations[api.HostingApplicationSetAnnotation], "/")
		key, ok := searchKeyOf(w)
		if !linked || !owned || !ok || appSetNamespace != hubApp.Namespace {
			continue
		}
		out[key] = types.NamespacedName{Namespace: appSetNamespace, Name: appSet}
	}
	return out, nil
}

// searchKeyOf is what Search is asked about a work: the Application it carries.
func searchKeyOf(w *workv1.ManifestWork) (search.AppKey, bool) {
	managed, ok := manifestwork.ManagedApplication(w)
	if !ok {
		return search.AppKey{}, false
	}
	parts := strings.SplitN(managed, "/", 3)
	return search.AppKey{Cluster: parts[0], Namespace: parts[1], Name: parts[2]}, true
}

// changed requeues the reports whose Search answers changed.
func (s *reportSearch) changed(appSets []types.NamespacedName) {
	for _, key := range appSets {
		u := argocd.NewApplicationSet()
		u.SetNamespace(key.Namespace)
		u.SetName(key.Name)
		s.events <- event.GenericEvent{Object: u}
	}
}
