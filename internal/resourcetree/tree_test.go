package resourcetree

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
)

func resource(kind, ns, name string, health string) map[string]any {
	r := map[string]any{"version": "v1", "kind": kind, "namespace": ns, "name": name, "status": "Synced"}
	if health != "" {
		r["health"] = map[string]any{"status": health, "message": "free text from the cluster"}
	}
	return r
}

// Every node is display-only: no uid (Argo CD's API server then refuses every resource-level
// verb on it), a health, no parent refs, and nothing but the checked fields.
func TestTheTreeIsDisplayOnly(t *testing.T) {
	g := NewWithT(t)
	deploy := resource("Deployment", "guestbook", "guestbook-ui", "Progressing")
	deploy["group"] = "apps"
	deploy["uid"], deploy["parentRefs"] = "3c1f-real-uid", []any{map[string]any{"kind": "Secret", "name": "argocd-secret"}}
	deploy["images"], deploy["networkingInfo"] = []any{"evil:latest"}, map[string]any{"externalURLs": []any{"javascript:alert(1)"}}
	built := Build([]any{deploy, resource("ConfigMap", "guestbook", "settings", ""), resource("Service", "guestbook", "gone", "Missing")})

	g.Expect(built.Dropped).To(BeZero())
	g.Expect(built.Tree.Nodes).To(Equal([]Node{
		{Ref: Ref{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui"}, Health: Health{Status: "Progressing"}},
		{Ref: Ref{Version: "v1", Kind: "ConfigMap", Namespace: "guestbook", Name: "settings"}, Health: Health{Status: "Healthy"}},
		{Ref: Ref{Version: "v1", Kind: "Service", Namespace: "guestbook", Name: "gone"}, Health: Health{Status: "Missing"}},
	}))
	data, err := json.Marshal(built.Tree)
	g.Expect(err).NotTo(HaveOccurred())
	for _, field := range []string{"uid", "parentRefs", "images", "networkingInfo", "info", "message", "free text", "evil", "javascript"} {
		g.Expect(string(data)).NotTo(ContainSubstring(field))
	}
	g.Expect(built.Message()).To(BeEmpty())
}

// Whatever wrote status.resources (a tenant may write an Application's status: there is no
// status subresource), the tree holds checked entries only, each once, within its caps.
func TestTheTreeDropsInvalidEntriesAndCutsToItsCaps(t *testing.T) {
	g := NewWithT(t)
	list := []any{
		"not an object",
		resource("ConfigMap", "guestbook", "../argocd-secret", "Healthy"),
		resource("ConfigMap", "guestbook", strings.Repeat("n", 254), "Healthy"),
		resource("ConfigMap", "guestbook", "ui", "Fabulous"),
		resource("ConfigMap", "guestbook", "ui", "Healthy"),
		resource("ConfigMap", "guestbook", "ui", "Degraded"), // listed twice
	}
	built := Build(list)
	g.Expect(built.Tree.Nodes).To(HaveLen(1))
	g.Expect(built.Dropped).To(Equal(5))
	g.Expect(built.Message()).To(Equal("the resource tree leaves out 5 invalid or repeated resources"))

	list = nil
	for i := range 5000 {
		list = append(list, resource("ConfigMap", "guestbook", fmt.Sprintf("cm-%05d", i), "Healthy"))
	}
	built = Build(list)
	g.Expect(len(built.Tree.Nodes)).To(BeNumerically("<=", MaxNodes))
	g.Expect(built.Cut).To(Equal(5000 - len(built.Tree.Nodes)))
	data, _ := json.Marshal(built.Tree)
	g.Expect(len(data)).To(BeNumerically("<=", MaxEncodedSize))
	list = nil
	for i := range 5000 {
		list = append(list, map[string]any{"kind": "A", "name": fmt.Sprint(i)})
	}
	g.Expect(Build(list).Tree.Nodes).To(HaveLen(MaxNodes), "the count cap")

	list = nil
	for i := range 600 {
		list = append(list, resource("ConfigMap", strings.Repeat("s", 63), fmt.Sprintf("%s-%05d", strings.Repeat("n", 240), i), "Healthy"))
	}
	built = Build(list)
	data, _ = json.Marshal(built.Tree)
	g.Expect(len(data)).To(BeNumerically("<=", MaxEncodedSize), "the size cap")
	g.Expect(built.Cut).To(BeNumerically(">", 0))
	g.Expect(built.Message()).To(ContainSubstring("over its cap (1000 nodes, 65536 bytes)"))
	g.Expect(Build(nil).Tree.Nodes).To(BeEmpty())
}

// The keys and the encoding are Argo CD's (util/cache/appstate/cache.go and util/cache/redis.go):
// the lab's tests read them back through the real argocd-server.
func TestKeysAndEncodingAreArgoCDs(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Instance("argocd", "guestbook", "argocd")).To(Equal("guestbook"))
	g.Expect(Instance("team-a", "guestbook", "argocd")).To(Equal("team-a_guestbook"))
	gz := Encoding{Gzip: true}
	g.Expect(gz.TreeKey("guestbook")).To(Equal("app|resources-tree|guestbook|1.8.3.gz"))
	g.Expect(gz.Channel("guestbook")).To(Equal("app|managed-resources|guestbook|1.8.3"))
	g.Expect(Encoding{KeyPrefix: "p:"}.TreeKey("guestbook")).To(Equal("p:app|resources-tree|guestbook|1.8.3"))
	g.Expect(Encoding{KeyPrefix: "p:"}.Channel("guestbook")).To(Equal("app|managed-resources|guestbook|1.8.3"), "a channel takes no prefix")
	g.Expect(gz.ManagedKey("team-a_guestbook")).To(Equal("app|managed-resources|team-a_guestbook|1.8.3.gz"))
	g.Expect(Encoding{KeyPrefix: "p:"}.ManagedKey("guestbook")).To(Equal("p:app|managed-resources|guestbook|1.8.3"))

	tree := Build([]any{resource("ConfigMap", "guestbook", "ui", "")}).Tree
	plain, err := Encoding{}.Encode(tree)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(plain)).To(Equal(`{"nodes":[{"version":"v1","kind":"ConfigMap","namespace":"guestbook","name":"ui","health":{"status":"Healthy"}}]}` + "\n"))
	zipped, err := gz.Encode(tree)
	g.Expect(err).NotTo(HaveOccurred())
	r, err := gzip.NewReader(bytes.NewReader(zipped))
	g.Expect(err).NotTo(HaveOccurred())
	unzipped, _ := io.ReadAll(r)
	g.Expect(unzipped).To(Equal(plain))
	g.Expect(tree.Sum()).NotTo(Equal(Tree{}.Sum()))

	// A node of a cluster's own tree: its ResourceRef inline, as Argo CD's ResourceNode has it.
	owned := Tree{Nodes: []Node{{Ref: Ref{Group: "apps", Version: "v1", Kind: "ReplicaSet", Namespace: "guestbook", Name: "ui-1", UID: "u2"},
		ParentRefs: []Ref{{Group: "apps", Kind: "Deployment", Namespace: "guestbook", Name: "ui", UID: "u1"}}, Health: Health{Status: "Healthy"}}}}
	plain, err = Encoding{}.Encode(owned)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(plain)).To(Equal(`{"nodes":[{"group":"apps","version":"v1","kind":"ReplicaSet","namespace":"guestbook","name":"ui-1","uid":"u2",` +
		`"parentRefs":[{"group":"apps","kind":"Deployment","namespace":"guestbook","name":"ui","uid":"u1"}],"health":{"status":"Healthy"}}]}` + "\n"))
	g.Expect(owned.Nodes[0].Key()).To(Equal(Ref{Group: "apps", Kind: "ReplicaSet", Namespace: "guestbook", Name: "ui-1"}))
}

