package doctor

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/gather"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/propagation"
)

const (
	idAppRules    = "pull-application-rules"
	titleAppRules = "Pull-model Applications pass the delivery rules"
)

// refused is a pull-model Application the controller's ladder refuses.
type refused struct {
	app     string // namespace/name
	refusal propagation.Refusal
}

// checkApplicationRules runs the controller's own decision (propagation.Ladder) on every
// pull-model Application of the pull namespaces, from what the hub holds now, as a controller with the
// doctor's --pull-namespaces and --grant-managed-namespaces would.
func checkApplicationRules(ctx context.Context, h *hub) []Result {
	req, err := labels.NewRequirement(api.PullLabel, selection.Exists, nil)
	if err != nil {
		return []Result{readFailed(idAppRules, titleAppRules, "", err)}
	}
	var apps []unstructured.Unstructured
	policy := h.o.policy()
	for _, ns := range policy.Namespaces() {
		list := argocd.NewApplicationList()
		opts := []client.ListOption{client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*req)}}
		if ns != "*" {
			opts = append(opts, client.InNamespace(ns))
		}
		if err := h.o.Hub.Client.List(ctx, list, opts...); err != nil {
			return []Result{readFailed(idAppRules, titleAppRules, "", fmt.Errorf("listing pull-model Applications in %s: %w", ns, err))}
		}
		apps = append(apps, list.Items...)
	}
	var out []refused
	checked := 0
	for i := range apps {
		app := &apps[i]
		target, pull, err := manifestwork.ReadMarkers(app)
		if err == nil && !pull {
			continue
		}
		checked++
		// A new Application's view: the doctor reads no works, and makes no delivery.
		g, err := gather.Read(ctx, h.o.Hub.Client, gather.NoWorks, policy, app, target)
		if err != nil {
			return []Result{readFailed(idAppRules, titleAppRules, "", err)}
		}
		facts := g.Facts
		facts.NewDeliveryID = func() string { return "doctor" }
		v, err := propagation.Ladder(facts)
		if err != nil {
			return []Result{readFailed(idAppRules, titleAppRules, "", err)}
		}
		if v.Refusal != nil {
			out = append(out, refused{app: app.GetNamespace() + "/" + app.GetName(), refusal: *v.Refusal})
		}
	}
	return []Result{decideApplicationRules(checked, out)}
}

// decideApplicationRules fails with every refused Application, its reason and what to do (the
// refusal's message says both).
func decideApplicationRules(checked int, out []refused) Result {
	if len(out) == 0 {
		return Result{ID: idAppRules, Title: titleAppRules, Status: StatusPass,
			Message: fmt.Sprintf("all %d are delivered", checked)}
	}
	names := make([]string, 0, len(out))
	fixes := make([]string, 0, len(out))
	for _, r := range out {
		names = append(names, r.app+" ("+r.refusal.Reason+")")
		fixes = append(fixes, r.app+": "+r.refusal.Reason+": "+r.refusal.Message)
	}
	return Result{ID: idAppRules, Title: titleAppRules, Status: StatusFail,
		Message: fmt.Sprintf("%d of %d are refused (their works, if any, are frozen): %s", len(out), checked, listNames(names)),
		Fix:     strings.Join(fixes, "\n")}
}
