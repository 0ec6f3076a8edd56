package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/assets"
	"github.com/argocd-pull/argocd-pull/internal/resourcetree"
)

// argoCDRelease is one built Argo CD release: its version and its one binary.
type argoCDRelease struct{ version, bin string }

// argoCDReleases are the releases the hub and the managed clusters run: the options', else
// ARGOCD_VERSION and MANAGED_ARGOCD_VERSION, else the pinned one; the managed clusters follow the
// hub unless told otherwise.
func argoCDReleases(root string, o Options) (hub, managed argoCDRelease, err error) {
	if hub.version = o.ArgoCDVersion; hub.version == "" {
		if hub.version, err = assets.ArgoCDVersion(root); err != nil {
			return hub, managed, err
		}
	}
	if managed.version = o.ManagedArgoCDVersion; managed.version == "" {
		if managed.version, err = assets.ManagedArgoCDVersion(hub.version); err != nil {
			return hub, managed, err
		}
	}
	for _, r := range []*argoCDRelease{&hub, &managed} {
		dir, err := assets.ArgoCDBinDir(root, r.version)
		if err != nil {
			return hub, managed, err
		}
		r.bin = filepath.Join(dir, "argocd")
	}
	return hub, managed, nil
}

// argoEnv makes Argo CD components run outside a pod: https://kubernetes.default.svc resolves to
// the kubeconfig's server only with both set.
func argoEnv(kubeconfig string) []string {
	return []string{"ARGOCD_FAKE_IN_CLUSTER=true", "KUBECONFIG=" + kubeconfig, "ARGOCD_GPG_ENABLED=false"}
}

// InstallArgoConfig applies the base ConfigMaps and Secret of an Argo CD release (with the server
// key every component needs) into the Argo CD namespace.
func InstallArgoConfig(ctx context.Context, c client.Client, root, version, namespace string) error {
	dir, err := assets.ArgoCDModuleDir(root, version)
	if err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(dir, "manifests", "base", "config", "argocd-*.yaml"))
	if err != nil {
		return err
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &obj.Object); err != nil {
			return fmt.Errorf("reading %s: %w", f, err)
		}
		obj.SetNamespace(namespace)
		if obj.GetKind() == "Secret" {
			obj.Object["stringData"] = map[string]any{"server.secretkey": "argocd-pull-sandbox"}
		}
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	return nil
}

