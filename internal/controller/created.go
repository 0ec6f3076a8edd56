package controller

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

// createdWorks remembers the ManifestWorks this process created, by UID and resource version,
// until their creation event arrives. That event tells the propagation controller nothing it
// does not know: the Application it would wake was reconciled into exactly that work. During a
// rollout those wake-ups were a third of the controller's reconciles.
//
// Only the event of the exact object created is recognised (same UID and resource version): a
// work changed since, or created by another process (a former leader, a person), still wakes its
// Application. An event that arrives before the create returns is not recognised either; its
// entry is forgotten after createdWorksTTL, so what the set holds stays bounded by the rate of
// creates.
//
// Until that event arrives the cache does not show the work either: pending holds, per hub
// Application, when this process created a work of it, so that a reconcile of that Application in
// between (another event woke it) waits for the cache instead of deciding from a cache without the
// work, and creating it a second time (refused, AlreadyExists, and a WorkWriteFailed condition on
// a healthy Application).
type createdWorks struct {
	mu      sync.Mutex
	byUID   map[types.UID]createdWork
	pending map[types.NamespacedName]time.Time
}

type createdWork struct {
	resourceVersion string
	at              time.Time
}

// createdWorksTTL is how long a created work is remembered: its event normally arrives within
// milliseconds.
const createdWorksTTL = time.Minute

// pendingCreateBound is how long at most an Application waits for the cache to show the work this
// process created of it (an event that came before the create returned is not seen as its own,
// and a work deleted since would otherwise hold its Application until the bound).
const pendingCreateBound = 10 * time.Second

// pendingCreateRecheck is when an Application that waits for its new work in the cache is
// reconciled again: the work's own creation event does not wake it (see take).
const pendingCreateRecheck = 200 * time.Millisecond

// add remembers o, just created, at now.
func (c *createdWorks) add(o client.Object, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byUID == nil {
		c.byUID = map[types.UID]createdWork{}
	}
	if len(c.byUID) >= 1024 && len(c.byUID)%1024 == 0 {
		for uid, w := range c.byUID {
			if now.Sub(w.at) > createdWorksTTL {
				delete(c.byUID, uid)
			}
		}
	}
	c.byUID[o.GetUID()] = createdWork{resourceVersion: o.GetResourceVersion(), at: now}
	if app, ok := manifestwork.HubApplicationOf(o); ok {
		if c.pending == nil {
			c.pending = map[types.NamespacedName]time.Time{}
		}
		if len(c.pending) >= 1024 && len(c.pending)%1024 == 0 {
			for key, at := range c.pending {
				if now.Sub(at) > pendingCreateBound {
					delete(c.pending, key)
				}
			}
		}
		c.pending[app] = now
	}
}

// behind reports whether app's reconcile runs before the cache shows the work this process just
// created of it (its creation event has not arrived), as of now.
func (c *createdWorks) behind(app types.NamespacedName, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.pending[app]
	if ok && now.Sub(at) > pendingCreateBound {
		delete(c.pending, app)
		return false
	}
	return ok
}

// shown forgets that app waits for its new work: the cache shows it.
func (c *createdWorks) shown(app types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pending, app)
}

// take reports whether o is a work this process created, unchanged since, and forgets it. It is
// called with each work's creation event, once the cache holds the work.
func (c *createdWorks) take(o client.Object) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if app, ok := manifestwork.HubApplicationOf(o); ok {
		delete(c.pending, app)
	}
	w, ok := c.byUID[o.GetUID()]
	if !ok {
		return false
	}
	delete(c.byUID, o.GetUID())
	return w.resourceVersion == o.GetResourceVersion()
}
