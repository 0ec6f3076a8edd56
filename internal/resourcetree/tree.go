// Package resourcetree writes a display-only resource tree of each pull-model Application into the
// hub Argo CD's cache (its redis), so that Argo CD's API server, CLI and web UI show the resources
// a managed cluster reports, with their health, without a refresh sent to the cluster on each page
// view.
//
// The tree is read-only by construction (DESIGN.md 3b): Argo CD's API server refuses every
// resource-level verb on a node without a uid before it builds a client (getAppLiveResource,
// server/application/application.go: found.UID == ""), so no node here has one. Every node has a
// health (a node with none reads as Missing in the CLI), none has parent refs (a flat tree: no
// cycle can hang the UI), and only fields argocd-pull checks go in: the resource's group, version,
// kind, namespace and name, each one Kubernetes could hold (appstatus.InvalidResource), and its
// health status from Argo CD's fixed list. No health message, image, URL or info from the cluster.
//
// tree.go decides (pure); cache.go writes to redis.
package resourcetree

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/argocd-pull/argocd-pull/internal/appstatus"
)

// CacheVersion is the version of Argo CD's cache layout (common.CacheVersion), the last part of
// every key. Argo CD 3.2 to 3.6 all use 1.8.3; one that reads another does not see the tree
// (doctor names both).
const CacheVersion = "1.8.3"

// Caps on a tree: MaxNodes nodes, and MaxEncodedSize bytes of JSON before compression. The hub
// Application's status.resources, the tree's source, is capped at appstatus.MaxResourcesSize
// (32 KiB) by argocd-pull; these caps hold whatever else wrote it (no status subresource on
// Applications: whoever may update one may write its status).
const (
	MaxNodes       = 1000
	MaxEncodedSize = 64 * 1024
)

// Tree is the part of Argo CD's ApplicationTree (pkg/apis/application/v1alpha1) that argocd-pull
// writes: nodes only, no orphaned nodes, hosts or shards.
type Tree struct {
	Nodes []Node `json:"nodes,omitempty"`
}

// Node is Argo CD's ResourceNode with the fields argocd-pull writes: its ResourceRef (inline, as
// Argo CD's), its parents and its health. Build gives no UID and no parent, ever; only
// internal/resourceviews, for an Application whose destination is its own cluster's channel, gives
// the uids and parents it read from that cluster.
type Node struct {
	Ref
	ParentRefs []Ref  `json:"parentRefs,omitempty"`
	Health     Health `json:"health"`
}

