package resourceviews

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/argocd-pull/argocd-pull/internal/appstatus"
	"github.com/argocd-pull/argocd-pull/internal/clusteraccess"
	"github.com/argocd-pull/argocd-pull/internal/resourcetree"
)

// Limits bound what one read of a cluster for one Application costs.
type Limits struct {
	// Gets is how many listed resources are read, one GET each (the whole object: its metadata
	// for the tree, its live state for the managed resources).
	Gets int
	// Namespaces is in how many of the listed resources' namespaces children are listed.
	Namespaces int
	// List is the page size of each list of children; one page is read, no more.
	List int64
	// Body is the largest answer the cluster may give to one request, in bytes.
	Body int64
	// Total is what all the answers of one read may add up to, in bytes (0: no budget).
	Total int64
	// Deadline is how long one read may take in all (0: none but each request's own timeout).
	Deadline time.Duration
}

// DefaultLimits: a few hundred reads at most, 64 MiB and 30 s at most in all, for the largest
// Application. Without Total and Deadline, 100 answers just under Body, each slow, would cost
// about 1.6 GiB and a worker for 17 minutes.
var DefaultLimits = Limits{Gets: 100, Namespaces: 10, List: 500, Body: 16 << 20, Total: 64 << 20, Deadline: 30 * time.Second}

// ErrReadBudget is what a read gets when the cluster's answers add up to more than Limits.Total.
var ErrReadBudget = errors.New("the cluster's answers to one read add up to more than its budget")

// ownerKinds are the kinds whose children the tree shows: a namespace that holds one is listed for
// ReplicaSets and Pods.
var ownerKinds = []string{"Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob"}

// Reads says what one Read cost and skipped.
type Reads struct {
	// Requests made to the cluster.
	Requests int
	// Skipped counts the listed resources and namespaces left unread over the limits, or that the
	// account may not read (a kind outside its rights: their nodes keep no uid).
	Skipped int
	// Forbidden counts those of them the cluster refused with 403: rights not there yet (the
	// account's were delivered a moment ago) or a kind outside them.
	Forbidden int
}

// Refused says why the Application's AppProject does not permit a listed resource on its
// destination, "" when it does (tenancy.ResourceRefused); nil permits every one.
type Refused func(id resourcetree.Ref) string

// Read gathers, through cfg (the channel to one cluster, as its read-only account), the facts of
// the tree of an Application that lists listed (its status.resources): each listed resource whole
// (its uid and owners, and its live state) and the ReplicaSets and Pods of the namespaces that hold
// their owners, with their health. A resource refused says the Application's project does not
// permit is never asked for (Facts.NotPermitted); one the cluster does not have, or the account may
// not read, is left out; any other failure (the token refused, the channel down) is the error, and
// the caller keeps the display tree.
func Read(ctx context.Context, cfg *rest.Config, listed []any, lim Limits, refused Refused) (Facts, Reads, error) {
	if lim.Deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, lim.Deadline)
		defer cancel()
	}
	var budget *atomic.Int64
	if lim.Total > 0 {
		budget = &atomic.Int64{}
		budget.Store(lim.Total)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return capBodies{rt, lim.Body, budget} })
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return Facts{}, Reads{}, err
	}
	typed, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return Facts{}, Reads{}, err
	}
	f := Facts{Listed: listed, Objects: map[resourcetree.Ref]*unstructured.Unstructured{}, Unread: map[resourcetree.Ref]bool{}}
	var reads Reads
	var namespaces []string
	for _, entry := range listed {
		item, ok := entry.(map[string]any)
		if !ok || appstatus.InvalidResource(item) != "" {
			continue // the display tree drops it too
		}
		str := func(k string) string { s, _ := item[k].(string); return s }
		gvk := schema.GroupVersionKind{Group: str("group"), Version: str("version"), Kind: str("kind")}
		ns, name := str("namespace"), str("name")
		id := resourcetree.Ref{Group: gvk.Group, Kind: gvk.Kind, Namespace: ns, Name: name}
		if refused != nil {
			if why := refused(id); why != "" {
				f.Unread[id] = true
				if f.NotPermitted++; f.NotPermitted == 1 {
					f.NotPermittedWhy = fmt.Sprintf("%s %s/%s: %s", gvk.Kind, ns, name, why)
				}
				continue
			}
		}
		if slices.Contains(ownerKinds, gvk.Kind) && ns != "" && !slices.Contains(namespaces, ns) {
			namespaces = append(namespaces, ns)
		}
		if reads.Requests >= lim.Gets || gvk.Version == "" {
			reads.Skipped++
			f.Unread[id] = true
			continue
		}
		gvr, _ := meta.UnsafeGuessKindToResource(gvk)
		if gvr.Group == "" && !clusteraccess.CoreReadable(gvr.Resource) {
			reads.Skipped++ // a Secret: the account may never read it, so it is not asked
			f.Unread[id] = true
			continue
		}
		reads.Requests++
		var o *unstructured.Unstructured
		if ns == "" {
			o, err = dyn.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
		} else {
			o, err = dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		}
		switch {
		case apierrors.IsNotFound(err):
			continue // Missing on the cluster: no uid
		case apierrors.IsForbidden(err):
			reads.Skipped++
			reads.Forbidden++
			f.Unread[id] = true
			continue
		case err != nil:
			return f, reads, fmt.Errorf("reading %s %s/%s on the cluster: %w", gvk.Kind, ns, name, err)
		}
		f.Objects[id] = o
		f.Live = append(f.Live, fromObject(gvk, o))
	}
	slices.Sort(namespaces)
	if len(namespaces) > lim.Namespaces {
		reads.Skipped += len(namespaces) - lim.Namespaces
		namespaces = namespaces[:lim.Namespaces]
	}
	opts := metav1.ListOptions{Limit: lim.List}
	for _, ns := range namespaces {
		reads.Requests++
		sets, err := typed.AppsV1().ReplicaSets(ns).List(ctx, opts)
		if err := skipForbidden(err, &reads); err != nil {
			return f, reads, fmt.Errorf("listing the ReplicaSets of %s on the cluster: %w", ns, err)
		}
		if err == nil {
			reads.page(sets.Continue)
			for i := range sets.Items {
				rs := &sets.Items[i]
				f.Children = append(f.Children, fromMeta(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"}, rs.ObjectMeta, ReplicaSetHealth(rs)))
			}
		}
		reads.Requests++
		pods, err := typed.CoreV1().Pods(ns).List(ctx, opts)
		if err := skipForbidden(err, &reads); err != nil {
			return f, reads, fmt.Errorf("listing the Pods of %s on the cluster: %w", ns, err)
		}
		if err == nil {
			reads.page(pods.Continue)
			for i := range pods.Items {
				p := &pods.Items[i]
				f.Children = append(f.Children, fromMeta(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, p.ObjectMeta, PodHealth(p)))
			}
		}
	}
	return f, reads, nil
}

// probeBody bounds the answer to Probe: the cluster's list of API versions is a few hundred bytes.
const probeBody = 64 << 10

// Probe asks the cluster, through cfg, for its core API versions (GET /api): one small request,
// which every token the cluster accepts may make (system:discovery) and which it refuses, 401, for
// a token it revoked. nil when it answered; the error otherwise (the token refused, the channel down).
func Probe(ctx context.Context, cfg *rest.Config) error {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return capBodies{rt, probeBody, nil} })
	typed, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	switch _, err := typed.Discovery().RESTClient().Get().AbsPath("/api").DoRaw(ctx); {
	case err == nil:
		return nil
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the cluster refuses the token: Unauthorized (%w)", err)
	default:
		return fmt.Errorf("asking the cluster for its API versions: %w", err)
	}
}

