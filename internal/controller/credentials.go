// The carriers of the clusters' repository credentials (docs/design-private-repositories.md): one
// reconcile per cluster gathers the opted-in hub credentials and the Applications delivered there,
// decides with repocreds, writes the cluster's carrier (manifestwork.DesiredCredentials) once, and
// says what each of its Applications lacks through the status controller.

package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/metrics"
	"github.com/argocd-pull/argocd-pull/internal/repocreds"
)

// Reasons of the credentials controller's events.
const (
	// ReasonCredentialRefused, on a hub Secret opted in, says why it is delivered nowhere
	// (repocreds.Refusal).
	ReasonCredentialRefused = "CredentialRefused"
)

// credentialsRetry is when a cluster is decided again after its carrier's write met a newer
// carrier (a conflict), or one the cache did not show yet.
const credentialsRetry = time.Second

// errCarrierUnanswered says a carrier's change waits: the agent has not applied its generation yet.
var errCarrierUnanswered = errors.New("the agent has not applied the carrier's generation yet")

// CredentialsReconciler keeps, in each cluster namespace, the carrier of the repository
// credentials that the Applications delivered there use. Its key is a cluster: the request's
// namespace (its name is the carrier's). Only the hub Argo CD's own namespace holds credentials:
// Argo CD reads them nowhere else, and a Secret in another namespace is no platform's.
type CredentialsReconciler struct {
	client.Client
	Recorder events.EventRecorder
	Options  Options
	// Lacks receive what each Application lacks, for the status controller to say.
	Lacks *CredentialLacks

	secrets  cache.Cache // the opted-in Secrets of the Argo CD namespace
	carriers cache.Cache // the carriers (manifestwork.CredentialsLabel)
	// refusals remembers, per hub Secret, the refusal last said of it ("<resourceVersion> <error>"),
	// so that one bad Secret gives one event, not one per cluster.
	refusals sync.Map
}

func carrierRequest(cluster string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: cluster, Name: manifestwork.CredentialsWorkName}}
}

