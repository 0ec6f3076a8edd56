// Package viewholders records which hub Applications hold a resource tree with their cluster's
// uids in the hub Argo CD's cache, and for which destination, in ResourceViewHolders objects of the
// Argo CD namespace, which the hub's admission policy argocd-pull-resource-view-holders reads on
// each Application create (config/admission).
//
// Argo CD's API server finds an Application's tree by the Application's name and sends each view
// of a node with a uid (live manifest, patch, delete, actions, logs, events) to the destination it
// reads from the Application at that request. A tree outlives its Application for as long as
// argocd-pull takes to remove it (its queue time; all the time argocd-pull is stopped). So an
// Application deleted and created again under the same name with another destination would find
// the first one's tree of uids and aim it at the hub or another cluster. The policy refuses that
// create while the name is recorded here with another destination; argocd-pull records a name
// before it writes the name's first uid tree (Held) and drops it after the tree is gone (Release).
package viewholders

import (
	"fmt"
	"hash/fnv"
)

// Shards is how many objects hold the records; the install's Role names each (ObjectName).
const Shards = 8

// MaxShardBytes bounds the records of one object, well under etcd's 1.5 MiB: about 10,000
// records each, 80,000 in all. A name over it gets no uid tree (the display tree).
const MaxShardBytes = 900 << 10

// ObjectName is the name of shard i's ResourceViewHolders.
func ObjectName(i int) string { return fmt.Sprintf("shard-%d", i) }

// Key is the record's key for the Application namespace/name: "<namespace>_<name>" (neither has
// an underscore), as the policy computes it from the object created.
func Key(namespace, name string) string { return namespace + "_" + name }

// Value is what the record pins: the destination's name and server, as the policy compares them
// with the created Application's spec.destination (its namespace does not move the views).
func Value(destinationName, destinationServer string) string {
	return destinationName + " " + destinationServer
}

// Shard is the shard that holds key.
func Shard(key string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum32() % Shards)
}

// size is what one record adds to an object, with some room for its encoding.
func size(key, value string) int { return len(key) + len(value) + 8 }
