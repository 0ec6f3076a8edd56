package gitops

import "testing"

func TestHubAddress(t *testing.T) {
	hub := NewHubNames("https://api.hub.example:6443", "10.96.0.1", "192.0.2.10", "fd00::1")
	for raw, names := range map[string]bool{
		"https://kubernetes.default.svc":                  true,
		"https://kubernetes.default.svc:443/":             true,
		"https://KUBERNETES.default.svc.cluster.local.":   true,
		"https://kubernetes.default.svc.example.internal": true,
		"https://kubernetes":                              true,
		"https://kubernetes.default":                      true,
		"https://localhost:6443":                          true,
		"https://api.localhost":                           true,
		"https://127.0.0.1:6443":                          true,
		"https://127.8.9.10":                              true,
		"https://[::1]:6443":                              true,
		"https://169.254.169.254":                         true,
		"https://[fe80::1]":                               true,
		"https://0.0.0.0":                                 true,
		"https://api.hub.example:6443":                    true,
		"https://API.HUB.EXAMPLE.":                        true,
		"https://10.96.0.1":                               true,
		"https://192.0.2.10:6443":                         true,
		"https://[fd00:0::1]:443":                         true,
		"https://api.cluster1.example:6443":               false,
		"https://10.0.0.5:6443":                           false,
		"https://kubernetes-dashboard.example":            false,
		"https://cluster1-control-plane:6443":             false,
		"not a url":                                       false,
		"":                                                false,
		"https://kubernetes.defaultx.svc":                 false,
		"https://api.hub.example.attacker.example":        false,
	} {
		if got := HubAddress(raw, hub); (got != "") != names {
			t.Errorf("HubAddress(%q) = %q, want naming the hub: %v", raw, got, names)
		}
	}
}

// A lab on one machine: the hub apiserver and the clusters' are all on the loopback, each on its
// own port; only the hub's port names the hub.
func TestHubAddressInALabOnOneMachine(t *testing.T) {
	hub := NewHubNames("https://127.0.0.1:40001")
	for raw, names := range map[string]bool{
		"https://127.0.0.1:40001":        true,
		"https://127.0.0.1:40002":        false,
		"https://kubernetes.default.svc": true,
		"https://169.254.169.254":        true,
	} {
		if got := HubAddress(raw, hub); (got != "") != names {
			t.Errorf("HubAddress(%q) = %q, want naming the hub: %v", raw, got, names)
		}
	}
}
