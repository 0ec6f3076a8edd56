package tlsfiles

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestClientConfigTrustsOnlyAReadablePEMBundle(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not-pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, err := ClientConfig("Search", "", false); err != nil || cfg.RootCAs != nil || cfg.InsecureSkipVerify {
		t.Errorf("no CA file: got %+v, %v; want the system's roots, verified", cfg, err)
	}
	if cfg, err := ClientConfig("Search", "", true); err != nil || !cfg.InsecureSkipVerify {
		t.Errorf("insecure: got %+v, %v", cfg, err)
	}
	if _, err := ClientConfig("Search", filepath.Join(dir, "missing"), false); err == nil || !strings.Contains(err.Error(), "reading the Search CA file") {
		t.Errorf("a missing file: got %v", err)
	}
	if _, err := ClientConfig("Search", notPEM, false); err == nil || !strings.Contains(err.Error(), "holds no PEM certificate") {
		t.Errorf("a file with no certificate: got %v", err)
	}
}

func TestClientConfigReachesAServerItsBundleSigned(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	get := func(file string) error {
		cfg, err := ClientConfig("test", file, false)
		if err != nil {
			return err
		}
		resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}).Get(srv.URL)
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}
	if err := get(ca); err != nil {
		t.Errorf("with the server's CA: %v", err)
	}
	if err := get(""); err == nil {
		t.Error("with the system's roots, a self-signed server was trusted")
	}
}
