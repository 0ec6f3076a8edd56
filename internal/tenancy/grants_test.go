package tenancy

import (
	"reflect"
	"testing"
)

func TestParseGrants(t *testing.T) {
	g, err := ParseGrants([]string{"team-a=team-a-prod, team-a-dev", "team-b=shared", "team-a=shared"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"team-a", "shared", "team-a-dev", "team-a-prod"}; !reflect.DeepEqual(g.Of("team-a"), want) {
		t.Errorf("Of(team-a) = %v, want %v", g.Of("team-a"), want)
	}
	for _, c := range []struct {
		tenant, ns string
		want       bool
	}{
		{"team-a", "team-a", true},
		{"team-a", "team-a-prod", true},
		{"team-a", "shared", true},
		{"team-b", "team-a-prod", false},
		{"team-c", "team-c", true},
		{"team-c", "shared", false},
	} {
		if got := g.Allows(c.tenant, c.ns); got != c.want {
			t.Errorf("Allows(%s, %s) = %v, want %v", c.tenant, c.ns, got, c.want)
		}
	}
	for _, bad := range []string{"team-a", "=x", "team-a=", "Team=x", "team-a=a,,b", "team-a=kube system"} {
		if _, err := ParseGrants([]string{bad}); err == nil {
			t.Errorf("ParseGrants(%q) accepted it", bad)
		}
	}
}
