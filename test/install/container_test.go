package install

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/argocd-pull/argocd-pull/internal/localproc"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

// The controller image (make image), run as the chart's Deployment runs it.
//
// ARGOCD_PULL_IMAGE names the image; make test builds it with make image and sets it. Without it,
// or without podman, the tests skip, unless REQUIRE_CONTAINER=1 (make test) makes that a failure.
// What this harness adds for these machines, and the image does not need elsewhere: podman runs a
// FROM scratch image with --runtime runc (its default crun refuses this kernel's hybrid cgroups)
// and explicit ulimits (its defaults exceed what the machine allows); --network host lets the
// container reach the test apiserver on the loopback, as a pod reaches the kubernetes Service.
// What it does not do that a kubelet does: no memory limit or CPU quota (the machine's cgroups),
// no probes acting on the container (the test reads them at the chart's paths instead).

// serviceAccountDir is where Kubernetes mounts a pod's service-account token, CA and namespace.
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

func containerImage(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the image")
	}
	missing := ""
	image := os.Getenv("ARGOCD_PULL_IMAGE")
	if image == "" {
		missing = "ARGOCD_PULL_IMAGE is not set (make test builds the image with make image and sets it)"
	} else if _, err := exec.LookPath("podman"); err != nil {
		missing = "podman is not installed (make container-deps installs it)"
	}
	if missing != "" {
		if os.Getenv("REQUIRE_CONTAINER") != "" {
			t.Fatal(missing)
		}
		t.Skip(missing)
	}
	return image
}

// inContainer is a launcher that runs image as dep's pod runs its container: the pod's and the
// container's security context as podman flags, the service account mounted where Kubernetes
// mounts it, the in-cluster environment and no kubeconfig.
func inContainer(image string, dep *appsv1.Deployment, apiserver *url.URL, ca []byte) launcher {
	return func(t *testing.T, _ kube, args []string, token, logPath string) (*localproc.Process, error) {
		sa := serviceAccountFiles(t, token, ca)
		return localproc.Start(logPath, "podman", podmanRun(t, image, dep, apiserver, sa, args))
	}
}

// serviceAccountFiles writes what the kubelet mounts in serviceAccountDir; "" token writes none.
func serviceAccountFiles(t *testing.T, token string, ca []byte) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "serviceaccount")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The container's uid (65532) reads them, as it reads a projected volume's files (mode 0644).
	if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"ca.crt": ca, "namespace": []byte(installNamespace)}
	if token != "" {
		files["token"] = []byte(token)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// podmanRun is `podman run` for dep's controller container with args. Every setting of the pod
// spec that changes how the process runs is translated, or the test fails saying it is not.
func podmanRun(t *testing.T, image string, dep *appsv1.Deployment, apiserver *url.URL, saDir string, args []string) []string {
	t.Helper()
	pod := dep.Spec.Template.Spec
	if len(pod.Containers) != 1 || len(pod.InitContainers) != 0 || len(pod.Volumes) != 0 {
		t.Fatalf("the harness runs one container with no volumes; the Deployment has %d containers, %d init containers, %d volumes",
			len(pod.Containers), len(pod.InitContainers), len(pod.Volumes))
	}
	c := pod.Containers[0]
	if len(c.Command) != 0 {
		t.Fatalf("the Deployment replaces the image's entrypoint (%v); the harness does not", c.Command)
	}
	name := fmt.Sprintf("argocd-pull-test-%d", time.Now().UnixNano())
	run := []string{"run", "--rm", "--name", name, "--pull", "never",
		"--runtime", "runc", "--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096",
		"--network", "host",
		"--env", "KUBERNETES_SERVICE_HOST=" + apiserver.Hostname(), "--env", "KUBERNETES_SERVICE_PORT=" + apiserver.Port()}
	if saDir != "" {
		run = append(run, "--volume", saDir+":"+serviceAccountDir+":ro")
	}
	if pod.AutomountServiceAccountToken != nil && !*pod.AutomountServiceAccountToken {
		t.Fatal("the Deployment turns the service-account token off; the controller needs it")
	}

	if psc := pod.SecurityContext; psc != nil {
		if psc.RunAsUser != nil {
			run = append(run, "--user", strconv.FormatInt(*psc.RunAsUser, 10))
		}
		if psc.RunAsNonRoot != nil && *psc.RunAsNonRoot {
			checkImageUserNonRoot(t, image)
		}
		if psc.SeccompProfile != nil && psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Fatalf("seccomp profile %s is not translated (podman's default is the runtime default)", psc.SeccompProfile.Type)
		}
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			run = append(run, "--user", strconv.FormatInt(*sc.RunAsUser, 10))
		}
		if sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem {
			// Kubernetes mounts no tmpfs on /tmp or /run; podman's --read-only would.
			run = append(run, "--read-only", "--read-only-tmpfs=false")
		}
		if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
			run = append(run, "--security-opt", "no-new-privileges")
		}
		if sc.Privileged != nil && *sc.Privileged {
			t.Fatal("a privileged container is not translated")
		}
		if sc.Capabilities != nil {
			for _, capability := range sc.Capabilities.Drop {
				run = append(run, "--cap-drop", string(capability))
			}
			for _, capability := range sc.Capabilities.Add {
				run = append(run, "--cap-add", string(capability))
			}
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			run = append(run, "--env", e.Name+"="+e.Value)
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			run = append(run, "--env", e.Name+"="+installNamespace)
		default:
			t.Fatalf("environment variable %s: only values and the pod's namespace are translated", e.Name)
		}
	}
	if len(c.EnvFrom) != 0 || len(c.VolumeMounts) != 0 {
		t.Fatal("envFrom and volume mounts are not translated")
	}
	return append(append(run, image), args...)
}

