package tenancy

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
)

func cluster(name string, labels map[string]string) *clusterv1.ManagedCluster {
	return &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func exclusiveSet(name string) clusterv1beta2.ManagedClusterSet {
	return clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func selectorSet(name string, sel *metav1.LabelSelector) clusterv1beta2.ManagedClusterSet {
	s := exclusiveSet(name)
	s.Spec.ClusterSelector = clusterv1beta2.ManagedClusterSelector{SelectorType: clusterv1beta2.LabelSelector, LabelSelector: sel}
	return s
}

func TestAllows(t *testing.T) {
	inSetA := cluster("cluster1", map[string]string{clusterv1beta2.ClusterSetLabel: "set-a", "env": "prod"})
	tests := map[string]struct {
		bindings Bindings
		cluster  *clusterv1.ManagedCluster
		allowed  bool
		via      string
	}{
		"no bindings":                 {Bindings{}, inSetA, false, ""},
		"bound exclusive set":         {Bindings{Sets: []clusterv1beta2.ManagedClusterSet{exclusiveSet("set-a")}}, inSetA, true, "ManagedClusterSet set-a"},
		"other set":                   {Bindings{Sets: []clusterv1beta2.ManagedClusterSet{exclusiveSet("set-b")}}, inSetA, false, ""},
		"label selector set matches":  {Bindings{Sets: []clusterv1beta2.ManagedClusterSet{selectorSet("prod", &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}})}}, inSetA, true, "ManagedClusterSet prod"},
		"label selector set misses":   {Bindings{Sets: []clusterv1beta2.ManagedClusterSet{selectorSet("dev", &metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}})}}, inSetA, false, ""},
		"global set (empty selector)": {Bindings{Sets: []clusterv1beta2.ManagedClusterSet{selectorSet("global", &metav1.LabelSelector{})}}, cluster("c9", nil), true, "ManagedClusterSet global"},
		"label selector type, nil":    {Bindings{Sets: []clusterv1beta2.ManagedClusterSet{selectorSet("broken", nil)}}, inSetA, false, ""},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			ok, via := tt.bindings.Allows(tt.cluster)
			g.Expect(ok).To(Equal(tt.allowed))
			g.Expect(via).To(Equal(tt.via))
		})
	}
}

// A set is joined by a cluster's own labels when its selector requires any label but the
// clusterset label, the one OCM's webhook guards.
func TestJoinedByOwnLabels(t *testing.T) {
	tests := map[string]struct {
		set    clusterv1beta2.ManagedClusterSet
		joined bool
	}{
		"exclusive set":                {exclusiveSet("set-a"), false},
		"global set (empty selector)":  {selectorSet("global", &metav1.LabelSelector{}), false},
		"label selector type, nil":     {selectorSet("broken", nil), false},
		"a label":                      {selectorSet("prod", &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}), true},
		"an expression":                {selectorSet("prod", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpExists}}}), true},
		"the clusterset label only":    {selectorSet("ab", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: clusterv1beta2.ClusterSetLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}}}), false},
		"the clusterset label and one": {selectorSet("ab", &metav1.LabelSelector{MatchLabels: map[string]string{clusterv1beta2.ClusterSetLabel: "a", "env": "prod"}}), true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(JoinedByOwnLabels(&tt.set)).To(Equal(tt.joined))
		})
	}
}
