package propagation

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/tenancy"
)

// Policy is what the operator configures and the ladder applies: the controller's flags
// --argocd-namespace, --pull-namespaces and --grant-managed-namespaces (the doctor takes the same).
type Policy struct {
	// ArgoCDNamespace is the Argo CD namespace of the hub, where AppProjects are read, and of the
	// managed clusters, where the payload's AppProject goes. Its Applications are the platform's.
	ArgoCDNamespace string
	// PullNamespaces are the namespaces pull-model Applications are taken from: empty means
	// ArgoCDNamespace only, "*" every namespace.
	PullNamespaces []string
	// ManagedNamespaces are the grants: an Application of hub namespace N, other than the Argo CD
	// namespace, lands in N or in a namespace granted to N.
	ManagedNamespaces tenancy.Grants
	// AdoptUpstream takes over the Applications the upstream pull controllers deliver (flag
	// --adopt-upstream-works; see takeover.go); off, they are refused and left as they are.
	AdoptUpstream bool
	// StaleAfter is how long a new Application waits, silently, for its cluster to answer the
	// claim probe (flag --stale-after, as for the status of a delivered one; zero: its default).
	StaleAfter time.Duration
}

// Namespaces are the namespaces Applications are taken from ("*" for every one).
func (p Policy) Namespaces() []string {
	if len(p.PullNamespaces) == 0 {
		return []string{p.ArgoCDNamespace}
	}
	if slices.Contains(p.PullNamespaces, "*") {
		return []string{"*"}
	}
	return p.PullNamespaces
}

// Allows reports whether pull-model Applications are taken from namespace ns.
func (p Policy) Allows(ns string) bool {
	allowed := p.Namespaces()
	return slices.Contains(allowed, ns) || slices.Contains(allowed, "*")
}

// ReadFacts reads through r what the ladder decides on about app, besides its ManifestWorks:
// its cluster, the bindings of its namespace, the cluster's namespace on the hub and its
// AppProject. gather.Read, the one gatherer of the controller, the doctor and the takeover's dry
// run, reads them here; nothing is read for an Application whose markers name no cluster.
func ReadFacts(ctx context.Context, r client.Reader, p Policy, app *unstructured.Unstructured, target manifestwork.Target) (Facts, error) {
	f := Facts{App: app, Policy: p, NewDeliveryID: manifestwork.NewDeliveryID, Now: time.Now()}
	if target.Cluster == "" {
		return f, nil
	}
	cluster := &clusterv1.ManagedCluster{}
	switch err := r.Get(ctx, client.ObjectKey{Name: target.Cluster}, cluster); {
	case err == nil:
		f.Cluster = cluster
	case !apierrors.IsNotFound(err):
		return f, fmt.Errorf("reading ManagedCluster %s: %w", target.Cluster, err)
	}
	var err error
	if f.Bindings, err = tenancy.ReadBindings(ctx, r, app.GetNamespace()); err != nil {
		return f, err
	}
	switch err := r.Get(ctx, client.ObjectKey{Name: target.Cluster}, &corev1.Namespace{}); {
	case err == nil:
		f.ClusterNamespace = true
	case !apierrors.IsNotFound(err):
		return f, fmt.Errorf("reading namespace %s: %w", target.Cluster, err)
	}
	if f.Step, f.StepBegan, err = stepOf(ctx, r, app); err != nil {
		return f, err
	}
	project := argocd.NewAppProject()
	name := argocd.Project(app)
	switch err := r.Get(ctx, client.ObjectKey{Namespace: p.ArgoCDNamespace, Name: name}, project); {
	case err == nil:
		f.Project = project
	case !apierrors.IsNotFound(err):
		return f, fmt.Errorf("reading AppProject %s: %w", name, err)
	}
	return f, nil
}

// stepOf is the status app's RollingSync ApplicationSet gives it, when the hub's sync request is
// the ApplicationSet's ("" otherwise), and, when that reads Pending, since when (zero otherwise;
// see manifestwork.StepDeliverAt and RepeatedStepSync).
func stepOf(ctx context.Context, r client.Reader, app *unstructured.Unstructured) (string, time.Time, error) {
	name, owned := argocd.OwningApplicationSet(app)
	if !owned || !manifestwork.RolledOut(manifestwork.HubOf(app)) {
		return "", time.Time{}, nil
	}
	appSet := argocd.NewApplicationSet()
	// The cache's own object, only read.
	switch err := r.Get(ctx, client.ObjectKey{Namespace: app.GetNamespace(), Name: name}, appSet, client.UnsafeDisableDeepCopy); {
	case apierrors.IsNotFound(err):
		return "", time.Time{}, nil
	case err != nil:
		return "", time.Time{}, fmt.Errorf("reading ApplicationSet %s/%s: %w", app.GetNamespace(), name, err)
	}
	step, since := argocd.StepOf(appSet, app.GetName())
	if step != argocd.StepPending {
		since = time.Time{}
	}
	return step, since, nil
}
