// Package tlsfiles makes the TLS configuration of argocd-pull's own clients (OCM Search, the hub
// Argo CD's redis and API server) from the files an install names: a CA bundle, read once at start.
package tlsfiles

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// ClientConfig trusts the PEM certificates in caFile (the system's roots when it is empty), or
// verifies nothing when insecure is set (the operator's explicit choice, for labs). what names the
// server in errors ("Search", "the Argo CD API server").
func ClientConfig(what, caFile string, insecure bool) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: insecure} //nolint:gosec // the operator's explicit choice
	if caFile == "" {
		return cfg, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("reading the %s CA file: %w", what, err)
	}
	cfg.RootCAs = x509.NewCertPool()
	if !cfg.RootCAs.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("the %s CA file %s holds no PEM certificate", what, caFile)
	}
	return cfg, nil
}
