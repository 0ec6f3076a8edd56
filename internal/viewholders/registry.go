package viewholders

import (
	"context"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
)

// State is where a name's record stands.
type State int

const (
	// Pending: the record is asked for and not yet in force; the name gets no uid tree yet.
	Pending State = iota
	// Held: the record was written at least Settle ago; the name may hold a uid tree.
	Held
	// Full: the record's object has no room; the name gets no uid tree.
	Full
)

// Registry keeps the records (package doc) and writes them, alone: one Registry per install, in
// the leader. Its Start loads the objects; until then every name is Pending.
type Registry struct {
	// Reader reads the objects once at start (uncached); Writer writes them.
	Reader client.Reader
	Writer client.Writer
	// Namespace is the hub Argo CD's namespace, where the policy's binding looks for them.
	Namespace string
	// Settle is how long after its write a record counts: the apiserver's policy reads the
	// objects from a watch, a moment behind the write.
	Settle time.Duration
	// Every is how often the records asked for are written (one write per changed object).
	Every time.Duration
	// Check is how often the objects are read back (one GET each): a record someone removed or
	// changed is no longer held, and is written again (0: never).
	Check time.Duration
	// Loaded is called once after Start has read the objects, with each name they record, for
	// the tree controller to look at again: one whose Application is gone has its tree removed
	// and its record released.
	Loaded func(ctx context.Context, names []types.NamespacedName)
	Log    logr.Logger

	mu     sync.Mutex
	loaded bool
	shards [Shards]shard
}

type shard struct {
	want    map[string]string // the records the object should hold
	have    map[string]record // the records its last write holds
	bytes   int               // size of want
	dirty   bool
	version string // the object's resourceVersion; "" when it does not exist
	full    bool   // said once in the log
}

type record struct {
	value string
	at    time.Time // when the write that carried it succeeded
}

// Hold asks that key hold value and says whether it does, as of now.
func (r *Registry) Hold(key, value string, now time.Time) State {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.loaded {
		return Pending
	}
	s := &r.shards[Shard(key)]
	if was, ok := s.want[key]; !ok || was != value {
		grow := size(key, value)
		if ok {
			grow -= size(key, was)
		}
		if s.bytes+grow > MaxShardBytes {
			if !s.full {
				r.Log.Info("A ResourceViewHolders object is full: Applications whose names it would hold get the display tree", "name", ObjectName(Shard(key)), "bytes", s.bytes)
				s.full = true
			}
			return Full
		}
		s.want[key] = value
		s.bytes += grow
		s.dirty = true
		return Pending
	}
	if h, ok := s.have[key]; ok && h.value == value && !now.Before(h.at.Add(r.Settle)) {
		return Held
	}
	return Pending
}

// Release drops key's record: call it once the name's tree is gone from the cache.
func (r *Registry) Release(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &r.shards[Shard(key)]
	if was, ok := s.want[key]; ok {
		delete(s.want, key)
		s.bytes -= size(key, was)
		s.dirty, s.full = true, false
	}
}

// Start loads the objects, tells Loaded their names, and writes what is asked for until ctx
// ends. A manager.Runnable (leader only).
func (r *Registry) Start(ctx context.Context) error {
	var names []types.NamespacedName
	for i := range r.shards {
		s := shard{want: map[string]string{}, have: map[string]record{}}
		held := &v1alpha1.ResourceViewHolders{}
		for {
			err := r.Reader.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: ObjectName(i)}, held)
			if err == nil || apierrors.IsNotFound(err) {
				break
			}
			r.Log.Error(err, "Reading the resource view holders; trying again", "name", ObjectName(i))
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(5 * time.Second):
			}
		}
		s.version = held.ResourceVersion
		for k, v := range held.Holders {
			s.want[k], s.have[k] = v, record{value: v}
			s.bytes += size(k, v)
			if ns, name, ok := strings.Cut(k, "_"); ok {
				names = append(names, types.NamespacedName{Namespace: ns, Name: name})
			}
		}
		r.mu.Lock()
		r.shards[i] = s
		r.mu.Unlock()
	}
	r.mu.Lock()
	r.loaded = true
	r.mu.Unlock()
	if r.Loaded != nil {
		r.Loaded(ctx, names)
	}
	t := time.NewTicker(r.Every)
	defer t.Stop()
	var check <-chan time.Time
	if r.Check > 0 {
		c := time.NewTicker(r.Check)
		defer c.Stop()
		check = c.C
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			for i := range r.shards {
				r.flush(ctx, i)
			}
		case <-check:
			for i := range r.shards {
				r.check(ctx, i)
			}
		}
	}
}

// check reads shard i back: a record its object no longer holds as written (deleted, or changed,
// by someone else) is no longer held, and the shard is written again.
func (r *Registry) check(ctx context.Context, i int) {
	now := &v1alpha1.ResourceViewHolders{}
	err := r.Reader.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: ObjectName(i)}, now)
	if err != nil && !apierrors.IsNotFound(err) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &r.shards[i]
	drifted := false
	for k, h := range s.have {
		if v, ok := now.Holders[k]; !ok || v != h.value {
			delete(s.have, k)
			drifted = true
		}
	}
	if drifted || (err != nil && len(s.want) > 0) {
		r.Log.Info("A ResourceViewHolders object lost records argocd-pull wrote: writing them again; their names get the display tree until then", "name", ObjectName(i))
		s.version, s.dirty = now.ResourceVersion, true
	}
}

// flush writes shard i when its records changed.
func (r *Registry) flush(ctx context.Context, i int) {
	r.mu.Lock()
	s := &r.shards[i]
	if !s.dirty {
		r.mu.Unlock()
		return
	}
	data, version := maps.Clone(s.want), s.version
	s.dirty = false
	r.mu.Unlock()

	held := &v1alpha1.ResourceViewHolders{ObjectMeta: metav1.ObjectMeta{
		Name: ObjectName(i), Namespace: r.Namespace, ResourceVersion: version,
		Labels: map[string]string{"app.kubernetes.io/managed-by": "argocd-pull"},
	}, Holders: data}
	var err error
	if version == "" {
		err = r.Writer.Create(ctx, held)
	} else {
		err = r.Writer.Update(ctx, held)
	}
	if err != nil {
		// Written again at the next tick. On a conflict, or an object made or deleted by someone
		// else, its version is read first (outside the lock: Hold is on the trees' path).
		version, known := "", false
		if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err) {
			now := &v1alpha1.ResourceViewHolders{}
			if gerr := r.Reader.Get(ctx, client.ObjectKeyFromObject(held), now); gerr == nil || apierrors.IsNotFound(gerr) {
				version, known = now.ResourceVersion, true
			}
		} else {
			r.Log.Error(err, "Writing the resource view holders; trying again", "name", held.Name)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		s.dirty = true
		if known {
			s.version = version
		}
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s.version = held.ResourceVersion
	now := time.Now()
	for k, v := range data {
		if h, ok := s.have[k]; !ok || h.value != v {
			s.have[k] = record{value: v, at: now}
		}
	}
	for k := range s.have {
		if _, ok := data[k]; !ok {
			delete(s.have, k)
		}
	}
}
