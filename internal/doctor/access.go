package doctor

// The cluster-access check's reads: argocd-pull's cluster secrets in the Argo CD namespace, each
// cluster's add-ons, and the cluster's own answer to what the secret's token may do, asked through
// cluster-proxy with exactly the secret's server, token and CA, as the hub's Argo CD uses them.

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/clusteraccess"
	"github.com/argocd-pull/argocd-pull/internal/gather"
	"github.com/argocd-pull/argocd-pull/internal/gitops"
)

// probeParallel is how many clusters are asked at once; probeTimeout bounds each question.
const (
	probeParallel = 8
	probeTimeout  = 15 * time.Second
)

// checkClusterAccess judges each cluster whose argocd-pull secret carries OCM's channel or says why
// not. A fleet whose secrets all pass is one line.
func checkClusterAccess(ctx context.Context, h *hub) []Result {
	secrets := &corev1.SecretList{}
	if err := h.o.Hub.Client.List(ctx, secrets, client.InNamespace(h.o.ArgoCDNamespace),
		client.MatchingLabels{gitops.SecretTypeLabel: "cluster", api.ManagedByLabel: api.ManagedByValue}); err != nil {
		return []Result{readFailed(idClusterAccess, titleClusterAccess, "", fmt.Errorf("listing cluster secrets in %s: %w", h.o.ArgoCDNamespace, err))}
	}
	var channel []channelSecret
	for i := range secrets.Items {
		c := channelSecret{secret: &secrets.Items[i]}
		c.token, c.ca, c.err = clusteraccess.ParseClusterConfig(c.secret.Data["config"])
		if c.token != "" || c.secret.Annotations[gitops.AccessRefusedAnnotation] != "" {
			channel = append(channel, c)
		}
	}
	if len(channel) == 0 {
		return []Result{skipped(idClusterAccess, titleClusterAccess, "",
			"no argocd-pull cluster secret in "+h.o.ArgoCDNamespace+" uses OCM's channel (no GitOpsCluster sets managedServiceAccountRef)")}
	}
	facts := make([]channelFacts, len(channel))
	var wg sync.WaitGroup
	sem := make(chan struct{}, probeParallel)
	for i, s := range channel {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			facts[i] = h.channelFacts(ctx, s)
		})
	}
	wg.Wait()
	now := time.Now()
	var out []Result
	var passed []string
	for _, f := range facts {
		r := decideClusterAccess(f, now)
		if r.Status == StatusPass {
			passed = append(passed, f.Cluster)
			continue
		}
		out = append(out, r)
	}
	switch {
	case len(passed) == 1 && len(out) == 0:
		return []Result{decideClusterAccess(facts[0], now)}
	case len(passed) > 0:
		slices.Sort(passed)
		out = append([]Result{{ID: idClusterAccess, Title: titleClusterAccess, Status: StatusPass,
			Message: fmt.Sprintf("%d clusters reached through cluster-proxy with their secrets' tokens, read-only: %s", len(passed), limitList(passed, 10))}}, out...)
	}
	return out
}

// channelSecret is an argocd-pull cluster secret with its config's token and CA, as parsed once
// (err when the config does not parse).
type channelSecret struct {
	secret *corev1.Secret
	token  string
	ca     []byte
	err    error
}

// channelFacts reads what decideClusterAccess needs of one secret's cluster. The token is used
// for the one question to its own cluster, and nothing of it is kept or shown.
func (h *hub) channelFacts(ctx context.Context, c channelSecret) channelFacts {
	s, token, ca := c.secret, c.token, c.ca
	f := channelFacts{Cluster: s.Labels[api.ClusterLabel], Refused: s.Annotations[gitops.AccessRefusedAnnotation],
		Server: string(s.Data["server"]), Namespace: h.o.ManagedArgoCDNamespace}
	if f.Cluster == "" {
		f.Cluster = string(s.Data["name"])
	}
	if f.Refused != "" {
		return f
	}
	if c.err != nil {
		f.TokenErr = c.err
		return f
	}
	f.Expiry, f.TokenErr = clusteraccess.TokenExpiry(token)
	f.AddOns, _, f.AddOnErr = gather.ChannelAddOns(ctx, h.o.Hub.Client, f.Cluster)
	cfg, err := probeConfig(f.Server, h.o.ClusterProxyURL, f.Cluster, token, ca)
	if err != nil {
		f.ProbeErr = err
		return f
	}
	f.Reached = cfg.Host
	f.Rules, f.Incomplete, f.ProbeErr = rulesReview(ctx, cfg, f.Namespace)
	if f.ProbeErr == nil {
		f.Others, f.Unreviewed, f.NamespacesErr = otherNamespaces(ctx, cfg, f.Namespace)
	}
	return f
}

// maxReviewedNamespaces bounds the namespaces, besides the Argo CD one, whose rights doctor asks
// each cluster for: one request each.
const maxReviewedNamespaces = 100

// otherNamespaces asks the cluster, as the token's account, what it may do in each of its other
// namespaces (a RoleBinding there gives rights the Argo CD namespace's answer does not show), the
// first maxReviewedNamespaces by name; unreviewed counts the rest.
func otherNamespaces(ctx context.Context, cfg *rest.Config, argoNamespace string) (map[string][]authorizationv1.ResourceRule, int, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, 0, err
	}
	list, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, 0, err
	}
	var names []string
	for _, ns := range list.Items {
		if ns.Name != argoNamespace {
			names = append(names, ns.Name)
		}
	}
	slices.Sort(names)
	unreviewed := max(0, len(names)-maxReviewedNamespaces)
	names = names[:len(names)-unreviewed]
	out := make(map[string][]authorizationv1.ResourceRule, len(names))
	for _, ns := range names {
		rules, _, err := rulesReview(ctx, cfg, ns)
		if err != nil {
			return out, unreviewed + len(names) - len(out), fmt.Errorf("namespace %s: %w", ns, err)
		}
		out[ns] = rules
	}
	return out, unreviewed, nil
}

// probeConfig is the client of the hub's Argo CD for one cluster: the secret's server, token and
// CA, and none of doctor's own credentials. With override (--cluster-proxy-url: the user server as
// this machine reaches it, a port-forward), the request goes there, for the cluster's path, and the
// certificate is still checked against the secret's server's name.
func probeConfig(server, override, cluster, token string, ca []byte) (*rest.Config, error) {
	cfg := &rest.Config{Host: server, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: ca}, Timeout: probeTimeout,
		UserAgent: "argocd-pull-doctor"}
	if override == "" {
		return cfg, nil
	}
	u, err := url.Parse(server)
	if err != nil {
		return nil, fmt.Errorf("the secret's server %q: %w", server, err)
	}
	cfg.Host = clusteraccess.Channel{URL: override}.Server(cluster)
	cfg.ServerName = u.Hostname()
	return cfg, nil
}

// rulesReview asks the cluster, as the token's account, what it may do in namespace.
func rulesReview(ctx context.Context, cfg *rest.Config, namespace string) ([]authorizationv1.ResourceRule, bool, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, false, err
	}
	r, err := cs.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{
		Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: namespace}}, metav1.CreateOptions{})
	if err != nil {
		return nil, false, err
	}
	return r.Status.ResourceRules, r.Status.Incomplete, nil
}
