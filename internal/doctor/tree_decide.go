package doctor

import (
	"fmt"
	"sort"

	"github.com/argocd-pull/argocd-pull/internal/resourcetree"
)

const (
	idResourceTree    = "argocd-redis"
	titleResourceTree = "The hub Argo CD's cache holds the pull-model Applications' resource trees"
	treeFix           = "check the controller's --argocd-redis (the API server's --redis), the argocd-redis Secret's auth and the NetworkPolicy admitting argocd-pull to redis (docs/argocd-clients.md#the-resource-tree)"
)

// treeFacts is what the resource-tree check saw.
type treeFacts struct {
	// address is the redis doctor was told to check, "" when none.
	address string
	connErr error
	enc     resourcetree.Encoding
	// keys are the resource-tree keys in the redis; pull the instance names of the pull-model
	// Applications.
	keys, pull []string
	// notWritten are "namespace/name: message" of the Applications whose last resource-tree event
	// says argocd-pull could not write their tree.
	notWritten []string
}

// decideResourceTree: the controller's own word first (its events), then, with a redis to look
// at, the connection, the cache version the hub's Argo CD writes against argocd-pull's, and the
// pull-model Applications without a tree.
func decideResourceTree(f treeFacts) Result {
	r := Result{ID: idResourceTree, Title: titleResourceTree}
	if len(f.notWritten) > 0 {
		sort.Strings(f.notWritten)
		r.Status, r.Fix = StatusWarn, treeFix
		r.Message = fmt.Sprintf("argocd-pull could not write the tree of %d %s: %s", len(f.notWritten), plural(len(f.notWritten), "Application", "Applications"), f.notWritten[0])
	}
	if f.address == "" {
		if r.Status == "" {
			r.Status = StatusPass
			r.Message = "the controller reports no tree it could not write; with --argocd-redis (the hub Argo CD's redis, through kubectl port-forward) doctor also checks the connection, the cache version and each pull-model Application's tree"
		}
		return r
	}
	if f.connErr != nil {
		return Result{ID: idResourceTree, Title: titleResourceTree, Status: StatusFail, Message: f.connErr.Error(), Fix: treeFix}
	}
	pull := map[string]bool{}
	for _, p := range f.pull {
		pull[p] = true
	}
	ours := map[string]bool{}
	for _, k := range f.keys {
		if instance, version, ok := f.enc.ParseTreeKey(k); ok && pull[instance] && version == resourcetree.CacheVersion {
			ours[instance] = true
		}
	}
	theirs := f.enc.HubVersions(f.keys, func(instance string) bool { return pull[instance] })
	if other := resourcetree.OtherVersion(theirs); other != "" {
		return Result{ID: idResourceTree, Title: titleResourceTree, Status: StatusFail,
			Message: fmt.Sprintf("the hub's Argo CD writes its trees at cache version %s; argocd-pull writes %s, which that Argo CD does not read: its UI and argocd app resources show no pull-model tree",
				other, resourcetree.CacheVersion),
			Fix: "run an argocd-pull release that supports the hub's Argo CD version (docs/compatibility.md)"}
	}
	var missing []string
	for _, p := range f.pull {
		if !ours[p] {
			missing = append(missing, p)
		}
	}
	if r.Status == "" && len(missing) > 0 {
		sort.Strings(missing)
		r.Status, r.Fix = StatusWarn, treeFix
		r.Message = fmt.Sprintf("%d of %d pull-model %s have no tree in %s at cache version %s: %s", len(missing), len(f.pull), plural(len(f.pull), "Application", "Applications"),
			f.address, resourcetree.CacheVersion, listNames(missing))
	}
	if r.Status != "" {
		return r
	}
	compared := "no tree of its own to compare the cache version with"
	if n := theirs[resourcetree.CacheVersion]; n > 0 {
		compared = fmt.Sprintf("the hub's Argo CD writes the same version (%d %s of its own)", n, plural(n, "tree", "trees"))
	}
	r.Status = StatusPass
	r.Message = fmt.Sprintf("%d pull-model %s in %s at cache version %s; %s", len(ours), plural(len(ours), "tree", "trees"), f.address, resourcetree.CacheVersion, compared)
	return r
}
