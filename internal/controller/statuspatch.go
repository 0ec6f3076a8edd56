package controller

import (
	"crypto/sha256"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// statusPatches serialises the status patches of each hub Application, and remembers the last one
// sent with the resourceVersion it was computed from. An Application is written by its own
// reconcile and, for the RollingSync barrier, by a sibling's (see AppStatusReconciler.write),
// each from the cache as it read it: the second of two writes from the same version repeats the
// first one.
type statusPatches struct {
	m sync.Map // types.NamespacedName → *lastPatch
}

type lastPatch struct {
	mu   sync.Mutex
	from string // the resourceVersion the patch was computed from
	sum  [sha256.Size]byte
}

func (s *statusPatches) of(key types.NamespacedName) *lastPatch {
	p, _ := s.m.LoadOrStore(key, &lastPatch{})
	return p.(*lastPatch)
}

// pending says whether the cache, showing key at resourceVersion rv, has not brought back the last
// patch sent: it was computed from rv and changed it.
func (s *statusPatches) pending(key types.NamespacedName, rv string) bool {
	p, ok := s.m.Load(key)
	if !ok {
		return false
	}
	last := p.(*lastPatch)
	last.mu.Lock()
	defer last.mu.Unlock()
	return last.from == rv
}

// send sends data, computed from key's resourceVersion rv, with patch (which returns the
// resourceVersion answered), unless that patch was sent from rv already. Patches of the same key
// never overlap.
func (s *statusPatches) send(key types.NamespacedName, rv string, data []byte, patch func() (string, error)) (sent bool, err error) {
	last, sum := s.of(key), sha256.Sum256(data)
	last.mu.Lock()
	defer last.mu.Unlock()
	if last.from == rv && last.sum == sum {
		return false, nil
	}
	answered, err := patch()
	if err != nil {
		return false, err
	}
	if answered != rv { // a patch that changed nothing brings no event back
		last.from, last.sum = rv, sum
	}
	return true, nil
}

// forget drops key's record: its Application is gone.
func (s *statusPatches) forget(key types.NamespacedName) {
	s.m.Delete(key)
}