// Reconcile decides cluster's carrier and writes it when it differs.
func (r *CredentialsReconciler) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	cluster := req.Namespace
	// A paused controller writes nothing: the clusters keep what they hold until it resumes, and
	// the pause ConfigMap's change wakes every cluster.
	if reason, err := globalPause(ctx, r.Client, r.Options.ArgoCDNamespace); err != nil || reason != "" {
		return ctrl.Result{}, err
	}
	creds, secrets, err := r.credentials(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	carrier, err := r.carrier(ctx, cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(creds) == 0 && carrier == nil {
		// Nothing to carry, nothing carried: the cluster's Applications are not read (a hub
		// without opted-in credentials pays three cache reads per cluster woken).
		r.Lacks.setCluster(ctx, cluster, nil)
		return ctrl.Result{}, nil
	}
	apps, err := r.deliveredOn(ctx, cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	desired, lacking, err := repocreds.Carry(cluster, r.Options.ArgoCDNamespace, repocreds.Decide(creds, apps), secrets, manifestwork.CredentialClaims(carrier))
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.write(ctx, carrier, desired); apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		return ctrl.Result{RequeueAfter: credentialsRetry}, nil
	} else if errors.Is(err, errCarrierUnanswered) {
		// The agent's answer (the carrier's status) wakes the cluster again.
		return ctrl.Result{}, nil
	} else if err != nil {
		return ctrl.Result{}, err
	}
	r.Lacks.setCluster(ctx, cluster, lacking)
	return ctrl.Result{}, nil
}

// credentials are the opted-in hub Secrets that are credentials (repocreds.Parse), and those
// Secrets by key. A refused one is said once per change, in an event on it, and left out.
func (r *CredentialsReconciler) credentials(ctx context.Context) ([]repocreds.Credential, map[types.NamespacedName]*corev1.Secret, error) {
	list := &corev1.SecretList{}
	if err := r.secrets.List(ctx, list, client.InNamespace(r.Options.ArgoCDNamespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, fmt.Errorf("listing the opted-in credential Secrets: %w", err)
	}
	var creds []repocreds.Credential
	secrets := map[types.NamespacedName]*corev1.Secret{}
	for i := range list.Items {
		s := &list.Items[i]
		if s.Labels[repocreds.OptInLabel] != "true" || !s.DeletionTimestamp.IsZero() {
			continue
		}
		c, err := repocreds.Parse(s, func(project string) bool { return r.projectExists(ctx, project) })
		if err != nil {
			r.refused(s, err)
			continue
		}
		r.refusals.Delete(c.Key)
		creds = append(creds, c)
		secrets[c.Key] = s
	}
	return creds, secrets, nil
}

func (r *CredentialsReconciler) projectExists(ctx context.Context, name string) bool {
	err := r.Get(ctx, types.NamespacedName{Namespace: r.Options.ArgoCDNamespace, Name: name}, argocd.NewAppProject(), client.UnsafeDisableDeepCopy)
	return err == nil
}

// refused says, once per version of s, why it is delivered nowhere.
func (r *CredentialsReconciler) refused(s *corev1.Secret, err error) {
	said := s.ResourceVersion + " " + err.Error()
	if last, ok := r.refusals.Swap(types.NamespacedName{Namespace: s.Namespace, Name: s.Name}, said); ok && last == said {
		return
	}
	r.Recorder.Eventf(s, nil, corev1.EventTypeWarning, ReasonCredentialRefused, "Deliver",
		"The credential is delivered to no managed cluster: %s", err.Error())
}

// deliveredOn are the Applications delivered to cluster, as the decisions see them: each
// pull-model Application whose work there is held (its Application is the hub's there), with the
// repository URLs that work carries (what the cluster's Argo CD fetches, paused or not).
func (r *CredentialsReconciler) deliveredOn(ctx context.Context, cluster string) ([]repocreds.Application, error) {
	list := argocd.NewApplicationList()
	if err := r.List(ctx, list, client.MatchingFields{appClusterIndex: cluster}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing the Applications of %s: %w", cluster, err)
	}
	var apps []repocreds.Application
	for i := range list.Items {
		app := &list.Items[i]
		target, pull, err := manifestwork.ReadMarkers(app)
		if err != nil || !pull || target.Cluster != cluster || !app.GetDeletionTimestamp().IsZero() {
			continue
		}
		key := client.ObjectKeyFromObject(app)
		work, err := workOn(ctx, r.Client, cluster, key, client.UnsafeDisableDeepCopy)
		if err != nil {
			return nil, err
		}
		if work == nil || !manifestwork.Held(work) {
			continue
		}
		apps = append(apps, repocreds.Application{Key: key, Cluster: cluster, Project: argocd.Project(app),
			Platform: app.GetNamespace() == r.Options.ArgoCDNamespace, URLs: manifestwork.PayloadRepoURLs(work)})
	}
	return apps, nil
}

// carrier is cluster's carrier, nil when there is none.
func (r *CredentialsReconciler) carrier(ctx context.Context, cluster string) (*workv1.ManifestWork, error) {
	w := &workv1.ManifestWork{}
	switch err := r.carriers.Get(ctx, types.NamespacedName{Namespace: cluster, Name: manifestwork.CredentialsWorkName}, w); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading the credentials' carrier of %s: %w", cluster, err)
	}
	return w, nil
}

// write brings the carrier to desired (nil: none), in one write or none.
func (r *CredentialsReconciler) write(ctx context.Context, carrier, desired *workv1.ManifestWork) error {
	log := ctrl.LoggerFrom(ctx)
	op, err := "", error(nil)
	switch {
	case desired == nil && carrier == nil:
		return nil
	case carrier != nil && !carrier.DeletionTimestamp.IsZero():
		// Going (the agent deletes its copies first): its deletion wakes the cluster again.
		return nil
	case desired == nil:
		log.Info("Deleting the credentials' carrier: no Application delivered there uses a credential", "manifestWork", klog.KObj(carrier))
		op = metrics.OpDelete
		err = client.IgnoreNotFound(r.Delete(ctx, carrier, client.Preconditions{UID: &carrier.UID}))
	case carrier == nil:
		log.Info("Creating the credentials' carrier", "manifestWork", klog.KObj(desired), "copies", len(desired.Spec.Workload.Manifests))
		op = metrics.OpCreate
		err = r.Create(ctx, desired)
	case manifestwork.UpToDate(carrier, desired):
		return nil
	case !manifestwork.CarrierAnswered(carrier):
		// One change at a time: OCM's work agent (v1.2) computes the copies to delete from its
		// AppliedManifestWork as its cache holds it, so a generation that drops a copy, arriving
		// before that cache shows the copy the previous generation applied, leaves the copy on the
		// cluster for good (an opt-out right after a copy was held kept it: the e2e
		// TestTheCarrierReadsASecretItDoesNotOwnAndLeavesIt). The next change waits for the agent
		// to say it applied this one.
		return errCarrierUnanswered
	default:
		updated := carrier.DeepCopy()
		updated.Labels = desired.Labels
		updated.Annotations = desired.Annotations
		updated.Spec = desired.Spec
		log.Info("Updating the credentials' carrier", "manifestWork", klog.KObj(updated), "copies", len(desired.Spec.Workload.Manifests))
		op = metrics.OpUpdate
		err = r.Update(ctx, updated)
	}
	if err != nil {
		return fmt.Errorf("writing the credentials' carrier of %s: %w", cmpOr(desired, carrier).Namespace, err)
	}
	metrics.WorkWrites.WithLabelValues(op).Inc()
	return nil
}

func cmpOr(a, b *workv1.ManifestWork) *workv1.ManifestWork {
	if a != nil {
		return a
	}
	return b
}

// SetupWithManager starts the caches of the opted-in Secrets and of the carriers, and what wakes a
// cluster: its carrier's change (the agent's answers), an Application work's coming, going, or
// change of what it carries (a new generation) on it, and, for every cluster, an opted-in
// Secret's change, an AppProject's (a credential's project may come or go), and the pause
// ConfigMap's.
func (r *CredentialsReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	var err error
	optIn := labels.SelectorFromSet(labels.Set{repocreds.OptInLabel: "true"})
	if r.secrets, err = r.newCache(mgr, &corev1.Secret{}, cache.ByObject{
		Namespaces: map[string]cache.Config{r.Options.ArgoCDNamespace: {}}, Label: optIn}); err != nil {
		return err
	}
	carrierLabel := labels.SelectorFromSet(labels.Set{manifestwork.CredentialsLabel: "true"})
	if r.carriers, err = r.newCache(mgr, &workv1.ManifestWork{}, cache.ByObject{Label: carrierLabel}); err != nil {
		return err
	}
	everyCluster := handler.EnqueueRequestsFromMapFunc(r.everyCluster)
	return ctrl.NewControllerManagedBy(mgr).
		Named("credentials").
		WithOptions(opts).
		WatchesRawSource(source.Kind[client.Object](r.carriers, &workv1.ManifestWork{}, handler.EnqueueRequestsFromMapFunc(
			func(_ context.Context, o client.Object) []reconcile.Request {
				return []reconcile.Request{carrierRequest(o.GetNamespace())}
			}))).
		WatchesRawSource(source.Kind[client.Object](r.secrets, &corev1.Secret{}, everyCluster)).
		Watches(&workv1.ManifestWork{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return []reconcile.Request{carrierRequest(o.GetNamespace())}
		}), builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool {
				old, okOld := e.ObjectOld.(*workv1.ManifestWork)
				work, okNew := e.ObjectNew.(*workv1.ManifestWork)
				return okOld && okNew && old.Generation != work.Generation && r.usesChanged(old, work)
			},
			GenericFunc: func(event.GenericEvent) bool { return false },
		})).
		Watches(argocd.NewAppProject(), everyCluster).
		Watches(&corev1.ConfigMap{}, everyCluster, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetNamespace() == r.Options.ArgoCDNamespace && o.GetName() == api.PauseConfigMap
		}))).
		Complete(r)
}

