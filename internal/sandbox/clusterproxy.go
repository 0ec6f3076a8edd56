package sandbox

import (
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// OCM's cluster-proxy add-on gives the hub a way to each managed cluster's apiserver that the
// cluster opens: each cluster's konnectivity agent dials out to the konnectivity server on the hub,
// and cluster-proxy's user server, at https://<user server>/<cluster>, sends a request down that
// cluster's tunnel. The lab runs the real programs, with the flags and certificates cluster-proxy's
// add-on manager gives them (pkg/proxyserver/controllers/manifests.go, the addon-agent chart):
//
//   - on the hub: the konnectivity server (hub-proxy-server) and the user server
//     (hub-cluster-proxy-user-server);
//   - on each cluster: the konnectivity agent (<cluster>-proxy-agent), with the identifier
//     host=<the cluster's service proxy host>, and the pod network it would have (pod-loopback).
//
// One CA, cluster-proxy's signer, signs every certificate of the channel; a client trusts it for
// the user server.

// ClusterProxyNamespace is where cluster-proxy's add-on manager runs the proxy server and the user
// server on a hub (its default), and so names their certificates.
const ClusterProxyNamespace = "open-cluster-management-cluster-proxy"

// serviceProxyPort is the port of cluster-proxy's service proxy in the agent pod (constant.ServiceProxyPort).
const serviceProxyPort = 7443

// ServiceProxyHost is the host the user server asks a cluster's tunnel for: cluster-proxy's
// util.GenerateServiceProxyHost.
func ServiceProxyHost(cluster string) string {
	return fmt.Sprintf("cluster-%x", sha256.Sum256([]byte(cluster)))[:64-len("cluster-")] + ".open-cluster-management.proxy"
}

// clusterProxyPKI is the certificate material of the channel, under dir: the signer's CA and, named
// as cluster-proxy's Secrets are, the proxy server's two serving certificates (for the user server,
// for the agents), the user server's client certificate to it, the user server's serving
// certificate, the service proxy's serving certificate, and one client certificate per agent.
type clusterProxyPKI struct{ dir string }

func (p clusterProxyPKI) path(name string) string { return filepath.Join(p.dir, name) }

// CA is the file of the signer's CA certificate, which a client of the user server trusts.
func (p clusterProxyPKI) CA() string { return p.path("ca.crt") }

// newClusterProxyPKI makes the signer and the hub's certificates, or keeps those a first start made.
func newClusterProxyPKI(dir string) (clusterProxyPKI, error) {
	p := clusterProxyPKI{dir: dir}
	if _, err := os.Stat(p.path("service-proxy.key")); err == nil {
		return p, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return p, err
	}
	ca, caKey, caPEM, err := newCA("cluster-proxy-signer")
	if err != nil {
		return p, err
	}
	if err := writePEM(p.CA(), caPEM); err != nil {
		return p, err
	}
	if err := writeKey(p.path("ca.key"), caKey); err != nil {
		return p, err
	}
	loopback := []net.IP{net.ParseIP("127.0.0.1")}
	entry := []string{"localhost", "proxy-entrypoint." + ClusterProxyNamespace, "proxy-entrypoint." + ClusterProxyNamespace + ".svc"}
	user := "cluster-proxy-addon-user"
	certs := []struct {
		name    string
		subject string
		usage   x509.ExtKeyUsage
		ips     []net.IP
		dns     []string
	}{
		{"proxy-server", "proxy-server", x509.ExtKeyUsageServerAuth, loopback, entry},
		{"agent-server", "agent-server", x509.ExtKeyUsageServerAuth, loopback, entry},
		{"proxy-client", "proxy-client", x509.ExtKeyUsageClientAuth, nil, nil},
		{"user-server", user + "." + ClusterProxyNamespace + ".svc", x509.ExtKeyUsageServerAuth, loopback, []string{
			"localhost", user, user + "." + ClusterProxyNamespace, user + "." + ClusterProxyNamespace + ".svc", user + "." + ClusterProxyNamespace + ".svc.cluster.local",
		}},
		// What cluster-proxy's controllers issue for the service proxy
		// (cluster-proxy-service-proxy-server-cert); the lab's managed apiservers present it for
		// these names (--tls-sni-cert-key), as the service proxy in front of them would.
		{"service-proxy", "cluster-proxy-service-proxy", x509.ExtKeyUsageServerAuth, loopback, []string{"localhost", "*.open-cluster-management.proxy"}},
	}
	for i, c := range certs {
		crt, key, err := issueCert(ca, caKey, int64(i+2), pkix.Name{CommonName: c.subject}, c.usage, c.ips, c.dns)
		if err != nil {
			return p, fmt.Errorf("issuing cluster-proxy's %s certificate: %w", c.name, err)
		}
		// The service proxy's key is written last: its presence says the rest is there.
		if err := writePEM(p.path(c.name+".crt"), crt); err != nil {
			return p, err
		}
		if err := writePEM(p.path(c.name+".key"), key); err != nil {
			return p, err
		}
	}
	return p, nil
}

// agentCert is the client certificate of a cluster's konnectivity agent, as the add-on's
// registration would issue it (open-cluster-management:cluster-proxy:proxy-agent), made once.
func (p clusterProxyPKI) agentCert(cluster string, serial int64) (crt, key string, err error) {
	crt, key = p.path("agent-"+cluster+".crt"), p.path("agent-"+cluster+".key")
	if _, err := os.Stat(key); err == nil {
		return crt, key, nil
	}
	ca, caKey, err := p.signer()
	if err != nil {
		return "", "", err
	}
	crtPEM, keyPEM, err := issueCert(ca, caKey, serial, pkix.Name{
		CommonName: "open-cluster-management:cluster-proxy:proxy-agent", Organization: []string{"open-cluster-management:cluster-proxy"},
	}, x509.ExtKeyUsageClientAuth, nil, nil)
	if err != nil {
		return "", "", fmt.Errorf("issuing %s's konnectivity agent certificate: %w", cluster, err)
	}
	if err := writePEM(crt, crtPEM); err != nil {
		return "", "", err
	}
	return crt, key, writePEM(key, keyPEM)
}

// signer is the CA a first start made, to issue what a later one needs.
func (p clusterProxyPKI) signer() (*x509.Certificate, *ecdsa.PrivateKey, error) {
	kp, err := tls.LoadX509KeyPair(p.CA(), p.path("ca.key"))
	if err != nil {
		return nil, nil, fmt.Errorf("reading cluster-proxy's signer: %w", err)
	}
	key, ok := kp.PrivateKey.(*ecdsa.PrivateKey)
	if !ok || kp.Leaf == nil {
		return nil, nil, fmt.Errorf("cluster-proxy's signer in %s: not the lab's EC key", p.dir)
	}
	return kp.Leaf, key, nil
}

// startClusterProxyHub starts the konnectivity server and cluster-proxy's user server on the hub,
// and returns the user server's base URL. The user server also listens on :8000 for its probes,
// which cluster-proxy does not let one move.
func startClusterProxyHub(dir, bin string, p clusterProxyPKI, hub *Cluster, ports *portBook) (string, error) {
	port := map[string]string{}
	for _, name := range []string{"hub-proxy-server", "hub-proxy-server-agents", "hub-proxy-server-health", "hub-proxy-server-admin", "hub-cluster-proxy-user-server"} {
		n, err := ports.port(name)
		if err != nil {
			return "", err
		}
		port[name] = strconv.Itoa(n)
	}
	front, agents, user := port["hub-proxy-server"], port["hub-proxy-server-agents"], port["hub-cluster-proxy-user-server"]
	if _, err := start(dir, "hub-proxy-server", filepath.Join(bin, "proxy-server"), []string{
		"--mode=grpc", "--server-count=1", "--proxy-strategies=destHost", "--server-id=proxy-server-0",
		"--server-bind-address=127.0.0.1", "--server-port=" + front,
		"--server-ca-cert=" + p.CA(), "--server-cert=" + p.path("proxy-server.crt"), "--server-key=" + p.path("proxy-server.key"),
		"--agent-bind-address=127.0.0.1", "--agent-port=" + agents,
		"--cluster-ca-cert=" + p.CA(), "--cluster-cert=" + p.path("agent-server.crt"), "--cluster-key=" + p.path("agent-server.key"),
		"--health-bind-address=127.0.0.1", "--health-port=" + port["hub-proxy-server-health"],
		"--admin-bind-address=127.0.0.1", "--admin-port=" + port["hub-proxy-server-admin"],
	}); err != nil {
		return "", err
	}
	userServer, err := start(dir, "hub-cluster-proxy-user-server", filepath.Join(bin, "cluster-proxy"), []string{
		"user-server", "--kubeconfig=" + hub.Kubeconfig,
		"--host=127.0.0.1", "--port=" + front,
		"--proxy-ca-cert=" + p.CA(), "--proxy-cert=" + p.path("proxy-client.crt"), "--proxy-key=" + p.path("proxy-client.key"),
		"--server-port=" + user, "--server-cert=" + p.path("user-server.crt"), "--server-key=" + p.path("user-server.key"),
		"--service-proxy-ca-cert=" + p.CA(), "--agent-install-namespace=open-cluster-management-agent-addon",
	})
	if err != nil {
		return "", err
	}
	// It serves its port, then binds :8000 for its probes and exits when that is taken (another
	// lab's user server): it is up once it still runs a moment after its port answers.
	if err := waitListening("127.0.0.1:"+user, 30*time.Second); err == nil {
		time.Sleep(time.Second)
	}
	if !userServer.Running() {
		return "", fmt.Errorf("cluster-proxy's user server stopped (see %s): it binds :8000 for its probes, so one lab with OCM's channel runs on a machine at a time (a lab without it: Options.NoChannel)", userServer.Log)
	}
	return "https://127.0.0.1:" + user, nil
}

// waitListening waits until something accepts connections on addr.
func waitListening(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startClusterProxyAgent starts a cluster's konnectivity agent and its pod network: loopback
// address 127.0.0.<index+2> stands for the agent pod's own loopback, where the service proxy
// listens. The agent runs in a mount namespace of its own whose /etc/hosts maps the service proxy
// host to that address, as the pod's hostAlias does.
func startClusterProxyAgent(dir, bin string, p clusterProxyPKI, c *Cluster, index int, ports *portBook) error {
	if index < 0 || index > 250 {
		return fmt.Errorf("the lab's channel gives loopback addresses to 251 clusters, not %d", index+1)
	}
	loopback := "127.0.0." + strconv.Itoa(index+2)
	api := strings.TrimPrefix(c.URL, "https://")
	if _, err := start(dir, c.Name+"-pod-loopback", filepath.Join(bin, "pod-loopback"), []string{
		"--listen=" + net.JoinHostPort(loopback, strconv.Itoa(serviceProxyPort)), "--to=" + api,
	}); err != nil {
		return err
	}
	hosts := filepath.Join(dir, c.Name, "proxy-agent-hosts")
	if err := os.WriteFile(hosts, []byte("127.0.0.1 localhost\n"+loopback+" "+ServiceProxyHost(c.Name)+"\n"), 0o644); err != nil {
		return err
	}
	crt, key, err := p.agentCert(c.Name, int64(100+index))
	if err != nil {
		return err
	}
	agents, err := ports.port("hub-proxy-server-agents")
	if err != nil {
		return err
	}
	health, err := ports.port(c.Name + "-proxy-agent-health")
	if err != nil {
		return err
	}
	admin, err := ports.port(c.Name + "-proxy-agent-admin")
	if err != nil {
		return err
	}
	agent := []string{
		filepath.Join(bin, "proxy-agent"),
		"--proxy-server-host=127.0.0.1", "--proxy-server-port=" + strconv.Itoa(agents),
		"--ca-cert=" + p.CA(), "--agent-cert=" + crt, "--agent-key=" + key,
		"--agent-id=" + c.Name, "--agent-identifiers=host=" + ServiceProxyHost(c.Name),
		"--health-server-host=127.0.0.1", "--health-server-port=" + strconv.Itoa(health),
		"--admin-bind-address=127.0.0.1", "--admin-server-port=" + strconv.Itoa(admin),
	}
	// unshare execs the shell, which binds the hosts file and execs the agent: one process, whose
	// pid the lab records.
	_, err = start(dir, c.Name+"-proxy-agent", "unshare", append([]string{
		"--mount", "--propagation", "private", "--", "/bin/sh", "-c", `mount --bind "$0" /etc/hosts && exec "$@"`, hosts,
	}, agent...))
	return err
}

// ClusterProxy is cluster-proxy's user server on the hub: a cluster's apiserver is at
// URL + "/" + cluster, and the user server's certificate is signed by the CA in file CA.
type ClusterProxy struct {
	URL, CA string
}

// ClusterURL is the address of cluster's apiserver through the channel.
func (c ClusterProxy) ClusterURL(cluster string) string { return c.URL + "/" + cluster }

// startClusterProxy starts the channel: the hub's side, then each cluster's agent.
func (l *Lab) startClusterProxy(ctx context.Context, bin string, p clusterProxyPKI, ports *portBook) error {
	done := l.progress.step("hub: cluster-proxy's konnectivity server and user server; managed clusters: konnectivity agents")
	url, err := startClusterProxyHub(l.Dir, bin, p, l.Hub, ports)
	if err != nil {
		return err
	}
	l.ClusterProxy = ClusterProxy{URL: url, CA: p.CA()}
	for i, c := range l.Managed {
		if err := startClusterProxyAgent(l.Dir, bin, p, c, i, ports); err != nil {
			return err
		}
	}
	// Each agent says ready once its tunnel to the server is up.
	for _, c := range l.Managed {
		health, err := ports.port(c.Name + "-proxy-agent-health")
		if err != nil {
			return err
		}
		if err := waitHTTPOK(ctx, "http://127.0.0.1:"+strconv.Itoa(health)+"/readyz", time.Minute); err != nil {
			return fmt.Errorf("%s: the konnectivity agent has no tunnel to the hub (see logs/%s-proxy-agent.log): %w", c.Name, c.Name, err)
		}
	}
	if err := l.enableClusterProxyAddon(ctx, bin); err != nil {
		return err
	}
	done()
	return nil
}

// enableClusterProxyAddon makes cluster-proxy an add-on of each cluster, as `clusteradm addon
// enable` does, and starts each cluster's addon-agent (<cluster>-cluster-proxy-agent), whose lease
// in the add-on's install namespace makes the cluster's registration agent call cluster-proxy
// Available there, as argocd-pull checks before it gives the cluster's secret the channel. The
// namespace is made as the add-on's manager delivers it.
func (l *Lab) enableClusterProxyAddon(ctx context.Context, bin string) error {
	hub, err := l.Hub.Client()
	if err != nil {
		return err
	}
	if err := enableAddon(ctx, hub, ClusterProxyAddon, l.Managed); err != nil {
		return err
	}
	for _, c := range l.Managed {
		cl, err := c.Client()
		if err != nil {
			return err
		}
		if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: AddonInstallNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("%s: the add-ons' namespace: %w", c.Name, err)
		}
		started := time.Now()
		if _, err := start(l.Dir, c.Name+"-cluster-proxy-agent", filepath.Join(bin, "addon-agent"), []string{"--kubeconfig=" + c.Kubeconfig},
			"POD_NAMESPACE="+AddonInstallNamespace); err != nil {
			return err
		}
		if err := waitAddonLease(ctx, cl, c.Name, ClusterProxyAddon, started.Add(-time.Second), time.Minute); err != nil {
			return err
		}
	}
	return nil
}

// waitHTTPOK waits until url answers 200.
func waitHTTPOK(ctx context.Context, url string, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		return healthy(ctx, url), nil
	})
}

// clusterProxySNI is the flag that makes a managed apiserver present the service proxy's
// certificate to the user server (see pod-loopback).
func clusterProxySNI(p clusterProxyPKI) string {
	return "--tls-sni-cert-key=" + p.path("service-proxy.crt") + "," + p.path("service-proxy.key") + ":*.open-cluster-management.proxy"
}