// checkImageUserNonRoot fails unless the image's USER is a numeric non-root uid: what the kubelet
// checks for runAsNonRoot when the pod sets no runAsUser.
func checkImageUserNonRoot(t *testing.T, image string) {
	t.Helper()
	user := strings.TrimSpace(string(run(t, nil, "podman", "image", "inspect", "--format", "{{.Config.User}}", image)))
	uid, _, _ := strings.Cut(user, ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		t.Fatalf("the image's USER is %q: runAsNonRoot needs a numeric non-root uid", user)
	}
}

// installedDeployment installs the chart (helm, as a platform engineer would) and returns the
// Deployment the apiserver holds.
func installedDeployment(t *testing.T, k kube) *appsv1.Deployment {
	t.Helper()
	h := func(args ...string) string {
		t.Helper()
		return string(run(t, helmEnv(t), helm(t), append(args, "--kubeconfig", k.kubeconfig)...))
	}
	k.createNamespace(argoCDNamespace)
	h("install", release, chartDir, "--namespace", installNamespace, "--create-namespace")
	t.Cleanup(func() { h("uninstall", release, "--namespace", installNamespace) })
	var dep appsv1.Deployment
	find(t, decode(t, []byte(k.run("get", "deployment", "-n", installNamespace, deploymentName, "-o", "yaml"))), "Deployment", deploymentName, &dep)
	return &dep
}

// chartAppVersion is the chart's appVersion: the image tag it deploys by default.
func chartAppVersion(t *testing.T) string {
	t.Helper()
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(readFile(t, filepath.Join(chartDir, "Chart.yaml")), &chart); err != nil {
		t.Fatal(err)
	}
	return chart.AppVersion
}

// The image is what the chart deploys by default, under the version the binary reports, and it
// carries the OCI labels.
func TestTheImageIsTheChartsDefault(t *testing.T) {
	image := containerImage(t)
	g := NewWithT(t)
	version := chartAppVersion(t)

	var dep appsv1.Deployment
	find(t, decode(t, renderHelm(t)), "Deployment", deploymentName, &dep)
	chartImage := dep.Spec.Template.Spec.Containers[0].Image
	g.Expect(chartImage).To(HaveSuffix(":"+version), "the chart's default tag is its appVersion")
	find(t, decode(t, renderKustomize(t)), "Deployment", deploymentName, &dep)
	g.Expect(dep.Spec.Template.Spec.Containers[0].Image).To(Equal(chartImage), "kustomize deploys the same image")

	out := string(run(t, nil, "podman", "run", "--rm", "--pull", "never", "--runtime", "runc",
		"--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096", image, "version"))
	g.Expect(out).To(MatchRegexp(`^argocd-pull `+regexp.QuoteMeta(version)+` \(revision [0-9a-f]{12}(-dirty)?, go`), "the binary reports the chart's version")

	var labels map[string]string
	g.Expect(json.Unmarshal(run(t, nil, "podman", "image", "inspect", "--format", "{{json .Labels}}", image), &labels)).To(Succeed())
	g.Expect(labels).To(HaveKeyWithValue("org.opencontainers.image.version", version))
	g.Expect(labels).To(HaveKeyWithValue("org.opencontainers.image.revision", MatchRegexp(`^[0-9a-f]{12}(-dirty)?$`)))
	g.Expect(labels).To(HaveKey("org.opencontainers.image.source"))
	g.Expect(labels).To(HaveKey("org.opencontainers.image.created"))
}

