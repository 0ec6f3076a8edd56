package sandbox

import (
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The lab's private Git server: git clones with the password, and is refused without it or with
// the old one once it changed; nothing is pushed.
func TestTheLabsGitServerAsksForItsPassword(t *testing.T) {
	if _, err := os.Stat(gitHTTPBackend); err != nil {
		t.Fatalf("git http-backend: %v", err)
	}
	dir := t.TempDir()
	if _, err := initGitRepo(dir); err != nil {
		t.Fatal(err)
	}
	password := GitPasswordFile(dir)
	if err := os.WriteFile(password, []byte("first\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(GitHandler(filepath.Join(dir, "git"), password))
	defer srv.Close()
	clone := func(user string) (string, error) {
		url := strings.Replace(srv.URL, "http://", "http://"+user+"@", 1) + "/apps"
		cmd := exec.Command("git", "clone", "-q", url, filepath.Join(t.TempDir(), "c"))
		cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=", "SSH_ASKPASS=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := clone(GitUser + ":first"); err != nil {
		t.Fatalf("a clone with the password: %v: %s", err, out)
	}
	if out, err := clone(GitUser + ":wrong"); err == nil || !strings.Contains(out, "Authentication failed") {
		t.Fatalf("a clone with a wrong password: %v: %s", err, out)
	}
	if err := os.WriteFile(password, []byte("second\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := clone(GitUser + ":first"); err == nil {
		t.Fatalf("a clone with the old password succeeded: %s", out)
	}
	if out, err := clone(GitUser + ":second"); err != nil {
		t.Fatalf("a clone with the new password: %v: %s", err, out)
	}
}
