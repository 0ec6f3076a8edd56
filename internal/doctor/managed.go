package doctor

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
)

// spoke holds what the checks of one managed cluster read.
type spoke struct {
	hub     *hub
	cluster Cluster

	served memo[map[string]bool]
}

func (s *spoke) servedAPIs() (map[string]bool, error) {
	return s.served.get(func() (map[string]bool, error) {
		served, err := servedResources(s.cluster.Discovery)
		if err != nil {
			return nil, fmt.Errorf("managed cluster %s: %w", s.cluster.Name, err)
		}
		return served, nil
	})
}

// unreachable is the result of a check when the cluster did not even answer discovery: every
// further request would only wait for the same timeout.
func (s *spoke) unreachable(id, title string) []Result {
	if _, err := s.servedAPIs(); err != nil {
		return []Result{skipped(id, title, s.cluster.Name, "the cluster did not answer API discovery (see the first check of this cluster)")}
	}
	return nil
}

// serviceAccount is a service account as the authorizer sees it.
type serviceAccount struct{ namespace, name string }

func (sa serviceAccount) user() string {
	return "system:serviceaccount:" + sa.namespace + ":" + sa.name
}

func (sa serviceAccount) groups() []string {
	return []string{"system:serviceaccounts", "system:serviceaccounts:" + sa.namespace, "system:authenticated"}
}

// allowed asks the managed cluster's authorizer whether sa may verb the resource in namespace
// ("" for every namespace). A SubjectAccessReview answers for the service account, not for the
// caller.
func (s *spoke) allowed(ctx context.Context, sa serviceAccount, namespace string, gr schema.GroupResource, verb string) (bool, error) {
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   sa.user(),
		Groups: sa.groups(),
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: namespace, Verb: verb, Group: gr.Group, Resource: gr.Resource,
		},
	}}
	if err := s.cluster.Client.Create(ctx, sar); err != nil {
		return false, fmt.Errorf("asking managed cluster %s whether %s may %s %s: %w", s.cluster.Name, sa.user(), verb, gr, err)
	}
	return sar.Status.Allowed, nil
}

// namespace reads a namespace of the managed cluster; nil when it does not exist.
func (s *spoke) namespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	ns := &corev1.Namespace{}
	err := s.cluster.Client.Get(ctx, client.ObjectKey{Name: name}, ns)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading namespace %s of managed cluster %s: %w", name, s.cluster.Name, err)
	}
	return ns, nil
}

const (
	idAppCRD    = "managed-application-crd"
	titleAppCRD = "Argo CD Application API on the managed cluster"
)

func checkApplicationCRD(_ context.Context, s *spoke) []Result {
	served, err := s.servedAPIs()
	if err != nil {
		return []Result{readFailed(idAppCRD, titleAppCRD, s.cluster.Name, err)}
	}
	return []Result{decideApplicationCRD(s.cluster.Name, served)}
}

// decideApplicationCRD fails when the managed cluster does not serve Applications: the work
// agent cannot create the Application and there is no Argo CD to sync it.
func decideApplicationCRD(cluster string, served map[string]bool) Result {
	if !served["applications.argoproj.io"] {
		return Result{ID: idAppCRD, Title: titleAppCRD, Subject: cluster, Status: StatusFail,
			Message: "applications.argoproj.io is not served: Argo CD is not installed there",
			Fix: "install Argo CD on the managed cluster, as on the hub (kubectl create namespace argocd; " +
				"kubectl apply -n argocd -f https://raw.githubusercontent.com/argoproj/argo-cd/stable/manifests/install.yaml), " +
				"or the OpenShift GitOps operator at the hub's version"}
	}
	return Result{ID: idAppCRD, Title: titleAppCRD, Subject: cluster, Status: StatusPass,
		Message: "applications.argoproj.io is served"}
}

