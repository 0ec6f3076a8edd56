// Package takeover lists what the controller does, with --adopt-upstream-works, with each work of
// the upstream pull controllers on the hub (argocd-pull takeover --dry-run): it reads what the
// propagation controller reads (internal/gather) and decides with the same ladder
// (manifestwork/takeover.go). It only reads.
package takeover

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/gather"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/propagation"
)

// What the controller does with an upstream work.
const (
	// PlanAdopt: argocd-pull writes its work, then releases and deletes this one.
	PlanAdopt = "adopt"
	// PlanAdopting: the takeover is under way; Detail says the next step.
	PlanAdopting = "adopting"
	// PlanBlocked: the Application is refused (Detail: the reason and what to do); the work is
	// left as it is.
	PlanBlocked = "blocked"
	// PlanLeft: not argocd-pull's to take (its hub Application is gone, or not a pull-model one).
	PlanLeft = "left"
)

// Entry is what the controller does with one upstream work.
type Entry struct {
	Cluster     string `json:"cluster"`
	Application string `json:"application"`
	Work        string `json:"manifestWork"`
	Writer      string `json:"writer"`
	Plan        string `json:"plan"`
	Detail      string `json:"detail"`
}

// List reads every upstream work on the hub and says what the controller, run with policy and
// adoption on, does with it; sorted by cluster, then Application.
func List(ctx context.Context, c client.Reader, policy propagation.Policy) ([]Entry, error) {
	policy.AdoptUpstream = true
	works := &gather.Listed{Reader: c}
	upstream, err := works.AllUpstream(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(upstream))
	for i := range upstream {
		e, err := entry(ctx, c, works, policy, &upstream[i])
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int {
		if a.Cluster != b.Cluster {
			return cmp.Compare(a.Cluster, b.Cluster)
		}
		return cmp.Compare(a.Application+"/"+a.Work, b.Application+"/"+b.Work)
	})
	return out, nil
}

// entry reads what the propagation controller reads about the hub Application upstream names
// (gather.Read), and decides.
func entry(ctx context.Context, c client.Reader, works gather.Works, policy propagation.Policy, upstream *workv1.ManifestWork) (Entry, error) {
	key, _ := manifestwork.HubApplicationOf(upstream)
	e := Entry{Cluster: upstream.Namespace, Application: key.String(), Work: upstream.Name, Writer: manifestwork.UpstreamWriter(upstream)}
	app := argocd.NewApplication()
	switch err := c.Get(ctx, key, app); {
	case apierrors.IsNotFound(err):
		return PlanEntry(e, nil, propagation.Facts{}, nil), nil
	case err != nil:
		return e, fmt.Errorf("reading Application %s: %w", key, err)
	}
	target, pull, err := manifestwork.ReadMarkers(app)
	if err != nil || !pull {
		return PlanEntry(e, app, propagation.Facts{}, err), nil
	}
	g, err := gather.Read(ctx, c, works, policy, app, target)
	if err != nil {
		return e, err
	}
	facts := g.Facts
	// This entry is about this upstream work: the controller acts on it once it is the oldest.
	facts.Upstream = nil
	if upstream.Namespace == target.Cluster {
		facts.Upstream = upstream
	}
	facts.NewDeliveryID = func() string { return "takeover" }
	return PlanEntry(e, app, facts, nil), nil
}

// PlanEntry fills the plan of e, the upstream work facts.Upstream (nil when it is not on the
// Application's cluster) of app (nil when it does not exist), from the ladder's verdict on facts;
// markersErr is the Application's invalid markers, if any.
func PlanEntry(e Entry, app *unstructured.Unstructured, facts propagation.Facts, markersErr error) Entry {
	switch {
	case app == nil:
		e.Plan, e.Detail = PlanLeft, "its hub Application does not exist: argocd-pull leaves the work (the upstream controller would delete it)"
		return e
	case markersErr != nil:
		e.Plan, e.Detail = PlanBlocked, propagation.ReasonInvalidMarkers+": "+markersErr.Error()
		return e
	case facts.App == nil:
		e.Plan, e.Detail = PlanLeft, "its hub Application is not a pull-model one: argocd-pull leaves the work"
		return e
	case facts.Upstream == nil:
		e.Plan, e.Detail = PlanLeft, "its hub Application now names another cluster: argocd-pull leaves the work"
		return e
	}
	v, err := propagation.Ladder(facts)
	switch {
	case err != nil:
		e.Plan, e.Detail = PlanBlocked, err.Error()
	case v.Refusal != nil:
		e.Plan, e.Detail = PlanBlocked, v.Refusal.Reason+": "+v.Refusal.Message
	case facts.Existing == nil:
		e.Plan, e.Detail = PlanAdopt, "argocd-pull writes its ManifestWork, then releases and deletes this one once the agent applied each"
	default:
		e.Plan = PlanAdopting
		switch manifestwork.NextTakeoverStep(facts.Existing, facts.Upstream) {
		case manifestwork.TakeoverRelease:
			e.Detail = "next: release this work (ManifestWork " + facts.Existing.Name + " holds the Application)"
		case manifestwork.TakeoverDelete:
			e.Detail = "next: delete this released work"
		default:
			e.Detail = "waiting for the work agent to apply ManifestWork " + facts.Existing.Name + " or this work's release"
		}
	}
	return e
}