// startRedisAndRepoServer starts the redis and the repo-server of one Argo CD install (prefix
// "cluster1", "hub"), on their own loopback ports, and returns their addresses.
func startRedisAndRepoServer(dir string, argo argoCDRelease, prefix, kubeconfig string, ports *portBook, password string, redisUsers []string, repoArgs ...string) (redis, repo string, err error) {
	redisPort, err := ports.port(prefix + "-redis")
	if err != nil {
		return "", "", err
	}
	redisArgs := []string{"--port", strconv.Itoa(redisPort), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"}
	if password != "" {
		redisArgs = append(redisArgs, "--requirepass", password)
	}
	redisArgs = append(redisArgs, redisUsers...)
	if _, err := start(dir, prefix+"-redis", "redis-server", redisArgs); err != nil {
		return "", "", fmt.Errorf("%w (install Debian's redis-server: make sandbox-deps)", err)
	}
	repoPort, err := ports.port(prefix + "-argocd-repo-server")
	if err != nil {
		return "", "", err
	}
	metrics, err := ports.port(prefix + "-argocd-repo-server-metrics")
	if err != nil {
		return "", "", err
	}
	tmp := filepath.Join(dir, prefix, "repo-server")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", "", err
	}
	redis, repo = "127.0.0.1:"+strconv.Itoa(redisPort), "127.0.0.1:"+strconv.Itoa(repoPort)
	args := append([]string{"argocd-repo-server",
		"--address=127.0.0.1", "--port=" + strconv.Itoa(repoPort), "--metrics-address=127.0.0.1", "--metrics-port=" + strconv.Itoa(metrics),
		"--redis=" + redis, "--logformat=text",
	}, plaintextRepoServer(argo.version)...)
	// PATH: the scripts Argo CD's image has in /usr/local/bin are beside the binary (git-verify-wrapper.sh:
	// the repo-server of 3.5+ runs it on each revision).
	// ARGOCD_ASK_PASS_SOCK: each repo-server serves git its credentials on its own socket. Argo CD's
	// default, /tmp/reposerver-ask-pass.sock whatever TMPDIR says, is one path for the lab's three
	// repo-servers: each removes it and listens there, so two starting together fail ("bind: address
	// already in use") and the last one started answers for the others.
	env := append(argoEnv(kubeconfig), "REDIS_PASSWORD="+password, "TMPDIR="+tmp, "ARGOCD_ASK_PASS_SOCK="+AskPassSocket(dir, prefix),
		"PATH="+filepath.Dir(argo.bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	_, err = start(dir, prefix+"-argocd-repo-server", argo.bin, append(args, repoArgs...), env...)
	return redis, repo, err
}

// AskPassSocket is where the repo-server of one Argo CD install of the lab in dir (prefix "hub",
// "cluster1") serves git its credentials: in that install's own directory, or, where that path is
// longer than a Unix socket's address may be (108 bytes on Linux, 104 on macOS), in the system's
// temporary directory under a name made of the whole path's hash.
func AskPassSocket(dir, prefix string) string {
	path := filepath.Join(dir, prefix, "repo-server", "askpass.sock")
	if len(path) < 104 {
		return path
	}
	sum := sha256.Sum256([]byte(path))
	return filepath.Join(os.TempDir(), "argocd-pull-askpass-"+hex.EncodeToString(sum[:8])+".sock")
}

// plaintextRepoServer are the repo-server flags that serve plain gRPC on the loopback. From 3.5 on
// the repo-server also verifies client certificates against --client-ca-path, whose default is a
// file in the pod, and refuses that flag beside --disable-tls; 3.4 and older have no such flag.
func plaintextRepoServer(version string) []string {
	if argocd.AtLeast(version, 3, 5) {
		return []string{"--disable-tls", "--client-ca-path="}
	}
	return []string{"--disable-tls"}
}

// startManagedArgoCD starts redis, the repo-server and the application controller of one
// managed cluster.
func startManagedArgoCD(dir string, argo argoCDRelease, c *Cluster, ports *portBook) error {
	redis, repo, err := startRedisAndRepoServer(dir, argo, c.Name, c.Kubeconfig, ports, "", nil,
		// A lab shows a new commit within seconds, not after Argo CD's 3-minute revision cache.
		"--revision-cache-expiration=5s")
	if err != nil {
		return err
	}
	metrics, err := ports.port(c.Name + "-argocd-application-controller-metrics")
	if err != nil {
		return err
	}
	_, err = start(dir, c.Name+"-argocd-application-controller", argo.bin, []string{"argocd-application-controller",
		"--kubeconfig=" + c.Kubeconfig, "--namespace=" + ArgoNamespace, "--application-namespaces=" + TenantNamespace,
		"--repo-server=" + repo, "--repo-server-plaintext", "--redis=" + redis,
		"--metrics-port=" + strconv.Itoa(metrics), "--app-resync=10", "--app-resync-jitter=0", "--logformat=text",
	}, append(argoEnv(c.Kubeconfig),
		// A repository the cluster can no longer fetch (a credential gone) shows as a
		// ComparisonError after 30 s of failures, not after Argo CD's 3 minutes: set by the
		// environment (a duration, whatever its name says), which a release without it ignores.
		"ARGOCD_REPO_ERROR_GRACE_PERIOD_SECONDS=30s")...)
	return err
}

// ApplicationSetControllerArgs are the arguments and environment of `argocd
// argocd-applicationset-controller` on a hub of the given kubeconfig, for the Argo CD namespace,
// listening on the given addresses: with progressive syncs on, so that RollingSync ApplicationSets
// roll out step by step (see docs/status.md), and no repo-server (no Git generator).
func ApplicationSetControllerArgs(kubeconfig, namespace, metrics, probes, webhook string) (args, env []string) {
	return []string{"argocd-applicationset-controller",
		"--kubeconfig=" + kubeconfig, "--namespace=" + namespace,
		"--metrics-addr=" + metrics, "--probe-addr=" + probes, "--webhook-addr=" + webhook,
		"--argocd-repo-server=127.0.0.1:1", "--repo-server-plaintext", "--logformat=text",
		"--enable-progressive-syncs",
	}, argoEnv(kubeconfig)
}

// startApplicationSetController starts the hub's ApplicationSet controller.
func startApplicationSetController(dir, bin string, hub *Cluster, ports *portBook) error {
	metrics, err := ports.port("hub-argocd-applicationset-controller-metrics")
	if err != nil {
		return err
	}
	probes, err := ports.port("hub-argocd-applicationset-controller-probes")
	if err != nil {
		return err
	}
	// Its webhook listens on :7000 by default: two labs on one machine would share it.
	webhook, err := ports.addr("hub-argocd-applicationset-controller-webhook")
	if err != nil {
		return err
	}
	args, env := ApplicationSetControllerArgs(hub.Kubeconfig, ArgoNamespace, "127.0.0.1:"+strconv.Itoa(metrics), "127.0.0.1:"+strconv.Itoa(probes), webhook)
	_, err = start(dir, "hub-argocd-applicationset-controller", bin, args, env...)
	return err
}

// CreateDefaultProject creates Argo CD's default AppProject in namespace, which argocd-server
// would create.
func CreateDefaultProject(ctx context.Context, c client.Client, namespace string) error {
	p := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
		"metadata": map[string]any{"name": "default", "namespace": namespace},
		"spec": map[string]any{
			"sourceRepos":              []any{"*"},
			"destinations":             []any{map[string]any{"server": "*", "namespace": "*"}},
			"clusterResourceWhitelist": []any{map[string]any{"group": "*", "kind": "*"}},
		},
	}}
	if err := c.Create(ctx, p); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the default AppProject: %w", err)
	}
	return nil
}

