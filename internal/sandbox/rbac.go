package sandbox

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The identities the documents give the managed cluster's Argo CD application controller and OCM
// work agent. The lab's processes run outside pods with the cluster's admin kubeconfig, so these
// grant them nothing; they are there so that the lab is set up as the documents say, and
// `argocd-pull doctor` checks that setup against a real apiserver.
const (
	ArgoControllerServiceAccount = "openshift-gitops-argocd-application-controller"
	WorkAgentNamespace           = "open-cluster-management-agent"
	WorkAgentServiceAccount      = "klusterlet-work-sa"
)

// installDocumentsRBAC creates, on a managed cluster, the RHACM documents' ClusterRoleBinding
// argo-admin (cluster-admin for the Argo CD application controller) and, as the blog's
// example/managed does, the work agent's right to manage Argo CD Applications.
func installDocumentsRBAC(ctx context.Context, c client.Client) error {
	workAgentApps := "argocd-pull-lab:work-agent-applications"
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: WorkAgentNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: ArgoControllerServiceAccount, Namespace: ArgoNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: WorkAgentServiceAccount, Namespace: WorkAgentNamespace}},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "argo-admin"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: ArgoControllerServiceAccount, Namespace: ArgoNamespace}},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		},
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: workAgentApps},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"argoproj.io"}, Resources: []string{"applications"},
				Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}},
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: workAgentApps},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: WorkAgentServiceAccount, Namespace: WorkAgentNamespace}},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: workAgentApps},
		},
	}
	for _, o := range objs {
		if err := client.IgnoreAlreadyExists(c.Create(ctx, o)); err != nil {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}
