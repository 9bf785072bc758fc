package localcluster

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gpustack/gpustack-operator/test/framework/realnode"
)

// pki is the local cluster's certificate authority and the key pairs signed by it.
type pki struct {
	dir    string
	caCert *x509.Certificate
	caKey  *rsa.PrivateKey
}

// newPKI creates a fresh CA in dir, as name.crt and name.key, with the common name cn.
func newPKI(dir, name, cn string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, errors.Wrap(err, "cannot create pki directory")
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, errors.Wrap(err, "cannot generate CA key")
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, errors.Wrap(err, "cannot sign CA certificate")
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, errors.Wrap(err, "cannot parse CA certificate")
	}
	p := &pki{dir: dir, caCert: cert, caKey: key}
	if err := writePEM(p.path(name+".crt"), "CERTIFICATE", der); err != nil {
		return nil, err
	}
	return p, writePEM(p.path(name+".key"), "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key))
}

func (p *pki) path(name string) string { return filepath.Join(p.dir, name) }

// caPEM returns the CA certificate in PEM form, for caBundles and kubeconfigs.
func (p *pki) caPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.caCert.Raw})
}

// serving issues a server certificate for loopback (and the in-cluster names of the API server) as
// <name>.crt and <name>.key.
func (p *pki) serving(name string, dnsNames ...string) error {
	// The API server's address on loopback, on the real nodes' network, and its Service's in both modes.
	ips := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1"), net.ParseIP(realnode.HostIP), net.ParseIP(realnode.APIServiceIP)}
	return p.issue(name, pkix.Name{CommonName: name}, x509.ExtKeyUsageServerAuth, append([]string{"localhost"}, dnsNames...), ips)
}

// client issues a client certificate for user cn in the given groups as <name>.crt and <name>.key.
func (p *pki) client(name, cn string, groups ...string) error {
	return p.issue(name, pkix.Name{CommonName: cn, Organization: groups}, x509.ExtKeyUsageClientAuth, nil, nil)
}

func (p *pki) issue(name string, subject pkix.Name, usage x509.ExtKeyUsage, dns []string, ips []net.IP) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return errors.Wrapf(err, "cannot generate key for %s", name)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return errors.Wrap(err, "cannot draw a serial number")
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(10, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     dns,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, &key.PublicKey, p.caKey)
	if err != nil {
		return errors.Wrapf(err, "cannot sign certificate for %s", name)
	}
	if err := writePEM(p.path(name+".crt"), "CERTIFICATE", der); err != nil {
		return err
	}
	return writePEM(p.path(name+".key"), "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key))
}

// serviceAccountKeys writes the key pair that signs service-account tokens as sa.key and sa.pub.
func (p *pki) serviceAccountKeys() error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return errors.Wrap(err, "cannot generate service-account key")
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return errors.Wrap(err, "cannot encode service-account public key")
	}
	if err := writePEM(p.path("sa.key"), "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key)); err != nil {
		return err
	}
	return writePEM(p.path("sa.pub"), "PUBLIC KEY", pub)
}

// kubeconfig writes a kubeconfig for the client certificate <name> talking to server.
func (p *pki) kubeconfig(path, name, server string) error {
	crt, err := os.ReadFile(p.path(name + ".crt"))
	if err != nil {
		return errors.Wrap(err, "cannot read client certificate")
	}
	key, err := os.ReadFile(p.path(name + ".key"))
	if err != nil {
		return errors.Wrap(err, "cannot read client key")
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: p.caPEM()}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: crt, ClientKeyData: key}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: name}
	cfg.CurrentContext = "local"
	return errors.Wrap(clientcmd.WriteToFile(*cfg, path), "cannot write kubeconfig")
}

// writePEM writes a file whole or not at all (a file written beside it, then renamed): kube-apiserver reloads
// the front proxy's files while it runs (RotateFrontProxyCA).
func writePEM(path, kind string, der []byte) error {
	data := pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
	if err := os.WriteFile(path+".new", data, 0o600); err != nil {
		return errors.Wrapf(err, "cannot write %s", filepath.Base(path))
	}
	return errors.Wrapf(os.Rename(path+".new", path), "cannot write %s", filepath.Base(path))
}