// A gzip'd tree reuses a compressor: a new one for each tree (some 800 KB) was more than half of
// all the controller allocated while it delivered a new fleet of 10,000 Applications. Trees
// encoded one after another, and at once, each decode to their own JSON.
func TestEncodeReusesItsCompressors(t *testing.T) {
	g := NewWithT(t)
	gz := Encoding{Gzip: true}
	trees := []Tree{
		Build([]any{resource("ConfigMap", "guestbook", "ui", "")}).Tree,
		Build([]any{resource("Service", "guestbook", "ui", "Healthy"), resource("ConfigMap", "other", "cm", "")}).Tree,
	}
	// Each goroutine says what it saw; the test goroutine asserts (FailNow only works there).
	roundTrip := func(tree Tree) (plain, unzipped []byte, err error) {
		if plain, err = (Encoding{}).Encode(tree); err != nil {
			return nil, nil, err
		}
		zipped, err := gz.Encode(tree)
		if err != nil {
			return nil, nil, err
		}
		r, err := gzip.NewReader(bytes.NewReader(zipped))
		if err != nil {
			return nil, nil, err
		}
		unzipped, err = io.ReadAll(r)
		return plain, unzipped, err
	}
	type seen struct {
		plain, unzipped []byte
		err             error
	}
	results := make([]seen, 20)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			plain, unzipped, err := roundTrip(trees[i%2])
			results[i] = seen{plain, unzipped, err}
		})
	}
	wg.Wait()
	for i, r := range results {
		g.Expect(r.err).NotTo(HaveOccurred(), "tree %d", i)
		g.Expect(r.unzipped).To(Equal(r.plain), "tree %d", i)
	}

	if raceDetector {
		return // the pool drops writers on purpose under the race detector
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const n = 200
	for range n {
		if _, err := gz.Encode(trees[1]); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	perTree := (after.TotalAlloc - before.TotalAlloc) / n
	g.Expect(perTree).To(BeNumerically("<", 64<<10), "bytes allocated per gzip'd tree")
}

func BenchmarkEncodeGzip(b *testing.B) {
	tree := Build([]any{resource("Service", "guestbook", "ui", "Healthy"), resource("ConfigMap", "other", "cm", "")}).Tree
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (Encoding{Gzip: true}).Encode(tree); err != nil {
			b.Fatal(err)
		}
	}
}
