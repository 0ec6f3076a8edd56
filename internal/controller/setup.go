// Package controller holds the argocd-pull reconcilers, one file each. Setup wires them into a
// manager; main and the tests call the same ManagerOptions and Setup, so what is tested is what runs.
package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/appstatus"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/clusteraccess"
	"github.com/argocd-pull/argocd-pull/internal/intern"
	"github.com/argocd-pull/argocd-pull/internal/metrics"
	"github.com/argocd-pull/argocd-pull/internal/propagation"
	"github.com/argocd-pull/argocd-pull/internal/report"
	"github.com/argocd-pull/argocd-pull/internal/resourcetree"
	"github.com/argocd-pull/argocd-pull/internal/resourceviews"
	"github.com/argocd-pull/argocd-pull/internal/search"
	"github.com/argocd-pull/argocd-pull/internal/tenancy"
	"github.com/argocd-pull/argocd-pull/internal/viewholders"
)

// Options configure the controllers. Start from DefaultOptions.
type Options struct {
	// ArgoCDNamespace is the namespace of the hub's Argo CD (and of its AppProjects).
	ArgoCDNamespace string
	// PullNamespaces are the namespaces pull-model Applications are taken from. Empty means
	// ArgoCDNamespace only.
	PullNamespaces []string
	// ManagedNamespaceGrants are the managed-cluster namespaces granted to hub namespaces: an
	// Application of hub namespace N, other than ArgoCDNamespace, lands in N or in one granted to N.
	ManagedNamespaceGrants tenancy.Grants
	// MaxConcurrentReconciles bounds the workers of each controller.
	MaxConcurrentReconciles int
	// StaleAfter is how long a cluster may leave its current ManifestWork unapplied before the
	// report shows its status as stale.
	StaleAfter time.Duration
	// ReportCoalesce is how long report events of one ApplicationSet are gathered into one rebuild.
	ReportCoalesce time.Duration
	// ReportIntervalPerCluster paces the writes of large reports: a report of C clusters is
	// written at most once per C × ReportIntervalPerCluster (and per ReportCoalesce).
	ReportIntervalPerCluster time.Duration
	// ReportEntriesPerSecond bounds the cluster entries all report writes carry together each
	// second (0: unbounded); see reportPacer.
	ReportEntriesPerSecond int
	// Search optionally adds OCM Search V2 as a source of the reports; off when URL is empty.
	Search search.Options
	// SearchInterval is how often Search is polled.
	SearchInterval time.Duration
	// GitOpsNamespaces are more Argo CD namespaces, besides ArgoCDNamespace, that GitOpsClusters
	// may write cluster secrets into. The install must give argocd-pull its Role in each.
	GitOpsNamespaces []string
	// ArgoCDNamespaceGrants are the Argo CD namespaces the operator granted to hub namespaces
	// (--grant-argocd-namespaces T=X): a GitOpsCluster in T writes into X only when T is X or X is
	// granted to T.
	ArgoCDNamespaceGrants tenancy.Grants
	// SecretGracePeriod is how long the secret of a cluster that left a placement is kept.
	SecretGracePeriod time.Duration
	// ApplicationSetServiceAccount is the service account of the ApplicationSet controller in the
	// Argo CD namespace, granted read access to Placements and PlacementDecisions there.
	ApplicationSetServiceAccount string
	// AdoptUpstreamWorks takes over the Applications the upstream pull controllers (RHACM, OCM
	// basic mode) deliver, without redeploying them (manifestwork/takeover.go). Off, those
	// Applications are refused and their works left as they are.
	AdoptUpstreamWorks bool
	// ResourceTree is how to reach the hub Argo CD's redis, where each pull-model Application's
	// display tree is written (internal/resourcetree); no tree is written when its Address is
	// empty. Its Credentials, when nil, come from RedisSecret.
	ResourceTree resourcetree.Options
	// RedisSecret is the Secret in ArgoCDNamespace whose "auth" key is the redis password (Argo
	// CD's argocd-redis); read at each new connection. A missing Secret means no password.
	RedisSecret string
	// RollingSyncUnconfirmedHold bounds how long one cluster's word alone can hold its
	// RollingSync siblings behind (see appstatus.BarrierLimits).
	RollingSyncUnconfirmedHold time.Duration
	// RedisUsername is the redis ACL user argocd-pull connects as (its password in RedisSecret),
	// "" for redis's default user (Argo CD's own, whose password opens every key).
	RedisUsername string
	// Channel is OCM's way from the hub to the clusters (cluster-proxy's user server, its CA, and
	// the ManagedServiceAccounts GitOpsClusters may name); unset, every cluster secret is
	// credential-free.
	Channel clusteraccess.Channel
	// ArgoCDServer is the hub's Argo CD API server, asked for the Git side of the managed
	// resources of an Application on its cluster's channel; no URL: they carry live states only.
	ArgoCDServer resourceviews.ServerOptions
	// ClusterProbeInterval is how often each cluster whose own tree the hub holds is asked
	// whether it still answers through the channel (ResourceTreeReconciler.probeClusters); 0:
	// never.
	ClusterProbeInterval time.Duration
}

