// Package resourceviews gives a pull-model Application's resource tree the cluster's own objects:
// the uids of the resources it lists and their children (ReplicaSets, Pods, ...), as read from the
// managed cluster's apiserver through OCM's channel (docs/design-resource-views.md). With a uid on
// each node, the hub Argo CD's API server serves the live manifest, events and logs from the
// cluster, as the channel's read-only account.
//
// Everything read is untrusted (the cluster is): tree.go decides, purely, which objects become
// nodes, bounded and sanitised as the display tree is (internal/resourcetree); health.go is Argo
// CD's own health rules for the children, which no managed Argo CD reports. managed.go makes the
// managed resources (the live states, and their comparison with Git, diff.go, for the UI's
// resource panel and DIFF and `argocd app diff`); target.go names the hub Argo CD API server's
// request for the Git side; route.go and read.go say where the cluster is and read it.
package resourceviews

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/argocd-pull/argocd-pull/internal/appstatus"
	"github.com/argocd-pull/argocd-pull/internal/resourcetree"
)

// MaxDepth is how many generations of children below a listed resource the tree holds: a
// CronJob's Job's Pod is two, a Deployment's ReplicaSet's Pod two.
const MaxDepth = 3

// Object is what the tree takes of one object read from the cluster.
type Object struct {
	Group, Version, Kind string
	Namespace, Name      string
	UID                  string
	// Owners are the uids of its ownerReferences.
	Owners []string
	// Health is its health by Argo CD's rules (PodHealth, ReplicaSetHealth); "" for a listed
	// resource, whose health the Application reports.
	Health string
}

// Facts are what the tree of one Application is made of.
type Facts struct {
	// Listed is the hub Application's status.resources, as the display tree takes it.
	Listed []any
	// Live are the listed resources as the cluster holds them (one that is Missing is not here).
	Live []Object
	// Objects are the same, whole, as read: the live states of the managed resources.
	Objects map[resourcetree.Ref]*unstructured.Unstructured
	// Unread are the listed resources that were not asked for or not given (Secrets, a kind
	// outside the read-only account's rights, over the limits): neither live nor missing.
	Unread map[resourcetree.Ref]bool
	// Children are the candidates for children: the objects of the kinds that own or are owned
	// (ReplicaSets, Pods, Jobs, ...) in the listed resources' namespaces.
	Children []Object
	// HubUIDs are uids of hub objects (the Application, its work): a node that carries one is
	// dropped.
	HubUIDs map[string]bool
	// NotPermitted counts the listed resources the Application's AppProject does not permit on its
	// destination (never read, in Unread); NotPermittedWhy names the first and why.
	NotPermitted    int
	NotPermittedWhy string
}

// Built is a tree with what building it left out.
type Built struct {
	Tree resourcetree.Tree
	// Listed is what the display tree left out of the listed resources.
	Listed resourcetree.Built
	// Refused counts the objects from the cluster that break a rule (an invalid name or uid, a uid
	// seen twice or of a hub object, a child outside its owner's namespace); Cut the children over
	// the caps, and the listed resources left without a uid by them. Why gives the first
	// refusal's reason.
	Refused, Cut int
	Why          string
	// NotPermitted and NotPermittedWhy are Facts'.
	NotPermitted    int
	NotPermittedWhy string
}

