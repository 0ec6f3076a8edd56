package clusteraccess

import (
	"strings"
	"testing"
)

func TestDecideAsker(t *testing.T) {
	platform := []string{"openshift-gitops"}
	for _, c := range []struct {
		name   string
		asker  Asker
		reason string
		says   string
	}{
		{"the platform's, a bound cluster", Asker{Namespace: "openshift-gitops", Cluster: "cluster1", Allowed: platform, Bound: true}, "", ""},
		{"a tenant's", Asker{Namespace: "team-a", Cluster: "cluster1", Allowed: platform, Bound: true}, ReasonChannelNotAllowedHere, "only for GitOpsClusters in the Argo CD namespaces the install names (openshift-gitops)"},
		{"the hub, bound", Asker{Namespace: "openshift-gitops", Cluster: "local-cluster", Allowed: platform, Hub: true, Bound: true}, ReasonHubNotReached, "is the hub itself"},
		{"a cluster not bound", Asker{Namespace: "openshift-gitops", Cluster: "cluster9", Allowed: platform}, ReasonClusterNotBound, "no ManagedClusterSet bound to namespace openshift-gitops holds cluster9"},
		{"no namespace allowed", Asker{Namespace: "openshift-gitops", Cluster: "cluster1", Bound: true}, ReasonChannelNotAllowedHere, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := DecideAsker(c.asker)
			if r.Reason != c.reason || !strings.Contains(r.Message, c.says) {
				t.Errorf("DecideAsker = %+v, want reason %q saying %q", r, c.reason, c.says)
			}
		})
	}
}
