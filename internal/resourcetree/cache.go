package resourcetree

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/argocd-pull/argocd-pull/internal/tlsfiles"
)

// Options say how to reach the hub Argo CD's redis, and how its cache is laid out.
type Options struct {
	// Address is host:port of the redis (or of the HA proxy before it) that the hub's Argo CD API
	// server uses (its --redis). Empty: no tree is written.
	Address string
	// TLS connects with TLS (Argo CD's --redis-use-tls), trusting CAFile when set, the system's
	// roots otherwise.
	TLS    bool
	CAFile string
	// Credentials returns the username and password for each new connection (the argocd-redis
	// Secret's auth, read when connecting: a rotated password is picked up).
	Credentials func(ctx context.Context) (username, password string, err error)
	Encoding
	// TTL is how long a written tree lives unless written again (Argo CD's controller uses its
	// --app-state-cache-expiration, 1 h): a tree argocd-pull stops renewing goes away.
	TTL time.Duration
}

// ACL is the redis ACL of a user that may do what argocd-pull does in the hub Argo CD's redis and
// nothing else: set and delete the resource-tree and managed-resources keys (under the prefix, see
// TreeKey and ManagedKey), publish on their channels (Channel), and ping. Such a user reads no
// key, so it cannot read Argo CD's cache or its other keys, and writes no key but those two
// (redis.conf: "user <name> on ><password> " and these rules; ACL SETUSER takes them alike).
func ACL(keyPrefix string) []string {
	return []string{"resetkeys", "%W~" + keyPrefix + "app|resources-tree|*", "%W~" + keyPrefix + "app|managed-resources|*",
		"resetchannels", "&app|managed-resources|*", "-@all", "+set", "+del", "+publish", "+ping"}
}

// Cache writes trees into the hub Argo CD's redis.
type Cache struct {
	opts   Options
	client *redis.Client
}

// redisLog sends go-redis's own messages (its pool's dial retries) to the controller's log at
// debug level: each failed write already returns its error to the reconcile that logs and counts
// it, and says it on the Application.
type redisLog struct{}

func (redisLog) Printf(ctx context.Context, format string, v ...any) {
	logf.FromContext(ctx).WithName("redis").V(1).Info(fmt.Sprintf(format, v...))
}

func init() { redis.SetLogger(redisLog{}) }

// NewCache connects lazily: nothing is dialled before the first write.
func NewCache(opts Options) (*Cache, error) {
	if opts.Address == "" {
		return nil, errors.New("no redis address")
	}
	if opts.TTL <= 0 {
		return nil, fmt.Errorf("the tree's TTL must be positive, got %s", opts.TTL)
	}
	ro := &redis.Options{
		Addr: opts.Address,
		// Short: a write that fails is retried by its reconcile, with backoff.
		DialTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second,
		MaxRetries: 1, PoolSize: 4, MinIdleConns: 0,
		// Not the RESP3 HELLO handshake: a redis behind Argo CD's HA proxy speaks RESP2.
		Protocol: 2,
		// No client-side identification: plain redis and proxies answer alike.
		DisableIdentity: true,
	}
	if opts.Credentials != nil {
		ro.CredentialsProviderContext = opts.Credentials
	}
	if opts.TLS {
		cfg, err := tlsfiles.ClientConfig("redis", opts.CAFile, false)
		if err != nil {
			return nil, err
		}
		ro.TLSConfig = cfg
	}
	return &Cache{opts: opts, client: redis.NewClient(ro)}, nil
}

// Put writes instance's tree with the TTL, then tells the API server's watchers (the UI's stream).
func (c *Cache) Put(ctx context.Context, instance string, t Tree) error {
	if err := c.set(ctx, c.opts.TreeKey(instance), t, "the resource tree"); err != nil {
		return err
	}
	return c.notify(ctx, instance)
}

// PutManaged writes instance's managed resources (what internal/resourceviews makes: Argo CD's
// ResourceDiff items) with the TTL. Written before the tree, whose write tells the watchers.
func (c *Cache) PutManaged(ctx context.Context, instance string, items any) error {
	return c.set(ctx, c.opts.ManagedKey(instance), items, "the managed resources")
}

// set writes v, encoded as Argo CD's cache holds values, under key with the TTL; what names it in
// errors.
func (c *Cache) set(ctx context.Context, key string, v any, what string) error {
	data, err := c.opts.Encode(v)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", what, err)
	}
	if err := c.client.Set(ctx, key, data, c.opts.TTL).Err(); err != nil {
		return fmt.Errorf("writing %s to the hub's redis %s: %w", what, c.opts.Address, err)
	}
	return nil
}

// DeleteManaged removes instance's managed resources (a missing key is fine).
func (c *Cache) DeleteManaged(ctx context.Context, instance string) error {
	if err := c.client.Del(ctx, c.opts.ManagedKey(instance)).Err(); err != nil {
		return fmt.Errorf("removing the managed resources from the hub's redis %s: %w", c.opts.Address, err)
	}
	return nil
}

// Delete removes instance's tree, and tells the watchers.
func (c *Cache) Delete(ctx context.Context, instance string) error {
	if err := c.client.Del(ctx, c.opts.TreeKey(instance)).Err(); err != nil {
		return fmt.Errorf("removing the resource tree from the hub's redis %s: %w", c.opts.Address, err)
	}
	return c.notify(ctx, instance)
}

func (c *Cache) notify(ctx context.Context, instance string) error {
	if err := c.client.Publish(ctx, c.opts.Channel(instance), "").Err(); err != nil {
		return fmt.Errorf("notifying the hub's redis %s of the resource tree: %w", c.opts.Address, err)
	}
	return nil
}

// Ping checks the connection and the credentials.
func (c *Cache) Ping(ctx context.Context) error {
	if err := c.client.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("the hub's redis %s: %w", c.opts.Address, err)
	}
	return nil
}

// Close closes the connections.
func (c *Cache) Close() error { return c.client.Close() }

// TreeKeys lists the resource-tree keys in the redis (every Application's, argocd-pull's and Argo
// CD's own), at most limit of them: doctor compares their cache versions.
func (c *Cache) TreeKeys(ctx context.Context, limit int) ([]string, error) {
	var keys []string
	iter := c.client.Scan(ctx, 0, c.opts.KeyPrefix+"app|resources-tree|*", 1000).Iterator()
	for iter.Next(ctx) && len(keys) < limit {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return keys, fmt.Errorf("listing the resource trees in the hub's redis %s: %w", c.opts.Address, err)
	}
	return keys, nil
}
