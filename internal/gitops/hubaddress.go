package gitops

import (
	"net"
	"net/url"
	"strings"
)

// HubNames are the hub's own addresses, as far as the hub can tell.
type HubNames struct {
	// Hosts are the hosts of the hub apiserver's URLs and the IPs of its kubernetes Service and of
	// that Service's endpoints. An entry with a port ("127.0.0.1:6443") matches that port only.
	Hosts []string
	// LoopbackIsHub: a loopback address names the hub (from the hub Argo CD's pods, it is the pod
	// itself). False only where the hub apiserver itself is reached on the loopback, a lab on one
	// machine, whose clusters' apiservers are on the loopback too.
	LoopbackIsHub bool
}

// NewHubNames are the hub's names from the URL its apiserver is reached at and the addresses of
// its kubernetes Service and endpoints.
func NewHubNames(apiserverURL string, addresses ...string) HubNames {
	n := HubNames{Hosts: addresses, LoopbackIsHub: true}
	if u, err := url.Parse(apiserverURL); err == nil && u.Hostname() != "" {
		if ip := net.ParseIP(u.Hostname()); (ip != nil && ip.IsLoopback()) || strings.EqualFold(u.Hostname(), "localhost") {
			n.LoopbackIsHub = false
			n.Hosts = append(n.Hosts, net.JoinHostPort(u.Hostname(), port(u)))
		} else {
			n.Hosts = append(n.Hosts, u.Hostname())
		}
	}
	return n
}

// HubAddress says why a URL a cluster wrote into its ManagedCluster's client configs names the
// hub, or "" when it names nothing the hub knows as its own. The cluster secret never carries the
// URL, whatever it names (see Server); doctor names the clusters whose client config names the
// hub. A name in someone else's DNS that resolves to the hub is not seen here.
func HubAddress(raw string, hub HubNames) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" {
		return ""
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	ip := net.ParseIP(host)
	switch {
	case host == "kubernetes" || host == "kubernetes.default" || strings.HasPrefix(host, "kubernetes.default."):
		return "the hub's own kubernetes Service (" + host + "), which Argo CD answers with its in-cluster credentials"
	case hub.LoopbackIsHub && (host == "localhost" || strings.HasSuffix(host, ".localhost") || (ip != nil && ip.IsLoopback())):
		return "a loopback address (" + host + "), on the hub the pod itself"
	case ip != nil && (ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast()):
		return "a link-local address (" + host + ")"
	case ip != nil && ip.IsUnspecified():
		return "the unspecified address (" + host + ")"
	}
	for _, entry := range hub.Hosts {
		h, p := entry, ""
		if hh, pp, err := net.SplitHostPort(entry); err == nil {
			h, p = hh, pp
		}
		h = strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
		if h == "" || (p != "" && p != port(u)) {
			continue
		}
		if h == host || (ip != nil && ip.Equal(net.ParseIP(h))) {
			return "the hub apiserver's address (" + u.Host + ")"
		}
	}
	return ""
}

// port is a URL's port, or its scheme's default.
func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "http" {
		return "80"
	}
	return "443"
}