// ArgoCDNamespaces are the Argo CD namespaces the install names: ArgoCDNamespace and
// GitOpsNamespaces. argocd-pull holds RBAC for Secrets, ConfigMaps, Roles and RoleBindings there
// and nowhere else, and caches Secrets only there.
func (o Options) ArgoCDNamespaces() []string {
	out := []string{o.ArgoCDNamespace}
	for _, ns := range o.GitOpsNamespaces {
		if !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	return out
}

// DefaultManagedServiceAccount is the one ManagedServiceAccount name GitOpsClusters may use unless
// the install names others: the install's RBAC lets argocd-pull read its token Secrets.
const DefaultManagedServiceAccount = "argocd-pull"

// DefaultOptions returns the options used when no flag is given.
func DefaultOptions() Options {
	return Options{
		ArgoCDNamespace:          api.DefaultArgoCDNamespace,
		MaxConcurrentReconciles:  16,
		StaleAfter:               report.DefaultStaleAfter,
		ReportCoalesce:           100 * time.Millisecond,
		ReportIntervalPerCluster: time.Millisecond,
		ReportEntriesPerSecond:   1000,
		SearchInterval:           30 * time.Second,
		SecretGracePeriod:        10 * time.Minute,

		ApplicationSetServiceAccount: "argocd-applicationset-controller",
		ResourceTree:                 resourcetree.Options{Encoding: resourcetree.Encoding{Gzip: true}, TTL: time.Hour},
		RedisSecret:                  "argocd-redis",
		RollingSyncUnconfirmedHold:   appstatus.DefaultUnconfirmedHold,
		Channel:                      clusteraccess.Channel{Accounts: []string{DefaultManagedServiceAccount}},
		ClusterProbeInterval:         5 * time.Minute,
	}
}

// Validate reports options the controllers cannot run with.
func (o Options) Validate() error {
	if o.ArgoCDNamespace == "" {
		return fmt.Errorf("the Argo CD namespace must not be empty")
	}
	if o.MaxConcurrentReconciles < 1 {
		return fmt.Errorf("max concurrent reconciles must be at least 1, got %d", o.MaxConcurrentReconciles)
	}
	if o.RollingSyncUnconfirmedHold <= 0 {
		return fmt.Errorf("--rollingsync-unconfirmed-hold must be positive, got %s", o.RollingSyncUnconfirmedHold)
	}
	if o.StaleAfter <= 0 {
		return fmt.Errorf("the staleness window must be positive, got %s", o.StaleAfter)
	}
	if o.ReportCoalesce < 0 {
		return fmt.Errorf("the report coalescing delay must not be negative, got %s", o.ReportCoalesce)
	}
	if o.ReportIntervalPerCluster < 0 {
		return fmt.Errorf("the report interval per cluster must not be negative, got %s", o.ReportIntervalPerCluster)
	}
	if o.ReportEntriesPerSecond < 0 {
		return fmt.Errorf("the report entries per second must not be negative, got %d", o.ReportEntriesPerSecond)
	}
	if o.SecretGracePeriod < 0 {
		return fmt.Errorf("the secret grace period must not be negative, got %s", o.SecretGracePeriod)
	}
	if err := o.Channel.Validate(); err != nil {
		return err
	}
	if o.ArgoCDServer.URL != "" {
		if _, err := resourceviews.NewArgoCDServer(o.ArgoCDServer); err != nil {
			return err
		}
	}
	for _, ns := range o.GitOpsNamespaces {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return fmt.Errorf("the Argo CD namespace %q is not a namespace name: %s", ns, strings.Join(errs, "; "))
		}
	}
	for _, tenant := range slices.Sorted(maps.Keys(o.ArgoCDNamespaceGrants)) {
		for _, ns := range o.ArgoCDNamespaceGrants[tenant] {
			if !slices.Contains(o.ArgoCDNamespaces(), ns) {
				return fmt.Errorf("the grant %s=%s names %s, which is not an Argo CD namespace of this install (--argocd-namespace, --gitops-namespaces)", tenant, ns, ns)
			}
		}
	}
	if o.ResourceTree.Address != "" && o.ResourceTree.TTL <= 0 {
		return fmt.Errorf("the resource tree's TTL must be positive, got %s", o.ResourceTree.TTL)
	}
	if o.ClusterProbeInterval < 0 {
		return fmt.Errorf("the cluster probe interval must not be negative, got %s", o.ClusterProbeInterval)
	}
	if o.Search.URL != "" && o.SearchInterval <= 0 {
		return fmt.Errorf("the Search polling interval must be positive, got %s", o.SearchInterval)
	}
	return nil
}

