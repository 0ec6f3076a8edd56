package resourcetree

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/argocd-pull/argocd-pull/internal/localproc"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

func password(p string) func(context.Context) (string, string, error) {
	return func(context.Context) (string, string, error) { return "", p, nil }
}

// A tree is written as Argo CD writes one, with its TTL, and the API server's watchers are told;
// deleting it removes the key and tells them too. Against a real redis-server with a password, as
// Argo CD's install runs it.
func TestTheTreeIsWrittenToARealRedis(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	addr := testenv.Redis(t, "s3cret")
	c, err := NewCache(Options{Address: addr, Credentials: password("s3cret"), Encoding: Encoding{Gzip: true}, TTL: time.Hour})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = c.Close() }()
	g.Expect(c.Ping(ctx)).To(Succeed())

	reader := redis.NewClient(&redis.Options{Addr: addr, Password: "s3cret"})
	defer func() { _ = reader.Close() }()
	sub := reader.Subscribe(ctx, "app|managed-resources|team-a_guestbook|1.8.3")
	defer func() { _ = sub.Close() }()
	_, err = sub.Receive(ctx) // the subscription's confirmation
	g.Expect(err).NotTo(HaveOccurred())

	tree := Build([]any{resource("ConfigMap", "guestbook", "ui", "Healthy")}).Tree
	g.Expect(c.Put(ctx, "team-a_guestbook", tree)).To(Succeed())
	raw, err := reader.Get(ctx, "app|resources-tree|team-a_guestbook|1.8.3.gz").Bytes()
	g.Expect(err).NotTo(HaveOccurred())
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	g.Expect(err).NotTo(HaveOccurred())
	var back Tree
	g.Expect(json.NewDecoder(zr).Decode(&back)).To(Succeed())
	g.Expect(back).To(Equal(tree))
	ttl, err := reader.TTL(ctx, "app|resources-tree|team-a_guestbook|1.8.3.gz").Result()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ttl).To(BeNumerically("~", time.Hour, time.Minute))
	msg, err := sub.ReceiveMessage(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(msg.Channel).To(Equal("app|managed-resources|team-a_guestbook|1.8.3"))

	g.Expect(c.Delete(ctx, "team-a_guestbook")).To(Succeed())
	g.Expect(reader.Exists(ctx, "app|resources-tree|team-a_guestbook|1.8.3.gz").Val()).To(BeZero())
	_, err = sub.ReceiveMessage(ctx)
	g.Expect(err).NotTo(HaveOccurred(), "the deletion is announced")
	keys, err := reader.Keys(ctx, "*").Result()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(keys).To(BeEmpty(), "nothing else is written")
}

// A wrong password and an unreachable redis fail each write with an error that names the redis
// and the reason.
func TestARedisThatCannotBeWrittenSaysWhy(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	addr := testenv.Redis(t, "s3cret")
	tree := Build([]any{resource("ConfigMap", "guestbook", "ui", "Healthy")}).Tree

	wrong, err := NewCache(Options{Address: addr, Credentials: password("guess"), TTL: time.Hour})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = wrong.Close() }()
	err = wrong.Put(ctx, "guestbook", tree)
	g.Expect(err).To(MatchError(And(ContainSubstring("the hub's redis "+addr), ContainSubstring("WRONGPASS"))))
	none, err := NewCache(Options{Address: addr, TTL: time.Hour})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = none.Close() }()
	g.Expect(none.Put(ctx, "guestbook", tree)).To(MatchError(ContainSubstring("NOAUTH")))

	free, err := localproc.FreeAddr()
	g.Expect(err).NotTo(HaveOccurred())
	gone, err := NewCache(Options{Address: free, TTL: time.Hour})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = gone.Close() }()
	g.Expect(gone.Ping(ctx)).To(MatchError(And(ContainSubstring("the hub's redis "+free), ContainSubstring("connection refused"))))

	_, err = NewCache(Options{})
	g.Expect(err).To(MatchError("no redis address"))
	_, err = NewCache(Options{Address: addr})
	g.Expect(err).To(MatchError(ContainSubstring("TTL must be positive")))
}

