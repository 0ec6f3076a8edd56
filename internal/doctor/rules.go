package doctor

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/propagation"
	"github.com/argocd-pull/argocd-pull/internal/tenancy"
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
	for _, ns := range h.pullNamespaces() {
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
		target, pull, err := propagation.Decide(app)
		if err == nil && !pull {
			continue
		}
		checked++
		facts, err := h.ladderFacts(ctx, app, target)
		if err != nil {
			return []Result{readFailed(idAppRules, titleAppRules, "", err)}
		}
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

// pullNamespaces are the namespaces the controller takes pull-model Applications from ("*" for
// all); the check looks there only (the controller refuses the others' all alike).
func (h *hub) pullNamespaces() []string {
	if len(h.o.PullNamespaces) == 0 {
		return []string{h.o.ArgoCDNamespace}
	}
	if slices.Contains(h.o.PullNamespaces, "*") {
		return []string{"*"}
	}
	return h.o.PullNamespaces
}

// ladderFacts reads what the ladder decides on, as the propagation controller's gather does,
// without the Application's works (a new Application's view).
func (h *hub) ladderFacts(ctx context.Context, app *unstructured.Unstructured, target propagation.Target) (propagation.Facts, error) {
	c := h.o.Hub.Client
	allowed := h.pullNamespaces()
	f := propagation.Facts{
		App:               app,
		NamespaceAllowed:  slices.Contains(allowed, app.GetNamespace()) || slices.Contains(allowed, "*"),
		AllowedNamespaces: strings.Join(allowed, ", "),
		ManagedNamespaces: h.o.ManagedNamespaceGrants,
		ArgoCDNamespace:   h.o.ArgoCDNamespace,
		NewDeliveryID:     func() string { return "doctor" },
	}
	if target.Cluster == "" {
		return f, nil
	}
	cluster := &clusterv1.ManagedCluster{}
	switch err := c.Get(ctx, client.ObjectKey{Name: target.Cluster}, cluster); {
	case err == nil:
		f.Cluster = cluster
	case !apierrors.IsNotFound(err):
		return f, fmt.Errorf("reading ManagedCluster %s: %w", target.Cluster, err)
	}
	var err error
	if f.Bindings, err = tenancy.ReadBindings(ctx, c, app.GetNamespace()); err != nil {
		return f, err
	}
	switch err := c.Get(ctx, client.ObjectKey{Name: target.Cluster}, &corev1.Namespace{}); {
	case err == nil:
		f.ClusterNamespace = true
	case !apierrors.IsNotFound(err):
		return f, fmt.Errorf("reading namespace %s: %w", target.Cluster, err)
	}
	project := argocd.NewAppProject()
	switch err := c.Get(ctx, client.ObjectKey{Namespace: h.o.ArgoCDNamespace, Name: argocd.Project(app)}, project); {
	case err == nil:
		f.Project = project
	case !apierrors.IsNotFound(err):
		return f, fmt.Errorf("reading AppProject %s: %w", argocd.Project(app), err)
	}
	return f, nil
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
