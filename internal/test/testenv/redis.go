package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
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
	return startRedis(t, password, nil)
}

// RedisWithUser is Redis with, besides the default user's password, an ACL user of its own:
// username with userPassword and the ACL rules given (as redis.conf's user directive takes them).
func RedisWithUser(t testing.TB, password, username, userPassword string, rules []string) string {
	t.Helper()
	return startRedis(t, password, nil, append([]string{"--user", username, "on", ">" + userPassword}, rules...)...)
}

// RedisTLS is Redis serving TLS only (as Argo CD's --redis-use-tls expects), with a self-signed
// certificate for 127.0.0.1; it returns the address and the certificate's file, the CA to trust.
func RedisTLS(t testing.TB, password string) (addr, caFile string) {
	t.Helper()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "redis.crt"), filepath.Join(dir, "redis.key")
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "redis"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return startRedis(t, password, []string{"--tls-cert-file", certFile, "--tls-key-file", keyFile, "--tls-ca-cert-file", certFile, "--tls-auth-clients", "no"}), certFile
}

// startRedis runs redis-server; with tlsArgs it serves TLS only, on the port it would serve
// plain text on.
func startRedis(t testing.TB, password string, tlsArgs []string, more ...string) string {
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
	if tlsArgs != nil {
		args = append([]string{"--port", "0", "--tls-port", strconv.Itoa(port)}, append(args[2:], tlsArgs...)...)
	}
	if password != "" {
		args = append(args, "--requirepass", password)
	}
	args = append(args, more...)
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