// With TLS, as Argo CD's --redis-use-tls: the tree is written when the CA is trusted, and a
// certificate nobody vouches for is refused with a clear error; a plain connection to a TLS redis
// fails too.
func TestTheTreeIsWrittenOverTLS(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	addr, caFile := testenv.RedisTLS(t, "s3cret")
	tree := Build([]any{resource("ConfigMap", "guestbook", "ui", "Healthy")}).Tree
	open := func(opts Options) *Cache {
		opts.Address, opts.Credentials, opts.TTL = addr, password("s3cret"), time.Hour
		c, err := NewCache(opts)
		g.Expect(err).NotTo(HaveOccurred())
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	g.Expect(open(Options{TLS: true, CAFile: caFile}).Put(ctx, "guestbook", tree)).To(Succeed())
	g.Expect(open(Options{TLS: true}).Put(ctx, "guestbook", tree)).To(MatchError(ContainSubstring("certificate signed by unknown authority")))
	g.Expect(open(Options{}).Ping(ctx)).NotTo(Succeed())

	_, err := NewCache(Options{Address: addr, TTL: time.Hour, TLS: true, CAFile: "/nonexistent/ca.crt"})
	g.Expect(err).To(MatchError(ContainSubstring("reading the redis CA")))
}

// The controller's own redis user, with the ACL that install.md shows, writes and removes trees
// and managed resources and tells the API server's watchers, and can do nothing else: it reads no
// key (not Argo CD's cache, not another Application's tree), writes no key but those, subscribes
// to nothing and cannot reconfigure or flush the redis. Against a real redis-server.
func TestTheControllersRedisUserReachesOnlyTheTreeKeys(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	addr := testenv.RedisWithUser(t, "admin-s3cret", "argocd-pull", "tree-s3cret", ACL(""))
	admin := redis.NewClient(&redis.Options{Addr: addr, Password: "admin-s3cret"})
	defer func() { _ = admin.Close() }()
	// Argo CD's cache of the manifests its repo-server rendered (util/cache: mfst|<app>|...).
	argos := "mfst|argocd.argoproj.io/instance|team-a_guestbook|abc123|1.8.3.gz"
	g.Expect(admin.Set(ctx, argos, "argo's own", 0).Err()).To(Succeed())
	// A push-model Application's tree, which the hub's application controller wrote.
	g.Expect(admin.Set(ctx, "app|resources-tree|push-app|1.8.3.gz", "the push model's tree", 0).Err()).To(Succeed())

	c, err := NewCache(Options{Address: addr, Encoding: Encoding{Gzip: true}, TTL: time.Hour,
		Credentials: func(context.Context) (string, string, error) { return "argocd-pull", "tree-s3cret", nil }})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = c.Close() }()
	g.Expect(c.Ping(ctx)).To(Succeed())
	tree := Build([]any{resource("ConfigMap", "guestbook", "ui", "Healthy")}).Tree
	g.Expect(c.Put(ctx, "team-a_guestbook", tree)).To(Succeed())
	g.Expect(admin.Exists(ctx, "app|resources-tree|team-a_guestbook|1.8.3.gz").Val()).To(Equal(int64(1)))
	g.Expect(c.PutManaged(ctx, "team-a_guestbook", []map[string]string{{"kind": "ConfigMap", "name": "ui", "liveState": "null"}})).To(Succeed())
	g.Expect(admin.Exists(ctx, "app|managed-resources|team-a_guestbook|1.8.3.gz").Val()).To(Equal(int64(1)))
	g.Expect(c.Delete(ctx, "team-a_guestbook")).To(Succeed())
	g.Expect(c.DeleteManaged(ctx, "team-a_guestbook")).To(Succeed())
	g.Expect(admin.Exists(ctx, "app|managed-resources|team-a_guestbook|1.8.3.gz").Val()).To(BeZero())

	user := redis.NewClient(&redis.Options{Addr: addr, Username: "argocd-pull", Password: "tree-s3cret", Protocol: 2, DisableIdentity: true})
	defer func() { _ = user.Close() }()
	for what, err := range map[string]error{
		"read Argo CD's cache":   user.Get(ctx, argos).Err(),
		"read managed resources": user.Get(ctx, "app|managed-resources|team-a_guestbook|1.8.3.gz").Err(),
		"read a tree":            user.Get(ctx, "app|resources-tree|team-a_guestbook|1.8.3.gz").Err(),
		// SET with GET answers the old value: a read of any tree or managed resources (a push-model
		// Application's too) by a user that may only write them (issue 92, hole 8).
		"read a tree with SET GET":            user.Do(ctx, "SET", "app|resources-tree|push-app|1.8.3.gz", "x", "GET").Err(),
		"read managed resources with SET GET": user.Do(ctx, "SET", "app|managed-resources|push-app|1.8.3.gz", "x", "GET").Err(),
		"read a tree with GETDEL":             user.Do(ctx, "GETDEL", "app|resources-tree|push-app|1.8.3.gz").Err(),
		"overwrite Argo CD's cache":           user.Set(ctx, argos, "poisoned", 0).Err(),
		"delete Argo CD's cache":              user.Del(ctx, argos).Err(),
		"list the keys":                       user.Keys(ctx, "*").Err(),
		"scan the keys":                       user.Scan(ctx, 0, "*", 10).Err(),
		"flush the redis":                     user.FlushAll(ctx).Err(),
		"read the configuration":              user.ConfigGet(ctx, "requirepass").Err(),
		"publish on another channel":          user.Publish(ctx, "argocd-secret", "x").Err(),
		"run a script":                        user.Eval(ctx, "return redis.call('get', KEYS[1])", []string{argos}).Err(),
		"list the ACL":                        user.Do(ctx, "ACL", "LIST").Err(),
		"subscribe to Argo CD's watch": func() error {
			sub := user.Subscribe(ctx, "app|managed-resources|team-a_guestbook|1.8.3")
			defer func() { _ = sub.Close() }()
			_, err := sub.Receive(ctx)
			return err
		}(),
	} {
		g.Expect(err).To(MatchError(ContainSubstring("NOPERM")), "the tree user may not %s", what)
	}
	g.Expect(admin.Get(ctx, argos).Val()).To(Equal("argo's own"))
	g.Expect(admin.Get(ctx, "app|resources-tree|push-app|1.8.3.gz").Val()).To(Equal("the push model's tree"), "not overwritten by the refused SET")
}

// docs/install.md shows the ACL that ACL returns.
func TestInstallDocsShowTheACL(t *testing.T) {
	data, err := os.ReadFile("../../docs/install.md")
	if err != nil {
		t.Fatal(err)
	}
	rules := strings.Join(ACL(""), " ")
	if !strings.Contains(string(data), "`"+rules+"`") {
		t.Errorf("docs/install.md does not show the ACL %q", rules)
	}
	quoted := strings.NewReplacer("%W~app|resources-tree|*", "'%W~app|resources-tree|*'", "%W~app|managed-resources|*", "'%W~app|managed-resources|*'", "&app|managed-resources|*", "'&app|managed-resources|*'").Replace(rules)
	if !strings.Contains(string(data), quoted) {
		t.Errorf("docs/install.md's ACL SETUSER does not set the rules %q", quoted)
	}
}