// ArgoCDServer is how to reach the hub's Argo CD API server.
type ArgoCDServer struct {
	// Addr is host:port; the server runs without TLS (argocd login --plaintext).
	Addr string
	// Password is the admin password argocd-server wrote into argocd-initial-admin-secret.
	Password string
	// NoWebUI says why it serves no web UI ("" when it does): its binary was built without it.
	NoWebUI string
}

// noWebUI says why the release's argocd binary holds no web UI, "" when it does: what its build
// (hack/tools/argocd/build.sh) wrote when the UI did not build or was not asked for, with how to
// build it.
func (r argoCDRelease) noWebUI() string {
	why, err := os.ReadFile(filepath.Join(filepath.Dir(r.bin), "ui-build-error.txt"))
	if err != nil {
		return ""
	}
	return fmt.Sprintf("Argo CD %s's web UI %s; to build it: rm -rf %s && make argocd-assets ARGOCD_VERSION=%s",
		r.version, strings.TrimSpace(string(why)), filepath.Dir(r.bin), r.version)
}

// startHubArgoCDServer starts the hub's Argo CD API server, with a redis and a repo-server of its
// own, as an Argo CD install on the hub runs them: the argocd CLI talks to it. No application
// controller runs on the hub: the pull model's Applications are reconciled on the managed
// clusters. It returns the server's address.
func startHubArgoCDServer(ctx context.Context, dir string, argo argoCDRelease, hub *Cluster, ports *portBook) (string, error) {
	if err := writeHubRedisSecret(ctx, hub); err != nil {
		return "", err
	}
	if err := writeHubArgoCDAccount(ctx, hub); err != nil {
		return "", err
	}
	redis, repo, err := startRedisAndRepoServer(dir, argo, "hub", hub.Kubeconfig, ports, HubRedisPassword, hubRedisTreeUser())
	if err != nil {
		return "", err
	}
	port, err := ports.port("hub-argocd-server")
	if err != nil {
		return "", err
	}
	metrics, err := ports.port("hub-argocd-server-metrics")
	if err != nil {
		return "", err
	}
	_, err = start(dir, "hub-argocd-server", argo.bin, []string{"argocd-server",
		"--kubeconfig=" + hub.Kubeconfig, "--namespace=" + ArgoNamespace, "--application-namespaces=" + TenantNamespace,
		"--insecure", "--address=127.0.0.1", "--port=" + strconv.Itoa(port),
		"--metrics-address=127.0.0.1", "--metrics-port=" + strconv.Itoa(metrics),
		"--redis=" + redis, "--repo-server=" + repo, "--repo-server-plaintext",
		"--dex-server=http://127.0.0.1:1", "--logformat=text",
	}, append(argoEnv(hub.Kubeconfig), "REDIS_PASSWORD="+HubRedisPassword)...)
	return "127.0.0.1:" + strconv.Itoa(port), err
}

