package simagent

import (
	"context"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
)

// clusters is what the simulated clusters hold, by key, for both fleets: the last object seen of
// each (a ManifestWork for Fleet, a hub Application for Push), its Application, and what was last
// written to the hub for it (W), with the queue their syncs run from.
type clusters[T, W any] struct {
	mu      sync.Mutex
	entries map[types.NamespacedName]*simulated[T, W]
	queue   workqueue.TypedRateLimitingInterface[types.NamespacedName]

	// Writes counts the writes to the hub.
	Writes atomic.Int64
	// OnChange, when set, is called (outside any lock) with the key and its Application after the
	// simulation changed it; it must not keep the object.
	OnChange func(key types.NamespacedName, app *App, now time.Time)
}

// simulated is one Application's cluster.
type simulated[T, W any] struct {
	seen    T // the last version of the object it acts on
	app     App
	written W // what was last written to the hub for it
	timer   *time.Timer
}

func newClusters[T, W any]() clusters[T, W] {
	return clusters[T, W]{entries: map[types.NamespacedName]*simulated[T, W]{},
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](50*time.Millisecond, 5*time.Second))}
}

// observe takes the object key's cluster acts on, added or updated, and queues its sync.
func (c *clusters[T, W]) observe(key types.NamespacedName, obj T) {
	c.mu.Lock()
	s := c.entries[key]
	if s == nil {
		s = &simulated[T, W]{}
		c.entries[key] = s
	}
	if older(obj, s.seen) {
		// An informer never hands over a version older than one it handed over: a caller that
		// read the object before the simulation's own write and hands it over after would make
		// it run a finished request again.
		c.mu.Unlock()
		return
	}
	s.seen = obj
	c.mu.Unlock()
	c.queue.Add(key)
}

// older says whether obj is an older version than seen, by their resourceVersions (which the
// apiserver the simulation runs against numbers in order).
func older(obj, seen any) bool {
	type versioned interface{ GetResourceVersion() string }
	o, ok1 := obj.(versioned)
	s, ok2 := seen.(versioned)
	if !ok1 || !ok2 || reflect.ValueOf(seen).IsNil() {
		return false
	}
	ov, err1 := strconv.ParseUint(o.GetResourceVersion(), 10, 64)
	sv, err2 := strconv.ParseUint(s.GetResourceVersion(), 10, 64)
	return err1 == nil && err2 == nil && ov < sv
}

// Forget takes a deleted object: its Application is gone with it.
func (c *clusters[T, W]) Forget(key types.NamespacedName) {
	c.mu.Lock()
	if s := c.entries[key]; s != nil && s.timer != nil {
		s.timer.Stop()
	}
	delete(c.entries, key)
	c.mu.Unlock()
}

// App returns a copy of what the simulation holds for key: the Application, its operations'
// starts; false when there is none.
func (c *clusters[T, W]) App(key types.NamespacedName) (App, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.entries[key]
	if s == nil || s.app.Object == nil {
		return App{}, false
	}
	return s.app.snapshot(), true
}

// Redeliveries counts the sync requests some cluster's Argo CD started more than once.
func (c *clusters[T, W]) Redeliveries() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, s := range c.entries {
		n += s.app.redeliveries()
	}
	return n
}

// wake queues key's sync again at next (zero: not before something changes), replacing the wake
// set before. Called with c.mu held.
func (c *clusters[T, W]) wake(key types.NamespacedName, s *simulated[T, W], next time.Time) {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	if !next.IsZero() {
		s.timer = time.AfterFunc(time.Until(next), func() { c.queue.Add(key) })
	}
}

// unlockAndTell releases c.mu, held since s was read, and tells OnChange when the sync at now
// changed s's Application.
func (c *clusters[T, W]) unlockAndTell(key types.NamespacedName, s *simulated[T, W], changed bool, now time.Time) {
	if !changed || c.OnChange == nil {
		c.mu.Unlock()
		return
	}
	app := s.app.snapshot()
	c.mu.Unlock()
	c.OnChange(key, &app, now)
}

// wrote records what was written to the hub for key, if it is still simulated.
func (c *clusters[T, W]) wrote(key types.NamespacedName, written W) {
	c.mu.Lock()
	if s := c.entries[key]; s != nil {
		s.written = written
	}
	c.mu.Unlock()
}

// run calls sync for each queued key with workers goroutines until ctx ends, again later (rate
// limited) when it fails.
func (c *clusters[T, W]) run(ctx context.Context, workers int, sync func(context.Context, types.NamespacedName) error) {
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	for range workers {
		go func() {
			for {
				key, quit := c.queue.Get()
				if quit {
					return
				}
				if err := sync(ctx, key); err != nil && ctx.Err() == nil {
					c.queue.AddRateLimited(key)
				} else {
					c.queue.Forget(key)
				}
				c.queue.Done(key)
			}
		}()
	}
}
