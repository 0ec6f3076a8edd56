package sandbox

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the certificate material of one cluster of the sandbox, written under dir.
type pki struct {
	dir                              string
	caCert, caKey                    string
	servingCert, servingKey          string
	adminCert, adminKey              string
	serviceAccountKey                string // private key; its public half verifies tokens
	serviceAccountPub                string
	caPEM, adminCertPEM, adminKeyPEM []byte
}

// newPKI makes a CA, a serving certificate for 127.0.0.1 and localhost, a cluster-admin client
// certificate (group system:masters) and a service account signing key; or, when dir already holds
// them (a restarted lab), keeps them: the clusters' certificates, the client certificates OCM
// issued and the service account tokens stay valid.
func newPKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pki{
		dir:    dir,
		caCert: filepath.Join(dir, "ca.crt"), caKey: filepath.Join(dir, "ca.key"),
		servingCert: filepath.Join(dir, "apiserver.crt"), servingKey: filepath.Join(dir, "apiserver.key"),
		adminCert: filepath.Join(dir, "admin.crt"), adminKey: filepath.Join(dir, "admin.key"),
		serviceAccountKey: filepath.Join(dir, "sa.key"), serviceAccountPub: filepath.Join(dir, "sa.pub"),
	}
	if kept, err := p.load(); kept || err != nil {
		return p, err
	}
	ca, caKey, caPEM, err := newCA("argocd-pull-sandbox-ca")
	if err != nil {
		return nil, err
	}
	p.caPEM = caPEM
	if err := writePEM(p.caCert, p.caPEM); err != nil {
		return nil, err
	}
	if err := writeKey(p.caKey, caKey); err != nil {
		return nil, err
	}

	serving, servingKey, err := issueCert(ca, caKey, 2, pkix.Name{CommonName: "kube-apiserver"}, x509.ExtKeyUsageServerAuth,
		[]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")}, []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"})
	if err != nil {
		return nil, fmt.Errorf("issuing the serving certificate: %w", err)
	}
	p.adminCertPEM, p.adminKeyPEM, err = issueCert(ca, caKey, 3, pkix.Name{CommonName: "sandbox-admin", Organization: []string{"system:masters"}}, x509.ExtKeyUsageClientAuth, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("issuing the admin certificate: %w", err)
	}
	for path, data := range map[string][]byte{p.servingCert: serving, p.servingKey: servingKey, p.adminCert: p.adminCertPEM, p.adminKey: p.adminKeyPEM} {
		if err := writePEM(path, data); err != nil {
			return nil, err
		}
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	if err := writePEM(p.serviceAccountKey, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)})); err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	return p, writePEM(p.serviceAccountPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}))
}

// load reads the material a first start wrote; false when there is none. The service account
// public key is written last, so its presence says the rest is there.
func (p *pki) load() (bool, error) {
	if _, err := os.Stat(p.serviceAccountPub); errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	var err error
	for path, into := range map[string]*[]byte{p.caCert: &p.caPEM, p.adminCert: &p.adminCertPEM, p.adminKey: &p.adminKeyPEM} {
		if *into, err = os.ReadFile(path); err != nil {
			return false, fmt.Errorf("reading the lab's certificates: %w", err)
		}
	}
	return true, nil
}

// newCA makes a self-signed CA, valid for a year.
func newCA(commonName string) (*x509.Certificate, *ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: commonName},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(1, 0, 0),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("creating the CA %s: %w", commonName, err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, err
	}
	return ca, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// issueCert issues a leaf certificate for one year, signed by ca, with a new P-256 key; it returns
// the certificate and the key, PEM-encoded.
func issueCert(ca *x509.Certificate, caKey *ecdsa.PrivateKey, serial int64, subject pkix.Name, usage x509.ExtKeyUsage, ips []net.IP, dns []string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: subject, NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(1, 0, 0),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: ips, DNSNames: dns,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
}

func writePEM(path string, data []byte) error {
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