// waitArgoCDServer waits until the hub's API server at addr answers and has written the admin
// password.
func (l *Lab) waitArgoCDServer(ctx context.Context, addr string, timeout time.Duration) (ArgoCDServer, error) {
	s := ArgoCDServer{Addr: addr}
	hub, err := l.Hub.Client()
	if err != nil {
		return s, err
	}
	deadline := time.Now().Add(timeout)
	for {
		secret := &corev1.Secret{}
		err := hub.Get(ctx, client.ObjectKey{Namespace: ArgoNamespace, Name: "argocd-initial-admin-secret"}, secret)
		if err == nil && len(secret.Data["password"]) > 0 && healthy(ctx, "http://"+s.Addr+"/healthz") {
			s.Password = string(secret.Data["password"])
			return s, nil
		}
		if time.Now().After(deadline) {
			return s, fmt.Errorf("the hub's Argo CD API server did not answer at %s within %s; read %s", s.Addr, timeout, filepath.Join(l.Dir, "logs", "hub-argocd-server.log"))
		}
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func healthy(ctx context.Context, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// HubRedisPassword is the password of the hub Argo CD's redis, in its argocd-redis Secret as an
// Argo CD install writes it (argocd admin redis-initial-password): argocd-pull reads it there to
// write the resource trees (--argocd-redis).
const HubRedisPassword = "argocd-pull-sandbox-redis"

// The hub redis's ACL user of argocd-pull's own, as docs/install.md sets one up: it may only write
// the resource trees (resourcetree.ACL). The controller connects as it (--argocd-redis-username),
// its password in Secret HubRedisTreeSecret; the hub's Argo CD keeps the default user.
const (
	HubRedisTreeUser     = "argocd-pull"
	HubRedisTreePassword = "argocd-pull-sandbox-trees"
	HubRedisTreeSecret   = "argocd-pull-redis"
)

// hubRedisTreeUser is redis-server's --user directive for HubRedisTreeUser.
func hubRedisTreeUser() []string {
	return append([]string{"--user", HubRedisTreeUser, "on", ">" + HubRedisTreePassword}, resourcetree.ACL("")...)
}

// writeHubRedisSecret writes the hub's argocd-redis Secret.
func writeHubRedisSecret(ctx context.Context, hub *Cluster) error {
	c, err := hub.Client()
	if err != nil {
		return err
	}
	for name, password := range map[string]string{"argocd-redis": HubRedisPassword, HubRedisTreeSecret: HubRedisTreePassword} {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ArgoNamespace, Name: name},
			StringData: map[string]string{"auth": password}}
		if err := c.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the hub's %s Secret: %w", name, err)
		}
	}
	return nil
}