// The image, started as the chart's Deployment starts it against a real apiserver with the
// installed RBAC and in-cluster configuration only, becomes ready, propagates an Application,
// writes its report and serves metrics (runControllerAsServiceAccount), and on SIGTERM exits 0
// within the pod's terminationGracePeriodSeconds. Its log is kept as a test artifact.
func TestTheImageRunsAsTheChartRunsIt(t *testing.T) {
	image := containerImage(t)
	g := NewWithT(t)
	env := testenv.Get(t)
	k := newKube(t, env)
	dep := installedDeployment(t, k)
	apiserver, err := url.Parse(env.Config.Host)
	g.Expect(err).NotTo(HaveOccurred())

	c := dep.Spec.Template.Spec.Containers[0]
	g.Expect(c.Args).NotTo(ContainElement(HavePrefix("--kubeconfig")), "in-cluster configuration only")
	g.Expect(c.ReadinessProbe.HTTPGet.Path).To(Equal("/readyz"), "runControllerAsServiceAccount checks the chart's probe paths")
	g.Expect(c.LivenessProbe.HTTPGet.Path).To(Equal("/healthz"), "runControllerAsServiceAccount checks the chart's probe paths")

	ctl := runControllerAsServiceAccount(t, k, c.Args, "guestbook-image", inContainer(image, dep, apiserver, env.Config.CAData))
	log := func() string { data, _ := os.ReadFile(ctl.Log); return string(data) }

	grace := time.Duration(*dep.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
	sent := time.Now()
	g.Expect(ctl.Signal(syscall.SIGTERM)).To(Succeed())
	select {
	case <-ctl.Done():
	case <-time.After(grace + 5*time.Second):
		t.Fatalf("still running %s after SIGTERM (terminationGracePeriodSeconds %s)", grace+5*time.Second, grace)
	}
	stopped := time.Since(sent)
	t.Logf("SIGTERM -> exit in %s (terminationGracePeriodSeconds %s)", stopped.Round(time.Millisecond), grace)
	g.Expect(ctl.Err()).NotTo(HaveOccurred(), "a clean exit (status 0) on SIGTERM")
	g.Expect(stopped).To(BeNumerically("<", grace), "exits inside terminationGracePeriodSeconds, before the kubelet's SIGKILL")
	g.Expect(log()).To(ContainSubstring("Stopping and waiting for"), "the manager's graceful shutdown")
	keep(t, "container.log", log())
}

// A container that cannot work says why and exits non-zero, rather than crash-looping in silence:
// without its service-account token, and with an apiserver that does not answer.
func TestTheImageSaysWhyItCannotStart(t *testing.T) {
	image := containerImage(t)
	env := testenv.Get(t)
	var dep appsv1.Deployment
	find(t, decode(t, renderHelm(t)), "Deployment", deploymentName, &dep)
	apiserver, err := url.Parse(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	closed, err := url.Parse("https://" + freeAddr(t)) // nothing listens there
	if err != nil {
		t.Fatal(err)
	}
	args := []string{}
	for _, a := range dep.Spec.Template.Spec.Containers[0].Args {
		args = append(args, strings.ReplaceAll(a, "$(POD_NAMESPACE)", installNamespace))
	}
	args = append(args, "--health-probe-bind-address="+freeAddr(t), "--metrics-bind-address="+freeAddr(t))
	for name, tc := range map[string]struct {
		apiserver *url.URL
		token     string
		says      []string
	}{
		"no service-account token":          {apiserver, "", []string{serviceAccountDir + "/token", "--kubeconfig"}},
		"an apiserver that does not answer": {closed, "token", []string{"the hub apiserver https://" + closed.Host + " did not answer", "connection refused"}},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			sa := serviceAccountFiles(t, tc.token, env.Config.CAData)
			logPath := filepath.Join(t.TempDir(), "controller.log")
			ctl, err := localproc.Start(logPath, "podman", podmanRun(t, image, &dep, tc.apiserver, sa, args))
			g.Expect(err).NotTo(HaveOccurred())
			t.Cleanup(ctl.Stop)
			select {
			case <-ctl.Done():
			case <-time.After(60 * time.Second):
				t.Fatal("still running after 60 s")
			}
			data, _ := os.ReadFile(logPath)
			t.Logf("container output:\n%s", data)
			var exit *exec.ExitError
			g.Expect(ctl.Err()).To(BeAssignableToTypeOf(exit), "a non-zero exit")
			for _, s := range tc.says {
				g.Expect(string(data)).To(ContainSubstring(s))
			}
		})
	}
}

// keep writes a test artifact (ARTIFACTS, else tmp/artifacts).
func keep(t *testing.T, name, content string) {
	t.Helper()
	path := filepath.Join(testenv.Artifacts(t), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("kept %s", path)
}
