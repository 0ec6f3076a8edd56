package gather

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

// Listed finds works by listing the hub, for the commands, which have no controller cache and its
// indexes: argocd-pull's works and the upstream controllers' are each listed once, on first use,
// and kept for the command's run.
type Listed struct {
	Reader client.Reader

	ours, upstream, probes []workv1.ManifestWork
	listed                 bool
}

func (l *Listed) list(ctx context.Context) error {
	if l.listed {
		return nil
	}
	ours := &workv1.ManifestWorkList{}
	if err := l.Reader.List(ctx, ours, client.MatchingLabels{api.ManagedByLabel: api.ManagedByValue}); err != nil {
		return fmt.Errorf("listing argocd-pull's ManifestWorks: %w", err)
	}
	l.ours = ours.Items
	for _, selector := range manifestwork.UpstreamSelectors() {
		works := &workv1.ManifestWorkList{}
		if err := l.Reader.List(ctx, works, client.MatchingLabelsSelector{Selector: selector}); err != nil {
			return fmt.Errorf("listing the upstream pull controllers' ManifestWorks: %w", err)
		}
		l.upstream = manifestwork.AppendUpstream(l.upstream, works.Items)
	}
	probes := &workv1.ManifestWorkList{}
	if err := l.Reader.List(ctx, probes, client.MatchingLabels{manifestwork.ProbeLabel: "true"}); err != nil {
		return fmt.Errorf("listing argocd-pull's claim probes: %w", err)
	}
	l.probes = probes.Items
	l.listed = true
	return nil
}

// Probe is the claim probe of cluster, nil when there is none.
func (l *Listed) Probe(ctx context.Context, cluster string) (*workv1.ManifestWork, error) {
	if err := l.list(ctx); err != nil {
		return nil, err
	}
	for i := range l.probes {
		if p := &l.probes[i]; p.Namespace == cluster && manifestwork.IsProbe(p) {
			return p, nil
		}
	}
	return nil, nil
}

// Of are argocd-pull's works that point back to key.
func (l *Listed) Of(ctx context.Context, key types.NamespacedName) ([]workv1.ManifestWork, error) {
	if err := l.list(ctx); err != nil {
		return nil, err
	}
	return pointingBackTo(l.ours, "", key), nil
}

// Carrying are argocd-pull's works on cluster that carry the managed-cluster Application managed.
func (l *Listed) Carrying(ctx context.Context, cluster, managed string) ([]workv1.ManifestWork, error) {
	if err := l.list(ctx); err != nil {
		return nil, err
	}
	var out []workv1.ManifestWork
	for _, w := range l.ours {
		if carried, ok := manifestwork.ManagedApplication(&w); ok && w.Namespace == cluster && carried == managed {
			out = append(out, w)
		}
	}
	return out, nil
}

// AllUpstream are every upstream pull controller's work on the hub, each once.
func (l *Listed) AllUpstream(ctx context.Context) ([]workv1.ManifestWork, error) {
	if err := l.list(ctx); err != nil {
		return nil, err
	}
	return l.upstream, nil
}

// Upstream are the upstream works of key on cluster, oldest first.
func (l *Listed) Upstream(ctx context.Context, cluster string, key types.NamespacedName) ([]workv1.ManifestWork, error) {
	if err := l.list(ctx); err != nil {
		return nil, err
	}
	out := pointingBackTo(l.upstream, cluster, key)
	SortOldestFirst(out)
	return out, nil
}

// pointingBackTo are the works of list that point back to key, on cluster ("" for any).
func pointingBackTo(list []workv1.ManifestWork, cluster string, key types.NamespacedName) []workv1.ManifestWork {
	var out []workv1.ManifestWork
	for _, w := range list {
		if owner, ok := manifestwork.HubApplicationOf(&w); ok && owner == key && (cluster == "" || w.Namespace == cluster) {
			out = append(out, w)
		}
	}
	return out
}

// SortOldestFirst orders works by creation, then name (manifestwork.OlderThan).
func SortOldestFirst(works []workv1.ManifestWork) {
	slices.SortFunc(works, func(a, b workv1.ManifestWork) int {
		switch {
		case manifestwork.OlderThan(&a, &b):
			return -1
		case manifestwork.OlderThan(&b, &a):
			return 1
		}
		return 0
	})
}
