package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"
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
	// AuditLog is the apiserver's audit log (JSON lines) of the requests that run something in a
	// Pod (exec, attach, port-forward), at the Metadata level: who asked, for which Pod, and the
	// answer's code (auditPolicy).
	AuditLog string
}

// auditPolicy makes each apiserver record the requests that run something in a Pod, and nothing
// else: the record of where a terminal opened from the hub's Argo CD went, and as whom.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  resources:
  - group: ""
    resources: [pods/exec, pods/attach, pods/portforward]
- level: None
`

// startCluster starts etcd and kube-apiserver for name under dir/name and waits until the
// apiserver is ready. Its ports and certificates are those of the lab's first start; apiserverArgs
// are more flags for its apiserver.
func startCluster(ctx context.Context, dir, binDir, name string, ports *portBook, apiserverArgs ...string) (*Cluster, error) {
	cdir := filepath.Join(dir, name)
	p, err := newPKI(filepath.Join(cdir, "pki"))
	if err != nil {
		return nil, err
	}
	etcdPort, err := ports.port(name + "-etcd")
	if err != nil {
		return nil, err
	}
	peerPort, err := ports.port(name + "-etcd-peer")
	if err != nil {
		return nil, err
	}
	apiPort, err := ports.port(name + "-apiserver")
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
	auditPolicyFile, auditLog := filepath.Join(cdir, "audit-policy.yaml"), filepath.Join(cdir, "audit.log")
	if err := os.WriteFile(auditPolicyFile, []byte(auditPolicy), 0o644); err != nil {
		return nil, err
	}
	if _, err := start(dir, name+"-apiserver", filepath.Join(binDir, "kube-apiserver"), append([]string{
		"--etcd-servers=" + etcdURL, "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(apiPort), "--cert-dir=" + filepath.Join(cdir, "certs"),
		"--tls-cert-file=" + p.servingCert, "--tls-private-key-file=" + p.servingKey, "--client-ca-file=" + p.caCert,
		"--service-cluster-ip-range=10.0.0.0/24", "--service-account-issuer=" + url,
		"--service-account-key-file=" + p.serviceAccountPub, "--service-account-signing-key-file=" + p.serviceAccountKey,
		"--authorization-mode=RBAC", "--allow-privileged=true",
		// Logs and exec go to a node's kubelet (node.go) at its address, as the cluster's admin.
		"--kubelet-client-certificate=" + p.adminCert, "--kubelet-client-key=" + p.adminKey, "--kubelet-preferred-address-types=InternalIP",
		"--audit-policy-file=" + auditPolicyFile, "--audit-log-path=" + auditLog, "--audit-log-maxsize=10",
	}, apiserverArgs...)); err != nil {
		return nil, err
	}
	c := &Cluster{Name: name, URL: url, Kubeconfig: filepath.Join(dir, name+".kubeconfig"), AuditLog: auditLog}
	if err := writeKubeconfig(c.Kubeconfig, name, url, p); err != nil {
		return nil, err
	}
	if c.Config, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig); err != nil {
		return nil, err
	}
	if err := waitKubeconfigReady(ctx, c.Kubeconfig, filepath.Join(dir, "logs", name+"-apiserver.log")); err != nil {
		return c, err
	}
	// Garbage collection (Argo CD deletes with foreground propagation), namespace lifecycle and
	// the workload controllers make the cluster behave like one.
	kcmPort, err := ports.port(name + "-kube-controller-manager")
	if err != nil {
		return c, err
	}
	_, err = start(dir, name+"-kube-controller-manager", filepath.Join(binDir, "kube-controller-manager"), []string{
		"--kubeconfig=" + c.Kubeconfig, "--authentication-kubeconfig=" + c.Kubeconfig, "--authorization-kubeconfig=" + c.Kubeconfig,
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(kcmPort), "--leader-elect=false",
		"--service-account-private-key-file=" + p.serviceAccountKey, "--root-ca-file=" + p.caCert,
		"--use-service-account-credentials=false",
		// Signs the client certificates OCM's registration agents ask for with a
		// CertificateSigningRequest, with the CA the apiserver trusts for clients.
		"--cluster-signing-cert-file=" + p.caCert, "--cluster-signing-key-file=" + p.caKey,
	})
	return c, err
}

func writeKubeconfig(path, name, url string, p *pki) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: url, CertificateAuthorityData: p.caPEM}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: p.adminCertPEM, ClientKeyData: p.adminKeyPEM}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: "admin"}
	if name == "hub" {
		// As a user of the hub sets it: argocd-pull's commands and kubectl default to the
		// namespace of the lab's Applications.
		cfg.Contexts[name].Namespace = ArgoNamespace
	}
	cfg.CurrentContext = name
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return os.Chmod(path, 0o600)
}

// waitKubeconfigReady polls the apiserver's /readyz until it answers ok.
func waitKubeconfigReady(ctx context.Context, kubeconfig, log string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.Timeout = 2 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	for {
		if body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err == nil && string(body) == "ok" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the apiserver of %s was not ready within 90s; read %s", kubeconfig, log)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