const (
	idControllerRBAC    = "managed-argocd-rbac"
	titleControllerRBAC = "Argo CD application controller may deploy on the managed cluster"
)

// controllerResources are the kinds most applications deploy; the documents' error is about
// services and deployments.
var controllerResources = []schema.GroupResource{
	{Group: "apps", Resource: "deployments"},
	{Resource: "services"},
	{Resource: "configmaps"},
}

// namespaceAccess is what the application controller may do in one destination namespace.
type namespaceAccess struct {
	name      string
	exists    bool
	managedBy string   // the namespace's argocd.argoproj.io/managed-by label
	denied    []string // resources it may not create there
}

// controllerAccess is what the application controller may do on a managed cluster.
type controllerAccess struct {
	// clusterWideDenied are the resources it may not create in every namespace.
	clusterWideDenied []string
	// namespaces are the destination namespaces, looked at only when it lacks cluster-wide rights.
	namespaces []namespaceAccess
}

func checkControllerAccess(ctx context.Context, s *spoke) []Result {
	if r := s.unreachable(idControllerRBAC, titleControllerRBAC); r != nil {
		return r
	}
	sa := serviceAccount{s.hub.o.ManagedArgoCDNamespace, s.hub.o.ControllerServiceAccount}
	var acc controllerAccess
	for _, gr := range controllerResources {
		ok, err := s.allowed(ctx, sa, "", gr, "create")
		if err != nil {
			return []Result{readFailed(idControllerRBAC, titleControllerRBAC, s.cluster.Name, err)}
		}
		if !ok {
			acc.clusterWideDenied = append(acc.clusterWideDenied, gr.String())
		}
	}
	if len(acc.clusterWideDenied) > 0 {
		dest, _ := s.hub.namespacesFor(ctx, s.cluster.Name)
		for _, name := range dest {
			ns, err := s.namespace(ctx, name)
			if err != nil {
				return []Result{readFailed(idControllerRBAC, titleControllerRBAC, s.cluster.Name, err)}
			}
			na := namespaceAccess{name: name, exists: ns != nil}
			if ns != nil {
				na.managedBy = ns.Labels[argocd.NamespaceManagedByLabel]
				for _, gr := range controllerResources {
					ok, err := s.allowed(ctx, sa, name, gr, "create")
					if err != nil {
						return []Result{readFailed(idControllerRBAC, titleControllerRBAC, s.cluster.Name, err)}
					}
					if !ok {
						na.denied = append(na.denied, gr.String())
					}
				}
			}
			acc.namespaces = append(acc.namespaces, na)
		}
	}
	return []Result{decideControllerAccess(s.cluster.Name, sa, acc)}
}

