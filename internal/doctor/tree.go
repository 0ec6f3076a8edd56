package doctor

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/internal/resourcetree"
)

// The controller's events on a hub Application about its tree (internal/controller/resourcetree.go).
const (
	reasonTreeNotWritten = "ResourceTreeNotWritten"
	reasonTreeWritten    = "ResourceTreeWritten"
)

// checkResourceTree gathers what decideResourceTree decides on.
func checkResourceTree(ctx context.Context, h *hub) []Result {
	f := treeFacts{address: h.o.ArgoCDRedis.Address, enc: h.o.ArgoCDRedis.Encoding}
	apps, err := h.pullApplications(ctx)
	if err != nil {
		return []Result{readFailed(idResourceTree, titleResourceTree, "", err)}
	}
	for _, a := range apps {
		f.pull = append(f.pull, resourcetree.Instance(a.namespace, a.name, h.o.ArgoCDNamespace))
	}
	if f.notWritten, err = h.treeNotWritten(ctx); err != nil {
		return []Result{readFailed(idResourceTree, titleResourceTree, "", err)}
	}
	if f.address != "" {
		f.keys, f.connErr = h.treeKeys(ctx)
	}
	return []Result{decideResourceTree(f)}
}

// treeNotWritten are the Applications of the Argo CD namespace whose last resource-tree event
// says their tree could not be written.
func (h *hub) treeNotWritten(ctx context.Context) ([]string, error) {
	events := &corev1.EventList{}
	if err := h.o.Hub.Client.List(ctx, events, client.InNamespace(h.o.ArgoCDNamespace)); err != nil {
		return nil, fmt.Errorf("listing the events in %s: %w", h.o.ArgoCDNamespace, err)
	}
	type last struct {
		at      time.Time
		message string
		failed  bool
	}
	byApp := map[string]last{}
	for _, e := range events.Items {
		if e.InvolvedObject.Kind != "Application" || (e.Reason != reasonTreeNotWritten && e.Reason != reasonTreeWritten) {
			continue
		}
		at := e.LastTimestamp.Time
		if e.EventTime.After(at) {
			at = e.EventTime.Time
		}
		if e.Series != nil && e.Series.LastObservedTime.After(at) {
			at = e.Series.LastObservedTime.Time
		}
		key := e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name
		if l, ok := byApp[key]; !ok || at.After(l.at) {
			byApp[key] = last{at: at, message: e.Message, failed: e.Reason == reasonTreeNotWritten}
		}
	}
	var out []string
	for app, l := range byApp {
		if l.failed {
			out = append(out, app+": "+l.message)
		}
	}
	return out, nil
}

// treeKeys connects to the redis doctor was given, with the password of the hub's argocd-redis
// Secret, and lists the resource-tree keys.
func (h *hub) treeKeys(ctx context.Context) ([]string, error) {
	opts := h.o.ArgoCDRedis
	opts.TTL = time.Hour // unused: doctor writes nothing
	password := ""
	s := &corev1.Secret{}
	switch err := h.o.Hub.Client.Get(ctx, client.ObjectKey{Namespace: h.o.ArgoCDNamespace, Name: h.o.RedisSecret}, s); {
	case err == nil:
		password = string(s.Data["auth"])
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading the redis password from Secret %s/%s: %w", h.o.ArgoCDNamespace, h.o.RedisSecret, err)
	}
	opts.Credentials = func(context.Context) (string, string, error) { return "", password, nil }
	c, err := resourcetree.NewCache(opts)
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Close() }()
	if err := c.Ping(ctx); err != nil {
		return nil, err
	}
	return c.TreeKeys(ctx, 100000)
}
