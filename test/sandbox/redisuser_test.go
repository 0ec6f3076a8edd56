package sandbox_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/argocd-pull/argocd-pull/internal/sandbox"
)

// The lab's controller writes the resource trees as a redis ACL user of its own, set up as
// docs/install.md shows: its connections are that user's, the trees are there, and that user
// reads nothing of the hub Argo CD's cache.
func TestTheLabsControllerWritesTreesAsItsOwnRedisUser(t *testing.T) {
	requireLab(t)
	addr, err := lab.Addr("hub-redis")
	if err != nil {
		t.Fatal(err)
	}
	admin := redis.NewClient(&redis.Options{Addr: addr, Password: sandbox.HubRedisPassword, Protocol: 2, DisableIdentity: true})
	defer func() { _ = admin.Close() }()
	var trees []string
	eventually(t, "the documents' Applications' trees in the hub's redis", time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		keys, err := admin.Keys(ctx, "app|resources-tree|*").Result()
		trees = keys
		return len(keys) > 0, err
	})
	clients, err := admin.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(clients, "user="+sandbox.HubRedisTreeUser+" ") {
		t.Errorf("no connection of user %s to the hub's redis:\n%s", sandbox.HubRedisTreeUser, clients)
	}
	user := redis.NewClient(&redis.Options{Addr: addr, Username: sandbox.HubRedisTreeUser, Password: sandbox.HubRedisTreePassword, Protocol: 2, DisableIdentity: true})
	defer func() { _ = user.Close() }()
	if err := user.Ping(ctx).Err(); err != nil {
		t.Fatalf("%s: %v", sandbox.HubRedisTreeUser, err)
	}
	for _, err := range []error{user.Get(ctx, trees[0]).Err(), user.Keys(ctx, "*").Err(), user.Set(ctx, "mfst|argocd.argoproj.io/instance|x|abc|1.8.3", "x", 0).Err()} {
		if err == nil || !strings.Contains(err.Error(), "NOPERM") {
			t.Errorf("%s was not refused: %v", sandbox.HubRedisTreeUser, err)
		}
	}
}
