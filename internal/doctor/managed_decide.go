package doctor

// The managed-cluster checks' decisions: pure functions from what was read to a Result.

import (
	"fmt"
	"strings"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
)

// decideApplicationCRD fails when the managed cluster does not serve Applications: the work
// agent cannot create the Application and there is no Argo CD to sync it.
func decideApplicationCRD(cluster string, served map[string]bool) Result {
	if !served["applications.argoproj.io"] {
		return Result{ID: idAppCRD, Title: titleAppCRD, Subject: cluster, Status: StatusFail,
			Message: "applications.argoproj.io is not served: Argo CD is not installed there",
			Fix: "install Argo CD on the managed cluster, as on the hub (kubectl create namespace argocd; " +
				"kubectl apply -n argocd --server-side --force-conflicts -f https://raw.githubusercontent.com/argoproj/argo-cd/stable/manifests/install.yaml), " +
				"or the OpenShift GitOps operator at the hub's version"}
	}
	return Result{ID: idAppCRD, Title: titleAppCRD, Subject: cluster, Status: StatusPass,
		Message: "applications.argoproj.io is served"}
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
