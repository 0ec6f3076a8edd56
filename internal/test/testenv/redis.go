package testenv

import (
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/argocd-pull/argocd-pull/internal/localproc"
)

// Redis runs a real redis-server (Debian's, as Argo CD's cache in the lab) on a free loopback
// port for the test, requiring password when it is not empty, and returns its address. It skips
// under -short and fails when redis-server is not installed (make sandbox-deps installs it).
func Redis(t testing.TB, password string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs redis-server; run without -short")
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server is not installed (make sandbox-deps installs it): %v", err)
	}
	port, err := localproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"}
	if password != "" {
		args = append(args, "--requirepass", password)
	}
	p, err := localproc.Start(filepath.Join(t.TempDir(), "redis.log"), bin, args)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			_ = c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server did not listen on %s within 30s (its log: %s)", addr, p.Log)
		}
	}
}