// policy is what the propagation ladder applies of the options.
func (o Options) policy() propagation.Policy {
	return propagation.Policy{ArgoCDNamespace: o.ArgoCDNamespace, PullNamespaces: o.PullNamespaces, ManagedNamespaces: o.ManagedNamespaceGrants,
		AdoptUpstream: o.AdoptUpstreamWorks, StaleAfter: o.StaleAfter}
}

// ManagerOptions returns the manager options the controllers need: the scheme, and a cache that
// holds only pull-labelled Applications, argocd-pull's ManifestWorks, the Argo CD namespace's
// AppProjects and pause ConfigMap, and the cluster secrets argocd-pull wrote in the install's Argo
// CD namespaces, so
// that memory follows the pull-model fleet and not everything on the hub, and so that the
// controller lists Secrets only where its RBAC lets it.
func ManagerOptions(scheme *runtime.Scheme, opts Options) ctrl.Options {
	pullLabelled, _ := labels.NewRequirement(api.PullLabel, selection.Exists, nil)
	ours := labels.SelectorFromSet(labels.Set{api.ManagedByLabel: api.ManagedByValue})
	app, project := argocd.NewApplication(), argocd.NewAppProject()
	secretNamespaces := map[string]cache.Config{}
	for _, ns := range opts.ArgoCDNamespaces() {
		secretNamespaces[ns] = cache.Config{LabelSelector: ours}
	}
	return ctrl.Options{
		Scheme: scheme,
		// Each controller's name is unique by construction; a process may run the controllers more
		// than once, one manager after another (the controller command's tests do).
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
		Cache: cache.Options{
			DefaultTransform: intern.NewTable().CacheTransform(),
			ByObject: map[client.Object]cache.ByObject{
				app:                    {Label: labels.NewSelector().Add(*pullLabelled)},
				&workv1.ManifestWork{}: {Label: ours},
				project:                {Namespaces: map[string]cache.Config{opts.ArgoCDNamespace: {}}},
				// Only the cluster secrets GitOpsClusters created, only in the Argo CD namespaces.
				&corev1.Secret{}: {Namespaces: secretNamespaces, Label: ours},
				// Only the pause ConfigMap, watched by name (the RBAC grants nothing else).
				&corev1.ConfigMap{}: {Namespaces: map[string]cache.Config{opts.ArgoCDNamespace: {
					FieldSelector: fields.OneTermEqualSelector("metadata.name", api.PauseConfigMap),
				}}},
			}},
		Client: client.Options{Cache: &client.CacheOptions{
			// Argo CD objects are unstructured; read them from the cache like everything else.
			Unstructured: true,
			// The placement generator ConfigMap and the placement reader Role and RoleBinding are
			// read by name, straight from the apiserver: the RBAC grants get on those names only.
			DisableFor: []client.Object{&corev1.ConfigMap{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}},
		}},
	}
}