// usesChanged says whether a new generation of an Application's work changed what its cluster's
// credentials are decided from: whether it is held, and the URLs it carries. The URLs are read
// only while a credential is opted in: the opt-in of the first wakes every cluster anyway.
func (r *CredentialsReconciler) usesChanged(old, work *workv1.ManifestWork) bool {
	if manifestwork.Held(old) != manifestwork.Held(work) {
		return true
	}
	list := &corev1.SecretList{}
	if err := r.secrets.List(context.Background(), list, client.UnsafeDisableDeepCopy); err != nil || len(list.Items) == 0 {
		return err != nil
	}
	return !slices.Equal(manifestwork.PayloadRepoURLs(old), manifestwork.PayloadRepoURLs(work))
}

func (r *CredentialsReconciler) newCache(mgr ctrl.Manager, obj client.Object, by cache.ByObject) (cache.Cache, error) {
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject:         map[client.Object]cache.ByObject{obj: by},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the credentials controller's cache of %T: %w", obj, err)
	}
	if err := mgr.Add(c); err != nil {
		return nil, fmt.Errorf("adding the credentials controller's cache of %T: %w", obj, err)
	}
	return c, nil
}

// everyCluster are the clusters a credential may concern: those of the pull-model Applications,
// and those that hold a carrier.
func (r *CredentialsReconciler) everyCluster(ctx context.Context, _ client.Object) []reconcile.Request {
	clusters := map[string]bool{}
	apps := argocd.NewApplicationList()
	if err := r.List(ctx, apps, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the Applications' clusters")
	}
	for _, app := range apps.Items {
		if c := app.GetAnnotations()[api.ClusterAnnotation]; c != "" {
			clusters[c] = true
		}
	}
	carriers := &workv1.ManifestWorkList{}
	if err := r.carriers.List(ctx, carriers, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the credentials' carriers")
	}
	for _, w := range carriers.Items {
		clusters[w.Namespace] = true
	}
	reqs := make([]reconcile.Request, 0, len(clusters))
	for _, c := range slices.Sorted(maps.Keys(clusters)) {
		reqs = append(reqs, carrierRequest(c))
	}
	return reqs
}

