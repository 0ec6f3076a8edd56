package doctor

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/repocreds"
)

// checkRepositoryCredentials gathers what decideCredentials decides on: the pull-model
// Applications of the Argo CD namespace, and every Argo CD credential Secret there, opted in or
// not (never their values: only what repocreds.Parse reads).
func checkRepositoryCredentials(ctx context.Context, h *hub) []Result {
	apps, err := h.pullApplications(ctx)
	if err != nil {
		return []Result{readFailed(idCredentials, titleCredentials, "", err)}
	}
	kinds, err := labels.NewRequirement(repocreds.SecretTypeLabel, selection.In, []string{string(repocreds.Repository), string(repocreds.Template)})
	if err != nil {
		return []Result{readFailed(idCredentials, titleCredentials, "", err)}
	}
	secrets := &corev1.SecretList{}
	if err := h.o.Hub.Client.List(ctx, secrets, client.InNamespace(h.o.ArgoCDNamespace), client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*kinds)}); err != nil {
		return []Result{readFailed(idCredentials, titleCredentials, "", fmt.Errorf("listing the repository credentials in %s: %w", h.o.ArgoCDNamespace, err))}
	}
	f := credentialFacts{}
	for _, a := range apps {
		f.apps = append(f.apps, repocreds.Application{Key: types.NamespacedName{Namespace: a.namespace, Name: a.name}, Cluster: a.cluster,
			Project: a.project, Platform: a.namespace == h.o.ArgoCDNamespace, URLs: a.repoURLs})
	}
	for i := range secrets.Items {
		s := &secrets.Items[i]
		c, err := repocreds.Parse(s, func(project string) bool {
			return h.o.Hub.Client.Get(ctx, client.ObjectKey{Namespace: h.o.ArgoCDNamespace, Name: project}, argocd.NewAppProject()) == nil
		})
		optedIn := s.Labels[repocreds.OptInLabel] == "true"
		switch {
		case err != nil && optedIn:
			f.refused = append(f.refused, fmt.Sprintf("%s (%v)", c.Key.Name, err))
		case err != nil:
		case optedIn:
			f.optedIn = append(f.optedIn, c)
		default:
			f.notOptedIn = append(f.notOptedIn, c)
		}
	}
	return []Result{decideCredentials(f)}
}
