package cli

import (
	"fmt"

	"github.com/spf13/pflag"
)

// addResourceTreeFlags adds the flags that reach the hub Argo CD's redis, where each pull-model
// Application's display tree is written (docs/argocd-clients.md, "The resource tree").
func addResourceTreeFlags(fs *pflag.FlagSet, f *controllerFlags) {
	t := &f.opts.ResourceTree
	fs.StringVar(&t.Address, "argocd-redis", "", "host:port of the redis the hub's Argo CD API server uses (its --redis: argocd-redis:6379, or argocd-redis-ha-haproxy:6379 with HA), where argocd-pull writes each pull-model Application's resource tree for the UI and argocd app resources; empty (the default) writes none, and each page view of a pull-model Application then asks its cluster for a refresh")
	fs.BoolVar(&t.TLS, "argocd-redis-use-tls", false, "Connect to --argocd-redis with TLS (Argo CD's --redis-use-tls)")
	fs.StringVar(&t.CAFile, "argocd-redis-ca-certificate", "", "CA bundle that verifies --argocd-redis's certificate (default: system roots)")
	fs.StringVar(&f.opts.RedisSecret, "argocd-redis-secret", f.opts.RedisSecret, "Secret in --argocd-namespace whose auth key is the redis password (Argo CD's argocd-redis), read at each new connection; a missing Secret means no password")
	fs.StringVar(&f.opts.RedisUsername, "argocd-redis-username", "", "Redis ACL user to connect to --argocd-redis as, its password in --argocd-redis-secret; one that may only set and delete the tree keys and publish on their channels (docs/install.md) holds none of Argo CD's cache. Empty (the default): redis's default user, whose password (Argo CD's argocd-redis) opens every key")
	fs.StringVar(&f.redisCompress, "argocd-redis-compress", "gzip", "How the hub's Argo CD compresses its cache (its --redis-compress): gzip or none")
	fs.StringVar(&t.KeyPrefix, "argocd-redis-key-prefix", "", "Prefix of the hub Argo CD's redis keys (its ARGOCD_REDIS_KEY_PREFIX, Argo CD 3.6 and later)")
	fs.DurationVar(&t.TTL, "resource-tree-ttl", t.TTL, "How long a written resource tree lives; argocd-pull renews each after half of it, so a tree outlives argocd-pull's removal by at most this (Argo CD's own trees live 1h, its --app-state-cache-expiration)")
}

// resourceTree checks and applies the resource tree flags.
func (f *controllerFlags) resourceTree() error {
	switch f.redisCompress {
	case "gzip":
		f.opts.ResourceTree.Gzip = true
	case "none":
		f.opts.ResourceTree.Gzip = false
	default:
		return fmt.Errorf("--argocd-redis-compress must be gzip or none, got %q", f.redisCompress)
	}
	return nil
}