// Tree is the tree of f: the display tree of the listed resources, each with its uid from the
// cluster, then their children, generation by generation, each after its owner and with its owner
// as parent. A child is admitted only in its owner's namespace (ownerReferences are namespaced),
// once, and within resourcetree's caps; a listed resource whose uid breaks a rule keeps its node,
// without a uid.
func Tree(f Facts) Built {
	out := Built{Listed: resourcetree.Build(f.Listed), NotPermitted: f.NotPermitted, NotPermittedWhy: f.NotPermittedWhy}
	uids := map[string]bool{}
	refuse := func(o Object, why string) {
		if out.Refused++; out.Refused == 1 {
			out.Why = fmt.Sprintf("%s %s/%s: %s", o.Kind, o.Namespace, o.Name, why)
		}
	}
	// admit says why o's uid may not be a node's, "" when it may.
	admit := func(o Object) string {
		switch {
		case !validUID(o.UID):
			return fmt.Sprintf("uid %q is not a Kubernetes uid", appstatus.Truncate(o.UID, 40))
		case f.HubUIDs[o.UID]:
			return "its uid is a hub object's"
		case uids[o.UID]:
			return "its uid is another node's"
		}
		return ""
	}
	live := make(map[resourcetree.Ref]Object, len(f.Live))
	for _, o := range f.Live {
		live[o.ref().Key()] = o
	}
	size := len(`{"nodes":[]}`)
	byUID := map[string]resourcetree.Ref{}
	for _, n := range out.Listed.Tree.Nodes {
		if o, ok := live[n.Key()]; ok {
			withUID := n
			withUID.UID = o.UID
			switch why := admit(o); {
			case why != "":
				refuse(o, why)
			case size+encodedSize(withUID)+1 > resourcetree.MaxEncodedSize:
				out.Cut++
			default:
				n = withUID
				uids[o.UID] = true
				byUID[o.UID] = n.Ref
			}
		}
		size += encodedSize(n) + 1
		out.Tree.Nodes = append(out.Tree.Nodes, n)
	}
	// The candidates by the uid of each owner, in a fixed order: the tree's sum changes only when
	// the cluster's objects do.
	owned := map[string][]Object{}
	for _, o := range f.Children {
		for _, owner := range o.Owners {
			owned[owner] = append(owned[owner], o)
		}
	}
	generation := slices.Sorted(func(yield func(string) bool) {
		for uid := range byUID {
			if !yield(uid) {
				return
			}
		}
	})
	for depth := 0; depth < MaxDepth && len(generation) > 0; depth++ {
		var next []string
		for _, parentUID := range generation {
			parent := byUID[parentUID]
			children := owned[parentUID]
			slices.SortFunc(children, func(a, b Object) int {
				return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name), cmp.Compare(a.UID, b.UID))
			})
			for _, c := range children {
				if uids[c.UID] && byUID[c.UID] == c.ref() {
					continue // a child of two owners in the tree: under the first
				}
				why := admit(c)
				switch {
				case why != "":
				case c.Namespace != parent.Namespace || c.Namespace == "":
					why = fmt.Sprintf("outside its owner's namespace %q", parent.Namespace)
				default:
					why = invalid(c)
				}
				if why != "" {
					refuse(c, why)
					continue
				}
				n := resourcetree.Node{Ref: c.ref(), ParentRefs: []resourcetree.Ref{parent}, Health: resourcetree.Health{Status: cmp.Or(c.Health, "Unknown")}}
				s := encodedSize(n) + 1
				if len(out.Tree.Nodes) >= resourcetree.MaxNodes || size+s > resourcetree.MaxEncodedSize {
					out.Cut++
					continue
				}
				size += s
				out.Tree.Nodes = append(out.Tree.Nodes, n)
				uids[c.UID] = true
				byUID[c.UID] = c.ref()
				next = append(next, c.UID)
			}
		}
		generation = next
	}
	return out
}

// Message says what Tree left out, "" when nothing: what the display tree left out of the listed
// resources, then what of the cluster's objects.
func (b Built) Message() string {
	return strings.Join(slices.DeleteFunc([]string{b.Listed.Message(), b.ClusterMessage()}, func(s string) bool { return s == "" }), "; ")
}

// ClusterMessage says what of the objects read from the cluster the tree left out (not of the
// listed resources, which the status controller sanitised), "" when nothing.
func (b Built) ClusterMessage() string {
	var parts []string
	if b.NotPermitted > 0 {
		parts = append(parts, fmt.Sprintf("the cluster's tree reads neither live state nor uid of %d resources the Application's AppProject does not permit there (first: %s)", b.NotPermitted, b.NotPermittedWhy))
	}
	if b.Refused > 0 {
		parts = append(parts, fmt.Sprintf("the cluster's tree leaves out %d objects that break its rules (first: %s)", b.Refused, b.Why))
	}
	if b.Cut > 0 {
		parts = append(parts, fmt.Sprintf("the cluster's tree leaves out %d children over its cap (%d nodes, %d bytes)", b.Cut, resourcetree.MaxNodes, resourcetree.MaxEncodedSize))
	}
	return strings.Join(parts, "; ")
}

func (o Object) ref() resourcetree.Ref {
	return resourcetree.Ref{Group: o.Group, Version: o.Version, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, UID: o.UID}
}

// invalid says why o names no object Kubernetes could hold, or carries a health Argo CD never
// writes; "" when it is valid.
func invalid(o Object) string {
	item := map[string]any{"group": o.Group, "version": o.Version, "kind": o.Kind, "namespace": o.Namespace, "name": o.Name}
	if o.Health != "" {
		item["health"] = map[string]any{"status": o.Health}
	}
	return appstatus.InvalidResource(item)
}

// validUID says whether uid is what a Kubernetes apiserver gives: a UUID in its 36-character form.
func validUID(uid string) bool {
	if len(uid) != 36 {
		return false
	}
	for i, c := range uid {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
				return false
			}
		}
	}
	return true
}

func encodedSize(n resourcetree.Node) int {
	data, _ := json.Marshal(n)
	return len(data)
}