// decideControllerAccess passes when the managed cluster's Argo CD application controller may
// create the representative kinds in every namespace (the documents bind it to cluster-admin),
// or in each destination namespace (the documents' alternative: namespaces labelled
// argocd.argoproj.io/managed-by, for which the GitOps operator grants it access).
func decideControllerAccess(cluster string, sa serviceAccount, acc controllerAccess) Result {
	kinds := make([]string, 0, len(controllerResources))
	for _, gr := range controllerResources {
		kinds = append(kinds, gr.String())
	}
	if len(acc.clusterWideDenied) == 0 {
		return Result{ID: idControllerRBAC, Title: titleControllerRBAC, Subject: cluster, Status: StatusPass,
			Message: fmt.Sprintf("%s may create %s in every namespace", sa.user(), strings.Join(kinds, ", "))}
	}
	fix := controllerFix(sa)
	if len(acc.namespaces) == 0 {
		return Result{ID: idControllerRBAC, Title: titleControllerRBAC, Subject: cluster, Status: StatusWarn,
			Message: fmt.Sprintf("%s may not create %s in every namespace, and no destination namespace of a pull-model Application is known to check instead",
				sa.user(), strings.Join(acc.clusterWideDenied, ", ")),
			Fix: fix}
	}
	var fs []finding
	var ok []string
	for _, na := range acc.namespaces {
		switch {
		case !na.exists:
			fs = append(fs, finding{StatusFail,
				fmt.Sprintf("destination namespace %s does not exist, and %s may not create %s in every namespace", na.name, sa.user(), strings.Join(acc.clusterWideDenied, ", ")), ""})
		case len(na.denied) > 0 && na.managedBy == sa.namespace:
			fs = append(fs, finding{StatusFail,
				fmt.Sprintf("namespace %s is labelled %s=%s, but %s may not create %s there (the label grants access only through the OpenShift GitOps operator)",
					na.name, argocd.NamespaceManagedByLabel, na.managedBy, sa.user(), strings.Join(na.denied, ", ")), ""})
		case len(na.denied) > 0:
			fs = append(fs, finding{StatusFail,
				fmt.Sprintf("%s may not create %s in namespace %s", sa.user(), strings.Join(na.denied, ", "), na.name), ""})
		default:
			ok = append(ok, na.name)
		}
	}
	if len(fs) > 0 {
		r := combine(idControllerRBAC, titleControllerRBAC, cluster, "", fs)
		r.Fix = fix
		return r
	}
	return Result{ID: idControllerRBAC, Title: titleControllerRBAC, Subject: cluster, Status: StatusPass,
		Message: fmt.Sprintf("%s may create %s in the destination namespaces %s (not cluster-wide)", sa.user(), strings.Join(kinds, ", "), strings.Join(ok, ", "))}
}

// controllerFix is the documents' remedy: a ClusterRoleBinding to cluster-admin, or namespaces
// handed to Argo CD with the managed-by label.
func controllerFix(sa serviceAccount) string {
	return fmt.Sprintf(`on the managed cluster, bind the application controller to cluster-admin, as the documents do:
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: argo-admin
subjects:
  - kind: ServiceAccount
    name: %s
    namespace: %s
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: cluster-admin
or, without cluster-admin, create every destination namespace labelled for Argo CD (the OpenShift GitOps
operator then grants the controller access there; with upstream Argo CD add a Role and RoleBinding there):
apiVersion: v1
kind: Namespace
metadata:
  name: <destination namespace>
  labels:
    %s: %s`, sa.name, sa.namespace, argocd.NamespaceManagedByLabel, sa.namespace)
}

const (
	idWorkAgentRBAC    = "managed-work-agent-rbac"
	titleWorkAgentRBAC = "OCM work agent may manage Applications on the managed cluster"
)

// workAgentVerbs are what the work agent does with the Application it delivers: apply it
// (server-side apply is a patch), watch it for status feedback, delete it with the work.
var workAgentVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete"}

// deniedVerbs are the verbs the work agent may not use on Applications in a namespace.
type deniedVerbs struct {
	namespace string
	verbs     []string
}

func checkWorkAgentAccess(ctx context.Context, s *spoke) []Result {
	if r := s.unreachable(idWorkAgentRBAC, titleWorkAgentRBAC); r != nil {
		return r
	}
	sa := serviceAccount{s.hub.o.WorkAgentNamespace, s.hub.o.WorkAgentServiceAccount}
	_, appNamespaces := s.hub.namespacesFor(ctx, s.cluster.Name)
	gr := schema.GroupResource{Group: argocd.Group, Resource: "applications"}
	var denied []deniedVerbs
	for _, ns := range appNamespaces {
		d := deniedVerbs{namespace: ns}
		for _, verb := range workAgentVerbs {
			ok, err := s.allowed(ctx, sa, ns, gr, verb)
			if err != nil {
				return []Result{readFailed(idWorkAgentRBAC, titleWorkAgentRBAC, s.cluster.Name, err)}
			}
			if !ok {
				d.verbs = append(d.verbs, verb)
			}
		}
		if len(d.verbs) > 0 {
			denied = append(denied, d)
		}
	}
	return []Result{decideWorkAgentAccess(s.cluster.Name, sa, appNamespaces, denied)}
}

