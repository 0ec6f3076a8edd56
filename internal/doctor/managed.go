package doctor

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/hubapis"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

// spoke holds what the checks of one managed cluster read.
type spoke struct {
	hub     *hub
	cluster Cluster

	served memo[map[string]bool]
}

func (s *spoke) servedAPIs() (map[string]bool, error) {
	return s.served.get(func() (map[string]bool, error) {
		served, err := hubapis.Served(s.cluster.Discovery)
		if err != nil {
			return nil, fmt.Errorf("managed cluster %s: %w", s.cluster.Name, err)
		}
		return served, nil
	})
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
	served, _ := s.servedAPIs() // the runner answered a discovery error
	return []Result{decideApplicationCRD(s.cluster.Name, served)}
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

const (
	idAppNamespace    = "managed-app-namespace"
	titleAppNamespace = "Namespace of the Applications on the managed cluster"
)

func checkAppNamespaces(ctx context.Context, s *spoke) []Result {
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

// checkArgoCDVersion reads the managed cluster's Application CRD and the image of its Argo CD
// application controller, and decides whether they report what argocd-pull reads.
func checkArgoCDVersion(ctx context.Context, s *spoke) []Result {
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	if err := s.cluster.Client.Get(ctx, client.ObjectKey{Name: "applications.argoproj.io"}, crd); err != nil {
		return []Result{readFailed(idArgoCDVersion, titleArgoCDVersion, s.cluster.Name, fmt.Errorf("reading the Application CRD: %w", err))}
	}
	return []Result{decideArgoCDVersion(s.cluster.Name, s.argoCDVersion(ctx), missingFields(servedSchema(crd), manifestwork.FeedbackJSONPaths()))}
}

// servedSchema is the openAPIV3Schema of the CRD's storage version (nil when it has none).
func servedSchema(crd *unstructured.Unstructured) map[string]any {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		v, _ := v.(map[string]any)
		if storage, _ := v["storage"].(bool); storage {
			schema, _, _ := unstructured.NestedMap(v, "schema", "openAPIV3Schema")
			return schema
		}
	}
	return nil
}

// argoCDVersion is the release the image of the managed cluster's Argo CD application controller
// names (a StatefulSet, or a Deployment in older installs, of that name in the Argo CD
// namespace), "" when none can be read.
func (s *spoke) argoCDVersion(ctx context.Context) string {
	for _, kind := range []string{"StatefulSet", "Deployment"} {
		w := &unstructured.Unstructured{}
		w.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: kind})
		if err := s.cluster.Client.Get(ctx, client.ObjectKey{Namespace: s.hub.o.ManagedArgoCDNamespace, Name: "argocd-application-controller"}, w); err != nil {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(w.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			c, _ := c.(map[string]any)
			image, _ := c["image"].(string)
			if v := imageVersion(image); v != "" {
				return v
			}
		}
	}
	return ""
}