// Setup registers the controllers with the manager.
//
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
func Setup(mgr ctrl.Manager, opts Options) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	if err := setupIndexes(mgr); err != nil {
		return err
	}
	metrics.Register(mgr.GetCache(), opts.StaleAfter)
	copts := controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}
	if err := (&PropagationReconciler{
		Client:   mgr.GetClient(),
		Cache:    mgr.GetCache(),
		Recorder: mgr.GetEventRecorder("argocd-pull-propagation"),
		Options:  opts,
	}).SetupWithManager(mgr, copts); err != nil {
		return fmt.Errorf("setting up the propagation controller: %w", err)
	}
	// What the cluster's own trees leave out, said with what the status controller cuts.
	treeWarnings := &TreeWarnings{}
	// What each Application lacks of the repository credentials, said by the status controller too.
	lacks := &CredentialLacks{}
	statuses := &AppStatusReconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("argocd-pull-appstatus"), StaleAfter: opts.StaleAfter,
		Barrier:      appstatus.BarrierLimits{UnconfirmedHold: opts.RollingSyncUnconfirmedHold, UnconfirmedChanges: appstatus.DefaultUnconfirmedChanges},
		TreeWarnings: treeWarnings, CredentialLacks: lacks}
	if err := statuses.SetupWithManager(mgr, copts); err != nil {
		return fmt.Errorf("setting up the application status controller: %w", err)
	}
	treeWarnings.changed = statuses.again
	lacks.changed = statuses.again
	if err := (&CredentialsReconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("argocd-pull-credentials"), Options: opts, Lacks: lacks}).
		SetupWithManager(mgr, copts); err != nil {
		return fmt.Errorf("setting up the repository credentials controller: %w", err)
	}
	reports := &ReportReconciler{Client: mgr.GetClient(), Options: opts}
	if opts.Search.URL != "" {
		s, err := newReportSearch(mgr.GetClient(), opts)
		if err != nil {
			return err
		}
		reports.Search = s
		if err := mgr.Add(s.poller); err != nil {
			return fmt.Errorf("adding the Search poller: %w", err)
		}
	}
	if err := reports.SetupWithManager(mgr, copts); err != nil {
		return fmt.Errorf("setting up the report controller: %w", err)
	}
	if opts.ResourceTree.Address != "" {
		if err := setupResourceTree(mgr, opts, copts, treeWarnings); err != nil {
			return err
		}
	}
	if err := (&GitOpsClusterReconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorder("argocd-pull-gitopscluster"),
		Options:  opts,
		tokens:   mgr.GetAPIReader(),
	}).SetupWithManager(mgr, copts); err != nil {
		return fmt.Errorf("setting up the GitOpsCluster controller: %w", err)
	}
	return nil
}

// setupResourceTree registers the resource tree controller, writing to the redis opts name.
func setupResourceTree(mgr ctrl.Manager, opts Options, copts controller.Options, warnings *TreeWarnings) error {
	treeOpts := opts.ResourceTree
	if treeOpts.Credentials == nil {
		treeOpts.Credentials = RedisCredentials(mgr.GetAPIReader(), client.ObjectKey{Namespace: opts.ArgoCDNamespace, Name: opts.RedisSecret}, opts.RedisUsername)
	}
	cache, err := resourcetree.NewCache(treeOpts)
	if err != nil {
		return fmt.Errorf("setting up the resource tree's redis: %w", err)
	}
	trees := &ClusterTrees{Channel: opts.Channel, Limits: resourceviews.DefaultLimits, ProbeEvery: opts.ClusterProbeInterval}
	if opts.ArgoCDServer.URL != "" {
		if trees.Targets, err = resourceviews.NewArgoCDServer(opts.ArgoCDServer); err != nil {
			return err
		}
	}
	r := &ResourceTreeReconciler{
		Client:          mgr.GetClient(),
		Recorder:        mgr.GetEventRecorder("argocd-pull-resourcetree"),
		Cache:           cache,
		Encoding:        treeOpts.Encoding,
		ArgoCDNamespace: opts.ArgoCDNamespace,
		TTL:             treeOpts.TTL,
		ClusterTrees:    trees,
		Warnings:        warnings,
	}
	if trees.Channel.Configured() {
		// A name holds a tree of its cluster's uids only once the hub's admission policy knows
		// the destination it holds it for (internal/viewholders).
		r.Holders = &viewholders.Registry{Reader: mgr.GetAPIReader(), Writer: mgr.GetClient(), Namespace: opts.ArgoCDNamespace,
			Settle: viewHoldSettle, Every: 250 * time.Millisecond, Check: time.Minute, Log: mgr.GetLogger().WithName("viewholders")}
	}
	if err := r.SetupWithManager(mgr, copts); err != nil {
		return fmt.Errorf("setting up the resource tree controller: %w", err)
	}
	return nil
}

// RedisCredentials are username (an ACL user, "" for redis's default user) and the password in the
// "auth" key of the Secret named (Argo CD's argocd-redis, or the ACL user's own), read straight
// from the apiserver at each new connection: a rotated password is used from the next connection
// on. No Secret, or no name, means no password.
func RedisCredentials(reader client.Reader, secret client.ObjectKey, username string) func(ctx context.Context) (string, string, error) {
	return func(ctx context.Context) (string, string, error) {
		if secret.Name == "" {
			return username, "", nil
		}
		s := &corev1.Secret{}
		switch err := reader.Get(ctx, secret, s); {
		case apierrors.IsNotFound(err):
			return username, "", nil
		case err != nil:
			return "", "", fmt.Errorf("reading the redis password from Secret %s: %w", secret, err)
		}
		return username, string(s.Data["auth"]), nil
	}
}
