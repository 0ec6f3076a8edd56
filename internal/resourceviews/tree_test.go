package resourceviews

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/argocd-pull/argocd-pull/internal/resourcetree"
)

// uid gives a valid, distinct uid for each n.
func uid(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012x", n) }

var (
	deployment = Object{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "web", UID: uid(1)}
	replicaSet = Object{Group: "apps", Version: "v1", Kind: "ReplicaSet", Namespace: "guestbook", Name: "web-5d8f", UID: uid(2), Owners: []string{uid(1)}, Health: "Healthy"}
	pod        = Object{Version: "v1", Kind: "Pod", Namespace: "guestbook", Name: "web-5d8f-x1", UID: uid(3), Owners: []string{uid(2)}, Health: "Progressing"}
	listed     = []any{
		map[string]any{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "guestbook", "name": "web", "health": map[string]any{"status": "Healthy"}},
		map[string]any{"version": "v1", "kind": "Service", "namespace": "guestbook", "name": "web", "health": map[string]any{"status": "Healthy"}},
	}
)

func ref(o Object) resourcetree.Ref {
	return resourcetree.Ref{Group: o.Group, Version: o.Version, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, UID: o.UID}
}

func TestTreeWalksOwnersFromTheListedResources(t *testing.T) {
	b := Tree(Facts{Listed: listed, Live: []Object{deployment}, Children: []Object{pod, replicaSet}})
	want := []resourcetree.Node{
		{Ref: resourcetree.Ref{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "web", UID: uid(1)}, Health: resourcetree.Health{Status: "Healthy"}},
		{Ref: resourcetree.Ref{Version: "v1", Kind: "Service", Namespace: "guestbook", Name: "web"}, Health: resourcetree.Health{Status: "Healthy"}},
		{Ref: resourcetree.Ref{Group: "apps", Version: "v1", Kind: "ReplicaSet", Namespace: "guestbook", Name: "web-5d8f", UID: uid(2)}, ParentRefs: []resourcetree.Ref{ref(deployment)}, Health: resourcetree.Health{Status: "Healthy"}},
		{Ref: resourcetree.Ref{Version: "v1", Kind: "Pod", Namespace: "guestbook", Name: "web-5d8f-x1", UID: uid(3)}, ParentRefs: []resourcetree.Ref{ref(replicaSet)}, Health: resourcetree.Health{Status: "Progressing"}},
	}
	if got, _ := json.Marshal(b.Tree.Nodes); string(got) != string(must(json.Marshal(want))) {
		t.Errorf("tree:\n%s\nwant (the Service missing on the cluster keeps no uid):\n%s", got, must(json.Marshal(want)))
	}
	if b.Message() != "" {
		t.Errorf("message %q, want none", b.Message())
	}
}

func TestTreeRefusesWhatBreaksItsRules(t *testing.T) {
	hubApp := uid(99)
	for _, c := range []struct {
		name  string
		child Object
		why   string
	}{
		{"another namespace", with(pod, func(o *Object) { o.Namespace = "kube-system"; o.Owners = []string{uid(1)} }), `outside its owner's namespace "guestbook"`},
		{"cluster-scoped", with(pod, func(o *Object) { o.Namespace = ""; o.Owners = []string{uid(1)} }), `outside its owner's namespace`},
		{"a uid that is no uid", with(pod, func(o *Object) { o.UID = "../../hub"; o.Owners = []string{uid(1)} }), `is not a Kubernetes uid`},
		{"a long uid", with(pod, func(o *Object) { o.UID = strings.Repeat("a", 10_000); o.Owners = []string{uid(1)} }), `is not a Kubernetes uid`},
		{"the uid of a hub object", with(pod, func(o *Object) { o.UID = hubApp; o.Owners = []string{uid(1)} }), `its uid is a hub object's`},
		{"the uid of another node", with(pod, func(o *Object) { o.UID = uid(1); o.Name = "other"; o.Owners = []string{uid(1)} }), `its uid is another node's`},
		{"a name Kubernetes refuses", with(pod, func(o *Object) { o.Name = "../etc"; o.Owners = []string{uid(1)} }), `name`},
		{"a health Argo CD never writes", with(pod, func(o *Object) { o.Health = "<script>"; o.Owners = []string{uid(1)} }), `health`},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := Tree(Facts{Listed: listed, Live: []Object{deployment}, Children: []Object{c.child}, HubUIDs: map[string]bool{hubApp: true}})
			if len(b.Tree.Nodes) != 2 || b.Refused != 1 || !strings.Contains(b.Message(), c.why) {
				t.Errorf("%d nodes, %d refused, message %q; want the 2 listed, 1 refused, saying %q", len(b.Tree.Nodes), b.Refused, b.Message(), c.why)
			}
			if len(b.Message()) > 400 {
				t.Errorf("message of %d bytes: the refused object's fields must be cut", len(b.Message()))
			}
		})
	}
	t.Run("a listed resource with a hub object's uid", func(t *testing.T) {
		b := Tree(Facts{Listed: listed, Live: []Object{with(deployment, func(o *Object) { o.UID = hubApp })}, Children: []Object{with(replicaSet, func(o *Object) { o.Owners = []string{hubApp} })}, HubUIDs: map[string]bool{hubApp: true}})
		if len(b.Tree.Nodes) != 2 || b.Tree.Nodes[0].UID != "" || b.Refused != 1 {
			t.Errorf("nodes %+v, %d refused; want the listed Deployment kept without a uid and no child under it", b.Tree.Nodes, b.Refused)
		}
	})
}

