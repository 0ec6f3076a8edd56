package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestComponentProcesses(t *testing.T) {
	var procs []Process
	for _, n := range []string{"hub-etcd", "hub-apiserver", "cluster1-etcd", "cluster1-apiserver", "cluster10-etcd",
		"hub-registration-controller", "cluster1-registration-agent", "cluster1-work-agent", "cluster1-pod-loopback", "cluster1-proxy-agent", "cluster1-cluster-proxy-agent", "cluster10-registration-agent",
		"cluster10-work-agent", "cluster1-argocd-application-controller", "hub-placement", "hub-argocd-pull", "hub-argocd-applicationset-controller"} {
		procs = append(procs, Process{Name: n})
	}
	for component, want := range map[string][]string{
		"cluster1-agents":           {"cluster1-registration-agent", "cluster1-work-agent", "cluster1-proxy-agent", "cluster1-cluster-proxy-agent"},
		"cluster1":                  {"cluster1-etcd", "cluster1-apiserver", "cluster1-registration-agent", "cluster1-work-agent", "cluster1-pod-loopback", "cluster1-proxy-agent", "cluster1-cluster-proxy-agent", "cluster1-argocd-application-controller"},
		"argocd-pull":               {"hub-argocd-pull"},
		"applicationset-controller": {"hub-argocd-applicationset-controller"},
		"cluster1-work-agent":       {"cluster1-work-agent"},
		"hub":                       {"hub-etcd", "hub-apiserver", "hub-registration-controller", "hub-placement", "hub-argocd-pull", "hub-argocd-applicationset-controller"},
	} {
		got, err := componentProcesses(procs, component)
		if err != nil {
			t.Fatalf("%s: %v", component, err)
		}
		var names []string
		for _, p := range got {
			names = append(names, p.Name)
		}
		if !slices.Equal(names, want) {
			t.Errorf("%s: %v, want %v (start order)", component, names, want)
		}
	}
	for _, unknown := range []string{"cluster3", "cluster3-agents", "argocd", ""} {
		if _, err := componentProcesses(procs, unknown); err == nil {
			t.Errorf("%q: no error for a component the lab does not have", unknown)
		}
	}
}

func TestPortsAreKeptAndATakenOneIsRefused(t *testing.T) {
	dir := t.TempDir()
	b, err := loadPorts(dir)
	if err != nil {
		t.Fatal(err)
	}
	hub, err := b.port("hub-apiserver")
	if err != nil {
		t.Fatal(err)
	}
	etcd, err := b.port("hub-etcd")
	if err != nil {
		t.Fatal(err)
	}
	if hub == etcd {
		t.Fatalf("two listeners on port %d", hub)
	}
	again, err := loadPorts(dir)
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := again.port("hub-apiserver"); p != hub {
		t.Errorf("hub-apiserver on %d after a restart, was %d", p, hub)
	}
	if err := again.checkFree(); err != nil {
		t.Errorf("free ports refused: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(hub))
	if err != nil {
		t.Skipf("port %d taken meanwhile: %v", hub, err)
	}
	defer func() { _ = l.Close() }()
	if err := again.checkFree(); !errors.Is(err, errPortsTaken) {
		t.Errorf("checkFree with hub-apiserver's port taken: %v", err)
	}
}

// Two labs started together take their ports from ranges of their own (make test's two shards):
// every port chosen is in the lab's range, and a range that is not one is refused with why.
func TestALabTakesItsPortsFromItsRange(t *testing.T) {
	r, err := ParsePortRange("40960-49151")
	if err != nil {
		t.Fatal(err)
	}
	b, err := loadPorts(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b.within = r
	for i := range 20 {
		p, err := b.port(fmt.Sprintf("listener-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if p < r.Low || p > r.High {
			t.Errorf("listener-%d on port %d, outside %d-%d", i, p, r.Low, r.High)
		}
	}
	if r, err := ParsePortRange(""); err != nil || r != (PortRange{}) {
		t.Errorf(`ParsePortRange(""): %v, %v; want the zero range`, r, err)
	}
	for _, bad := range []string{"40960", "49151-40960", "0-100", "40960-60000", "a-b", "-1-5"} {
		if _, err := ParsePortRange(bad); err == nil {
			t.Errorf("ParsePortRange(%q) took it", bad)
		}
	}
}

func TestPurgeDeletesOnlyALab(t *testing.T) {
	notALab := t.TempDir()
	keep := filepath.Join(notALab, "precious")
	if err := os.WriteFile(keep, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Purge(notALab); err == nil {
		t.Error("Purge deleted a directory that holds no lab")
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("the file is gone: %v", err)
	}
	lab := t.TempDir()
	b, err := loadPorts(lab)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.port("hub-apiserver"); err != nil {
		t.Fatal(err)
	}
	if _, err := Purge(lab); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(lab); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the lab's directory is still there: %v", err)
	}
}

// The lab's controller from the image runs as the chart's Deployment runs it, with the
// kubeconfig, cluster-proxy CA and Argo CD token flags pointing at their mounts and every other
// flag unchanged.
func TestControllerInImage(t *testing.T) {
	args := controllerInImage("ghcr.io/argocd-pull/argocd-pull:v0.1.0", "/lab/hub-controller-image.kubeconfig",
		[]string{"controller", "--kubeconfig=/lab/hub.kubeconfig", "--argocd-namespace=argocd", "--cluster-proxy-ca-file=/lab/cluster-proxy/ca.crt", "--argocd-server-token-file=/lab/argocd-pull-argocd-token"})
	joined := strings.Join(args, " ")
	for _, want := range []string{
		"--read-only --read-only-tmpfs=false", "--cap-drop ALL", "--security-opt no-new-privileges",
		"--volume /lab/hub-controller-image.kubeconfig:/var/run/argocd-pull/kubeconfig:ro,U",
		"--volume /lab/cluster-proxy/ca.crt:/var/run/argocd-pull/cluster-proxy-ca.crt:ro ",
		"--volume /lab/argocd-pull-argocd-token:/var/run/argocd-pull/argocd-server-token:ro,U ghcr.io/argocd-pull/argocd-pull:v0.1.0",
		"ghcr.io/argocd-pull/argocd-pull:v0.1.0 controller --kubeconfig=/var/run/argocd-pull/kubeconfig --argocd-namespace=argocd --cluster-proxy-ca-file=/var/run/argocd-pull/cluster-proxy-ca.crt --argocd-server-token-file=/var/run/argocd-pull/argocd-server-token",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("podman %s\nlacks %q", joined, want)
		}
	}
	if strings.Contains(joined, "--user") {
		t.Errorf("the image's own non-root USER runs it, as in the chart (no runAsUser): %s", joined)
	}
}

// The repo-server of 3.5+ refuses --disable-tls beside its default --client-ca-path; 3.4 and
// older do not know that flag.
func TestPlaintextRepoServerFlagsPerVersion(t *testing.T) {
	for version, want := range map[string][]string{
		"v3.2.0":  {"--disable-tls"},
		"v3.4.7":  {"--disable-tls"},
		"v3.5.1":  {"--disable-tls", "--client-ca-path="},
		"v3.10.0": {"--disable-tls", "--client-ca-path="},
		"v4.0.0":  {"--disable-tls", "--client-ca-path="},
	} {
		if got := plaintextRepoServer(version); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", version, got, want)
		}
	}
}
