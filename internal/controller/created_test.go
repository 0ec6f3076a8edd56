package controller

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/api"
)

func workWith(uid, resourceVersion string) *workv1.ManifestWork {
	return &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), ResourceVersion: resourceVersion}}
}

func TestCreatedWorksRecogniseOnlyTheExactWorkCreatedOnce(t *testing.T) {
	var c createdWorks
	now := time.Now()
	c.add(workWith("a", "10"), now)
	c.add(workWith("b", "11"), now)
	if c.take(workWith("x", "10")) {
		t.Error("a work this process did not create is taken for its own")
	}
	if !c.take(workWith("a", "10")) {
		t.Error("the work just created is not recognised")
	}
	if c.take(workWith("a", "10")) {
		t.Error("a second event of the same work is taken for the creation again")
	}
	if c.take(workWith("b", "12")) {
		t.Error("a work changed since it was created is taken for the one created")
	}
	if n := c.len(); n != 0 {
		t.Errorf("%d works remembered after their events, want 0", n)
	}
}

// Creation events that arrive before the create returns are never taken: what they leave is
// forgotten once older than createdWorksTTL.
func TestCreatedWorksStayBounded(t *testing.T) {
	var c createdWorks
	start := time.Now()
	for i := range 100_000 {
		c.add(workWith(fmt.Sprint(i), "1"), start.Add(time.Duration(i)*time.Millisecond))
	}
	// 100,000 creates 1 ms apart: at most a TTL's worth (60,000) and one sweep interval remain.
	if n := c.len(); n > 60_000+1024 {
		t.Errorf("%d works remembered, want at most %d", n, 60_000+1024)
	}
}

// len is the number of works remembered (tests only).
func (c *createdWorks) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byUID)
}

// Between a create and its event the cache does not show the work: the Application waits (behind)
// until the event, or until the cache shows the work to one of its reconciles (shown), or at most
// pendingCreateBound; another Application does not wait.
func TestAnApplicationWaitsForTheWorkItCreatedToReachTheCache(t *testing.T) {
	var c createdWorks
	now := time.Now()
	web := types.NamespacedName{Namespace: "argocd", Name: "web"}
	work := workWith("a", "10")
	work.Annotations = map[string]string{api.HubApplicationNamespaceAnnotation: web.Namespace, api.HubApplicationNameAnnotation: web.Name}
	if c.behind(web, now) {
		t.Error("an Application that created nothing waits")
	}
	c.add(work, now)
	if !c.behind(web, now.Add(time.Millisecond)) {
		t.Error("an Application whose new work the cache does not show yet does not wait: it would create it again")
	}
	if c.behind(types.NamespacedName{Namespace: "argocd", Name: "db"}, now) {
		t.Error("another Application waits")
	}
	c.take(work)
	if c.behind(web, now.Add(time.Millisecond)) {
		t.Error("the Application waits after its work's creation event")
	}

	c.add(work, now)
	c.shown(web)
	if c.behind(web, now) {
		t.Error("the Application waits although the cache showed it its work")
	}

	c.add(work, now)
	if c.behind(web, now.Add(pendingCreateBound+time.Millisecond)) {
		t.Error("the Application waits past the bound (its work deleted before it saw it)")
	}
}