// page counts a list that has more than its one page read.
func (r *Reads) page(continueToken string) {
	if continueToken != "" {
		r.Skipped++
	}
}

// skipForbidden is a list's error for Read: none when the account may not list the kind (counted).
func skipForbidden(err error, reads *Reads) error {
	if apierrors.IsForbidden(err) {
		reads.Skipped++
		reads.Forbidden++
		return nil
	}
	return err
}

// fromObject is what the tree takes of a listed resource as read (its health is the Application's).
func fromObject(gvk schema.GroupVersionKind, o *unstructured.Unstructured) Object {
	out := Object{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: o.GetNamespace(), Name: o.GetName(), UID: string(o.GetUID())}
	for _, ref := range o.GetOwnerReferences() {
		out.Owners = append(out.Owners, string(ref.UID))
	}
	return out
}

func fromMeta(gvk schema.GroupVersionKind, m metav1.ObjectMeta, health string) Object {
	o := Object{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: m.Namespace, Name: m.Name, UID: string(m.UID), Health: health}
	for _, ref := range m.OwnerReferences {
		o.Owners = append(o.Owners, string(ref.UID))
	}
	return o
}

// ErrBodyTooLarge is what a read gets when the cluster's answer is larger than Limits.Body.
var ErrBodyTooLarge = errors.New("the cluster's answer is larger than the limit")

// capBodies fails the reading of an answer past max bytes, and of any answer once budget (shared
// by the answers of one read; nil: none) is spent: the cluster's apiserver is not trusted to keep
// its answers small.
type capBodies struct {
	next   http.RoundTripper
	max    int64
	budget *atomic.Int64
}

func (c capBodies) RoundTrip(req *http.Request) (*http.Response, error) {
	if c.budget != nil && c.budget.Load() <= 0 {
		return nil, ErrReadBudget
	}
	resp, err := c.next.RoundTrip(req)
	if err != nil || c.max <= 0 {
		return resp, err
	}
	resp.Body = &cappedBody{ReadCloser: resp.Body, left: c.max, budget: c.budget}
	return resp, nil
}

type cappedBody struct {
	io.ReadCloser
	left   int64
	budget *atomic.Int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, ErrBodyTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left+1] // one byte more shows whether the answer goes on
	}
	n, err := b.ReadCloser.Read(p)
	if int64(n) > b.left {
		b.left = 0
		return n - 1, ErrBodyTooLarge
	}
	b.left -= int64(n)
	if b.budget != nil && b.budget.Add(-int64(n)) < 0 {
		return n, ErrReadBudget
	}
	return n, err
}