// Ref is Argo CD's ResourceRef: what a node is, and a node's parent.
type Ref struct {
	Group     string `json:"group,omitempty"`
	Version   string `json:"version,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	UID       string `json:"uid,omitempty"`
}

// Key is which object r names, as Argo CD's ResourceKey: its group, kind, namespace and name (no
// version, no uid).
func (r Ref) Key() Ref {
	return Ref{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
}

// Health is Argo CD's HealthStatus without its message (free text from the cluster).
type Health struct {
	Status string `json:"status"`
}

// Built is a tree with what building it left out.
type Built struct {
	Tree Tree
	// Dropped counts the entries that name no Kubernetes object or carry a status Argo CD never
	// writes, and those listed twice; Cut the valid ones over the caps.
	Dropped, Cut int
}

// Build is the display tree of an Application whose status.resources is resources (as the hub
// holds it). A resource with no health (a kind Argo CD has no health check for: a ConfigMap) is
// Healthy, as Argo CD counts it in the Application's health; one the cluster does not have is
// Missing, as the cluster reports it.
func Build(resources []any) Built {
	var out Built
	seen := map[Ref]bool{}
	size := len(`{"nodes":[]}`)
	for _, entry := range resources {
		item, ok := entry.(map[string]any)
		if !ok || appstatus.InvalidResource(item) != "" {
			out.Dropped++
			continue
		}
		n := Node{Health: Health{Status: "Healthy"}}
		n.Group, _ = item["group"].(string)
		n.Version, _ = item["version"].(string)
		n.Kind, _ = item["kind"].(string)
		n.Namespace, _ = item["namespace"].(string)
		n.Name, _ = item["name"].(string)
		if h, ok := item["health"].(map[string]any); ok {
			if s, ok := h["status"].(string); ok && s != "" {
				n.Health.Status = s
			}
		}
		id := n.Key()
		if seen[id] {
			out.Dropped++
			continue
		}
		seen[id] = true
		encoded, _ := json.Marshal(n)
		if len(out.Tree.Nodes) == MaxNodes || size+len(encoded)+1 > MaxEncodedSize {
			out.Cut++
			continue
		}
		size += len(encoded) + 1
		out.Tree.Nodes = append(out.Tree.Nodes, n)
	}
	return out
}

// Message says what Build left out, "" when nothing.
func (b Built) Message() string {
	switch {
	case b.Dropped > 0 && b.Cut > 0:
		return fmt.Sprintf("the resource tree leaves out %d invalid or repeated resources and %d over its cap (%d nodes, %d bytes)", b.Dropped, b.Cut, MaxNodes, MaxEncodedSize)
	case b.Dropped > 0:
		return fmt.Sprintf("the resource tree leaves out %d invalid or repeated resources", b.Dropped)
	case b.Cut > 0:
		return fmt.Sprintf("the resource tree leaves out %d resources over its cap (%d nodes, %d bytes)", b.Cut, MaxNodes, MaxEncodedSize)
	}
	return ""
}

// Encoding is how Argo CD stores a cache value: JSON, gzip'd unless its --redis-compress is none.
type Encoding struct {
	Gzip bool
	// KeyPrefix is Argo CD's ARGOCD_REDIS_KEY_PREFIX (3.6 and later): put before every key, not
	// before channel names.
	KeyPrefix string
}

// Instance is the name Argo CD's cache knows an Application by (Application.InstanceName): its
// name in the Argo CD namespace, namespace_name in any other.
func Instance(namespace, name, argoCDNamespace string) string {
	if namespace == "" || namespace == argoCDNamespace {
		return name
	}
	return namespace + "_" + name
}

// TreeKey is the redis key of an Application's resource tree (shard 0, the only one written).
func (e Encoding) TreeKey(instance string) string {
	key := e.KeyPrefix + "app|resources-tree|" + instance + "|" + CacheVersion
	if e.Gzip {
		key += ".gz"
	}
	return key
}

// ManagedKey is the redis key of an Application's managed resources (Argo CD's
// SetAppManagedResources): what its API server answers ManagedResources with.
func (e Encoding) ManagedKey(instance string) string {
	key := e.KeyPrefix + "app|managed-resources|" + instance + "|" + CacheVersion
	if e.Gzip {
		key += ".gz"
	}
	return key
}

// Channel is the redis channel Argo CD's API server watches for an Application's tree (its
// WatchResourceTree, which the UI streams): named after the managed-resources key.
func (e Encoding) Channel(instance string) string {
	return "app|managed-resources|" + instance + "|" + CacheVersion
}

// Encode is v (a Tree, or managed resources) as Argo CD's cache stores it: JSON with a trailing
// newline (json.Encoder), gzip'd when e.Gzip.
func (e Encoding) Encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	if !e.Gzip {
		if err := json.NewEncoder(&buf).Encode(v); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	// A gzip writer holds some 800 KB of compressor state: one for each tree was more than half of
	// all the bytes the controller allocated while it delivered a new fleet (docs/benchmarks.md).
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	zw.Reset(&buf)
	if err := json.NewEncoder(zw).Encode(v); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// gzipWriters are the writers Encode reuses (Reset onto each tree's buffer), at gzip's fastest
// level: a tree is a few hundred bytes, and a Reset at the default level clears 256 KB of hash
// chains. Argo CD reads any level.
var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed) // a valid level: no error
	return zw
}}

// Sum identifies a tree's content: a tree is written again only when its sum changes (or to renew
// its TTL).
func (t Tree) Sum() [sha256.Size]byte {
	data, _ := json.Marshal(t)
	return sha256.Sum256(data)
}

// ParseTreeKey reads a resource-tree key as Argo CD writes it: the Application's instance name and
// the cache version (see TreeKey; a shard number after the instance, and the compression suffix,
// are dropped). ok is false for a key of another layout.
func (e Encoding) ParseTreeKey(key string) (instance, version string, ok bool) {
	rest, found := strings.CutPrefix(key, e.KeyPrefix+"app|resources-tree|")
	if !found {
		return "", "", false
	}
	rest = strings.TrimSuffix(rest, ".gz")
	parts := strings.Split(rest, "|")
	switch len(parts) {
	case 2: // instance|version
		return parts[0], parts[1], true
	case 3: // instance|shard|version
		return parts[0], parts[2], true
	}
	return "", "", false
}

// HubVersions reads the resource-tree keys of a redis: the cache versions of the trees of every
// Application but the pull-model ones (isPull, by instance), which the hub's own Argo CD
// controller wrote, with their counts. A hub Argo CD that writes only other versions than
// CacheVersion reads those, and not argocd-pull's.
func (e Encoding) HubVersions(keys []string, isPull func(instance string) bool) map[string]int {
	hub := map[string]int{}
	for _, k := range keys {
		if instance, version, ok := e.ParseTreeKey(k); ok && !isPull(instance) {
			hub[version]++
		}
	}
	return hub
}

// OtherVersion is the cache version the hub's Argo CD writes when it is not CacheVersion (and it
// writes none at CacheVersion), "" otherwise: no tree argocd-pull writes would be read.
func OtherVersion(hub map[string]int) string {
	if hub[CacheVersion] > 0 {
		return ""
	}
	var other []string
	for v := range hub {
		other = append(other, v)
	}
	slices.Sort(other)
	return strings.Join(other, ", ")
}
