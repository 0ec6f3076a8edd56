package controller

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
type createdWorks struct {
	mu    sync.Mutex
	byUID map[types.UID]createdWork
}

type createdWork struct {
	resourceVersion string
	at              time.Time
}

// createdWorksTTL is how long a created work is remembered: its event normally arrives within
// milliseconds.
const createdWorksTTL = time.Minute

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
}

// take reports whether o is a work this process created, unchanged since, and forgets it.
func (c *createdWorks) take(o client.Object) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.byUID[o.GetUID()]
	if !ok {
		return false
	}
	delete(c.byUID, o.GetUID())
	return w.resourceVersion == o.GetResourceVersion()
}