func TestTreeHoldsOnOwnerCyclesAndDepth(t *testing.T) {
	// The cluster says the Deployment is owned by its own Pod, and the Pod by the ReplicaSet.
	cyclic := with(deployment, func(o *Object) { o.Owners = []string{uid(3)} })
	b := Tree(Facts{Listed: listed, Live: []Object{cyclic}, Children: []Object{replicaSet, pod, cyclic}})
	if len(b.Tree.Nodes) != 4 {
		t.Errorf("%d nodes, want 4: the Deployment once, as listed", len(b.Tree.Nodes))
	}
	// A chain of owners deeper than MaxDepth stops there.
	chain := []Object{}
	for i := range MaxDepth + 3 {
		chain = append(chain, Object{Version: "v1", Kind: "Pod", Namespace: "guestbook", Name: fmt.Sprintf("p%d", i), UID: uid(10 + i), Owners: []string{uid(9 + i)}, Health: "Healthy"})
	}
	chain[0].Owners = []string{uid(1)}
	b = Tree(Facts{Listed: listed, Live: []Object{deployment}, Children: chain})
	if len(b.Tree.Nodes) != 2+MaxDepth {
		t.Errorf("%d nodes, want the 2 listed and %d generations", len(b.Tree.Nodes), MaxDepth)
	}
}

func TestTreeIsBoundedAndTheSameWhateverTheOrder(t *testing.T) {
	var pods []Object
	for i := range 3 * resourcetree.MaxNodes {
		pods = append(pods, Object{Version: "v1", Kind: "Pod", Namespace: "guestbook", Name: fmt.Sprintf("web-5d8f-%05d", i), UID: uid(100 + i), Owners: []string{uid(2)}, Health: "Healthy"})
	}
	b := Tree(Facts{Listed: listed, Live: []Object{deployment}, Children: append([]Object{replicaSet}, pods...)})
	data := must(json.Marshal(b.Tree))
	if len(b.Tree.Nodes) > resourcetree.MaxNodes || len(data) > resourcetree.MaxEncodedSize || b.Cut == 0 {
		t.Errorf("%d nodes, %d bytes, %d cut; want at most %d nodes and %d bytes, the rest counted", len(b.Tree.Nodes), len(data), b.Cut, resourcetree.MaxNodes, resourcetree.MaxEncodedSize)
	}
	if !strings.Contains(b.Message(), "over its cap") {
		t.Errorf("message %q, want the cap named", b.Message())
	}
	shuffled := append([]Object{replicaSet}, pods...)
	rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	again := Tree(Facts{Listed: listed, Live: []Object{deployment}, Children: shuffled})
	if again.Tree.Sum() != b.Tree.Sum() {
		t.Error("the same objects in another order give another tree: it would be written again on every read")
	}
}

func with(o Object, change func(*Object)) Object {
	change(&o)
	return o
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
