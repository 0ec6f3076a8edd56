package sandbox

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/argocd-pull/argocd-pull/internal/localproc"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Cluster is one kube-apiserver and its etcd, run as processes of the sandbox.
type Cluster struct {
	Name       string
	URL        string
	Kubeconfig string
	Config     *rest.Config
}

// startCluster starts etcd and kube-apiserver for name under dir/name and waits until the
// apiserver is ready.
func startCluster(ctx context.Context, dir, binDir, name string) (*Cluster, error) {
	cdir := filepath.Join(dir, name)
	p, err := newPKI(filepath.Join(cdir, "pki"))
	if err != nil {
		return nil, err
	}
	etcdPort, err := localproc.FreePort()
	if err != nil {
		return nil, err
	}
	peerPort, err := localproc.FreePort()
	if err != nil {
		return nil, err
	}
	apiPort, err := localproc.FreePort()
	if err != nil {
		return nil, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	if _, err := start(dir, name+"-etcd", filepath.Join(binDir, "etcd"), []string{
		"--name=" + name, "--data-dir=" + filepath.Join(cdir, "etcd"),
		"--listen-client-urls=" + etcdURL, "--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=" + name + "=" + peerURL, "--unsafe-no-fsync=true",
	}); err != nil {
		return nil, err
	}
	url := "https://127.0.0.1:" + strconv.Itoa(apiPort)
	if _, err := start(dir, name+"-apiserver", filepath.Join(binDir, "kube-apiserver"), []string{
		"--etcd-servers=" + etcdURL, "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(apiPort), "--cert-dir=" + filepath.Join(cdir, "certs"),
		"--tls-cert-file=" + p.servingCert, "--tls-private-key-file=" + p.servingKey, "--client-ca-file=" + p.caCert,
		"--service-cluster-ip-range=10.0.0.0/24", "--service-account-issuer=" + url,
		"--service-account-key-file=" + p.serviceAccountPub, "--service-account-signing-key-file=" + p.serviceAccountKey,
		"--authorization-mode=RBAC", "--allow-privileged=true",
	}); err != nil {
		return nil, err
	}
	c := &Cluster{Name: name, URL: url, Kubeconfig: filepath.Join(dir, name+".kubeconfig")}
	if err := writeKubeconfig(c.Kubeconfig, name, url, p); err != nil {
		return nil, err
	}
	if c.Config, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig); err != nil {
		return nil, err
	}
	if err := waitReady(ctx, url, p, filepath.Join(dir, "logs", name+"-apiserver.log")); err != nil {
		return c, err
	}
	// Garbage collection (Argo CD deletes with foreground propagation), namespace lifecycle and
	// the workload controllers make the cluster behave like one.
	kcmPort, err := localproc.FreePort()
	if err != nil {
		return c, err
	}
	_, err = start(dir, name+"-kube-controller-manager", filepath.Join(binDir, "kube-controller-manager"), []string{
		"--kubeconfig=" + c.Kubeconfig, "--authentication-kubeconfig=" + c.Kubeconfig, "--authorization-kubeconfig=" + c.Kubeconfig,
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(kcmPort), "--leader-elect=false",
		"--service-account-private-key-file=" + p.serviceAccountKey, "--root-ca-file=" + p.caCert,
		"--use-service-account-credentials=false",
	})
	return c, err
}

func writeKubeconfig(path, name, url string, p *pki) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: url, CertificateAuthorityData: p.caPEM}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: p.adminCertPEM, ClientKeyData: p.adminKeyPEM}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: "admin"}
	cfg.CurrentContext = name
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return os.Chmod(path, 0o600)
}

// waitReady polls /readyz until the apiserver answers ok.
func waitReady(ctx context.Context, url string, p *pki, log string) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.caPEM)
	cert, err := tls.X509KeyPair(p.adminCertPEM, p.adminKeyPEM)
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}}
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/readyz", nil)
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the apiserver at %s was not ready within 90s; read %s", url, log)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
