package controller

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

// A status patch computed from the version the last one was computed from, with the same data,
// is not sent again; the cache at that version is behind it until an answer changes nothing.
func TestAStatusPatchIsSentOncePerVersion(t *testing.T) {
	g := NewWithT(t)
	var s statusPatches
	key := types.NamespacedName{Namespace: "argocd", Name: "app"}
	sends := 0
	answer := func(rv string) func() (string, error) {
		return func() (string, error) { sends++; return rv, nil }
	}
	g.Expect(s.pending(key, "1")).To(BeFalse(), "nothing sent yet")

	sent, err := s.send(key, "1", []byte(`{"status":{"health":{"status":"Healthy"}}}`), answer("2"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sent).To(BeTrue())
	g.Expect(s.pending(key, "1")).To(BeTrue(), "the cache at 1 has not brought the patch back")
	g.Expect(s.pending(key, "2")).To(BeFalse())

	sent, _ = s.send(key, "1", []byte(`{"status":{"health":{"status":"Healthy"}}}`), answer("3"))
	g.Expect(sent).To(BeFalse(), "a sibling's write of the same patch from the same version")
	sent, _ = s.send(key, "1", []byte(`{"status":{"sync":{"status":"OutOfSync"}}}`), answer("3"))
	g.Expect(sent).To(BeTrue(), "another patch from the same version is sent")
	sent, _ = s.send(key, "3", []byte(`{"status":{"sync":{"status":"OutOfSync"}}}`), answer("3"))
	g.Expect(sent).To(BeTrue(), "from a newer version")
	g.Expect(s.pending(key, "3")).To(BeFalse(), "an answer that changed nothing brings no event back: never wait for one")
	g.Expect(sends).To(Equal(3))

	_, err = s.send(key, "4", []byte(`{}`), func() (string, error) { return "", errors.New("conflict") })
	g.Expect(err).To(MatchError("conflict"))
	sent, _ = s.send(key, "4", []byte(`{}`), answer("5"))
	g.Expect(sent).To(BeTrue(), "a patch that failed was not sent")

	s.forget(key)
	g.Expect(s.pending(key, "4")).To(BeFalse())
}

// Two writers of one Application never patch it at once; writers of two Applications do.
func TestStatusPatchesOfOneApplicationDoNotOverlap(t *testing.T) {
	g := NewWithT(t)
	var s statusPatches
	var running, most atomic.Int32
	patch := func() (string, error) {
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(5 * time.Millisecond)
		running.Add(-1)
		return "next", nil
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			_, _ = s.send(types.NamespacedName{Name: "app"}, "1", []byte{byte(i)}, patch)
		})
	}
	wg.Wait()
	g.Expect(most.Load()).To(Equal(int32(1)))

	most.Store(0)
	for i := range 8 {
		wg.Go(func() {
			_, _ = s.send(types.NamespacedName{Name: string(rune('a' + i))}, "1", []byte{1}, patch)
		})
	}
	wg.Wait()
	g.Expect(most.Load()).To(BeNumerically(">", 1))
}