// decideWorkAgentAccess fails when the OCM work agent may not manage Applications in a
// namespace Applications are delivered to: the ManifestWork then never applies.
func decideWorkAgentAccess(cluster string, sa serviceAccount, namespaces []string, denied []deniedVerbs) Result {
	if len(denied) == 0 {
		return Result{ID: idWorkAgentRBAC, Title: titleWorkAgentRBAC, Subject: cluster, Status: StatusPass,
			Message: fmt.Sprintf("%s may %s applications.argoproj.io in %s", sa.user(), strings.Join(workAgentVerbs, ", "), strings.Join(namespaces, ", "))}
	}
	msgs := make([]string, 0, len(denied))
	for _, d := range denied {
		msgs = append(msgs, fmt.Sprintf("%s may not %s applications.argoproj.io in %s", sa.user(), strings.Join(d.verbs, ", "), d.namespace))
	}
	return Result{ID: idWorkAgentRBAC, Title: titleWorkAgentRBAC, Subject: cluster, Status: StatusFail,
		Message: strings.Join(msgs, "; "),
		Fix: fmt.Sprintf(`on the managed cluster, let the work agent manage Argo CD Applications:
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: argocd-pull-applications
rules:
  - apiGroups: ["argoproj.io"]
    resources: ["applications"]
    verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: argocd-pull-applications
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: argocd-pull-applications
subjects:
  - kind: ServiceAccount
    name: %s
    namespace: %s`, sa.name, sa.namespace)}
}

const (
	idAppNamespace    = "managed-app-namespace"
	titleAppNamespace = "Namespace of the Applications on the managed cluster"
)

func checkAppNamespaces(ctx context.Context, s *spoke) []Result {
	if r := s.unreachable(idAppNamespace, titleAppNamespace); r != nil {
		return r
	}
	_, wanted := s.hub.namespacesFor(ctx, s.cluster.Name)
	existing := map[string]bool{}
	for _, name := range wanted {
		ns, err := s.namespace(ctx, name)
		if err != nil {
			return []Result{readFailed(idAppNamespace, titleAppNamespace, s.cluster.Name, err)}
		}
		existing[name] = ns != nil && ns.DeletionTimestamp == nil
	}
	return []Result{decideAppNamespaces(s.cluster.Name, s.hub.o.ManagedArgoCDNamespace, wanted, existing)}
}

// decideAppNamespaces fails when a namespace the Applications are delivered to does not exist
// on the managed cluster, and warns when it is not the namespace its Argo CD runs in (Argo CD
// reconciles Applications elsewhere only when told to).
func decideAppNamespaces(cluster, argoNamespace string, wanted []string, existing map[string]bool) Result {
	var fs []finding
	for _, ns := range wanted {
		switch {
		case !existing[ns]:
			fs = append(fs, finding{StatusFail,
				fmt.Sprintf("namespace %s does not exist: the work agent cannot create the Applications there", ns),
				fmt.Sprintf("install Argo CD into %s on the managed cluster (kubectl create namespace %s), or point the template's annotation %s at the namespace its Argo CD runs in",
					ns, ns, api.AppNamespaceAnnotation)})
		case ns != argoNamespace:
			fs = append(fs, finding{StatusWarn,
				fmt.Sprintf("Applications go to %s but Argo CD runs in %s: it reconciles them there only if its application.namespaces setting includes %s", ns, argoNamespace, ns),
				fmt.Sprintf("set the template's annotation %s: %s (or pass --managed-argocd-namespace if Argo CD runs in %s)", api.AppNamespaceAnnotation, argoNamespace, ns)})
		}
	}
	return combine(idAppNamespace, titleAppNamespace, cluster,
		fmt.Sprintf("Applications go to %s, where Argo CD runs", strings.Join(wanted, ", ")), fs)
}