// CredentialLacks are, per Application, the credentials its repositories would use that do not
// reach its cluster for it (repocreds.Message), as the credentials controller last decided for that
// cluster. The status controller says them in the Application's PullCredentialWarning: one writer
// of its status.
type CredentialLacks struct {
	mu sync.Mutex
	m  map[types.NamespacedName]credentialLack
	// changed queues the status controller's reconcile of an Application whose lack changed.
	changed func(ctx context.Context, key types.NamespacedName)
}

type credentialLack struct{ cluster, message string }

// Get is what key lacks, "" when nothing (or l is nil).
func (l *CredentialLacks) Get(key types.NamespacedName) string {
	if l == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m[key].message
}

// setCluster records what cluster's Applications lack: an Application cluster said something of
// before and that lacks nothing now is cleared; one another cluster said something of since (it
// moved) is that cluster's to clear.
func (l *CredentialLacks) setCluster(ctx context.Context, cluster string, lacking map[types.NamespacedName][]repocreds.Lack) {
	if l == nil {
		return
	}
	var changed []types.NamespacedName
	l.mu.Lock()
	if l.m == nil {
		l.m = map[types.NamespacedName]credentialLack{}
	}
	for key, was := range l.m {
		if was.cluster == cluster && len(lacking[key]) == 0 {
			delete(l.m, key)
			changed = append(changed, key)
		}
	}
	for key, lacks := range lacking {
		if len(lacks) == 0 {
			continue
		}
		now := credentialLack{cluster: cluster, message: repocreds.Message(lacks)}
		if l.m[key] != now {
			l.m[key] = now
			changed = append(changed, key)
		}
	}
	l.mu.Unlock()
	if l.changed != nil {
		for _, key := range changed {
			l.changed(ctx, key)
		}
	}
}
