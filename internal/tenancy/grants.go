package tenancy

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Grants are what the operator grants each hub namespace beyond its own: a tenant namespace N
// maps to the namespaces it may also use. They come from repeatable flags of the form
// N=NS1,NS2 (see ParseGrants); a namespace always has itself.
type Grants map[string][]string

// ParseGrants reads flag values of the form "N=NS1,NS2". A namespace may appear in several
// values; its grants add up. Every name must be a valid namespace name.
func ParseGrants(values []string) (Grants, error) {
	g := Grants{}
	for _, v := range values {
		tenant, list, ok := strings.Cut(v, "=")
		tenant = strings.TrimSpace(tenant)
		if !ok || tenant == "" || strings.TrimSpace(list) == "" {
			return nil, fmt.Errorf("grant %q: want NAMESPACE=NS1[,NS2...]", v)
		}
		if errs := validation.IsDNS1123Label(tenant); len(errs) > 0 {
			return nil, fmt.Errorf("grant %q: %q is not a namespace name: %s", v, tenant, strings.Join(errs, "; "))
		}
		for _, ns := range strings.Split(list, ",") {
			ns = strings.TrimSpace(ns)
			if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
				return nil, fmt.Errorf("grant %q: %q is not a namespace name: %s", v, ns, strings.Join(errs, "; "))
			}
			if !slices.Contains(g[tenant], ns) {
				g[tenant] = append(g[tenant], ns)
			}
		}
	}
	return g, nil
}

// Allows reports whether hub namespace tenant may use namespace ns: its own, or one granted.
func (g Grants) Allows(tenant, ns string) bool {
	return tenant == ns || slices.Contains(g[tenant], ns)
}

// Of lists what tenant may use, itself first, for messages.
func (g Grants) Of(tenant string) []string {
	out := []string{tenant}
	granted := slices.Clone(g[tenant])
	sort.Strings(granted)
	for _, ns := range granted {
		if ns != tenant {
			out = append(out, ns)
		}
	}
	return out
}
