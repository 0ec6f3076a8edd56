package doctor

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/argocd-pull/argocd-pull/internal/resourcetree"
)

func TestDecideResourceTree(t *testing.T) {
	gz := resourcetree.Encoding{Gzip: true}
	ours := func(i string) string { return gz.TreeKey(i) }
	for name, c := range map[string]struct {
		facts   treeFacts
		status  Status
		message string
	}{
		"no redis given, no event": {treeFacts{pull: []string{"a"}}, StatusPass, "the controller reports no tree it could not write"},
		"no redis given, the controller says it could not write": {
			treeFacts{pull: []string{"a"}, notWritten: []string{"openshift-gitops/a: The resource tree is not in the hub Argo CD's cache (...): WRONGPASS"}},
			StatusWarn, "argocd-pull could not write the tree of 1 Application: openshift-gitops/a: The resource tree is not in the hub Argo CD's cache (...): WRONGPASS"},
		"unreachable": {treeFacts{address: "127.0.0.1:1", connErr: errors.New("the hub's redis 127.0.0.1:1: dial tcp: connection refused")}, StatusFail, "connection refused"},
		"every tree, the hub writes the same version": {
			treeFacts{address: "r:6379", enc: gz, pull: []string{"a", "team_b"}, keys: []string{ours("a"), ours("team_b"), ours("push"), "app|resources-tree|push|1|1.8.3.gz", "app|managed-resources|push|1.8.3.gz"}},
			StatusPass, "2 pull-model trees in r:6379 at cache version 1.8.3; the hub's Argo CD writes the same version (2 trees of its own)"},
		"nothing to compare with": {
			treeFacts{address: "r:6379", enc: gz, pull: []string{"a"}, keys: []string{ours("a")}},
			StatusPass, "no tree of its own to compare the cache version with"},
		"the hub's Argo CD reads another version": {
			treeFacts{address: "r:6379", enc: gz, pull: []string{"a"}, keys: []string{ours("a"), "app|resources-tree|push|1.9.0.gz"}},
			StatusFail, "the hub's Argo CD writes its trees at cache version 1.9.0; argocd-pull writes 1.8.3"},
		"a pull-model Application without its tree": {
			treeFacts{address: "r:6379", enc: gz, pull: []string{"a", "b"}, keys: []string{ours("a")}},
			StatusWarn, "1 of 2 pull-model Applications have no tree in r:6379 at cache version 1.8.3: b"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			r := decideResourceTree(c.facts)
			g.Expect(r.Status).To(Equal(c.status))
			g.Expect(r.Message).To(ContainSubstring(c.message))
			if r.Status == StatusWarn || r.Status == StatusFail {
				g.Expect(r.Fix).NotTo(BeEmpty())
			}
		})
	}
}

func TestParseTreeKey(t *testing.T) {
	g := NewWithT(t)
	for key, want := range map[string][2]string{
		"app|resources-tree|a|1.8.3.gz":       {"a", "1.8.3"},
		"app|resources-tree|ns_a|1.8.3":       {"ns_a", "1.8.3"},
		"app|resources-tree|a|2|1.8.3.gz":     {"a", "1.8.3"},
		"app|managed-resources|a|1.8.3.gz":    {"", ""},
		"app|resources-tree|too|many|parts|x": {"", ""},
	} {
		instance, version, _ := resourcetree.Encoding{}.ParseTreeKey(key)
		g.Expect([2]string{instance, version}).To(Equal(want), key)
	}
}
