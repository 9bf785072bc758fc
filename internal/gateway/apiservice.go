package gateway

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatewayv1 "github.com/gpustack/gpustack-operator/apis/gateway/v1"
)

// FieldManager is the gateway's field manager for what it applies.
const FieldManager = "gpustack-operator-worker-gateway"

// Register makes a serving certificate for the Service namespace/name and applies the APIService that sends
// kube-apiserver's aggregation layer there on port; it returns the certificate to serve with.
func Register(ctx context.Context, c client.Client, namespace, name string, port int32) (tls.Certificate, error) {
	cert, caBundle, err := ServingCertificate(namespace, name)
	if err != nil {
		return tls.Certificate{}, err
	}
	apiService := client.ApplyConfigurationFromUnstructured(APIService(namespace, name, port, caBundle))
	if err := c.Apply(ctx, apiService, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return tls.Certificate{}, errors.Wrapf(err, "cannot apply the APIService %s", gatewayv1.APIServiceName)
	}
	return cert, nil
}

// ServingCertificate makes a self-signed serving certificate, valid a year, for the in-cluster name of the
// Service namespace/name, the name kube-apiserver checks when it passes a request on. Its PEM is the
// APIService's caBundle; a new one is made at every start and the APIService applied again with it.
func ServingCertificate(namespace, name string) (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, errors.Wrap(err, "cannot generate the serving key")
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, nil, errors.Wrap(err, "cannot pick a serial number")
	}
	dns := name + "." + namespace + ".svc"
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: dns}, DNSNames: []string{dns, dns + ".cluster.local"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(365 * 24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, errors.Wrap(err, "cannot sign the serving certificate")
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return tls.Certificate{}, nil, errors.Wrap(err, "cannot encode the serving key")
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	cert, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	return cert, certPEM, errors.Wrap(err, "cannot load the serving certificate")
}

// +kubebuilder:rbac:groups=apiregistration.k8s.io,resources=apiservices,verbs=create
// +kubebuilder:rbac:groups=apiregistration.k8s.io,resources=apiservices,resourceNames=v1.gateway.gpustack.ai,verbs=get;patch

// APIService is the APIService (apiregistration.k8s.io/v1) that puts the gateway's API behind kube-apiserver:
// served by the Service namespace/name on port, its certificate trusted through caBundle.
func APIService(namespace, name string, port int32, caBundle []byte) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": gatewayv1.APIServiceName, "labels": map[string]any{"app.kubernetes.io/part-of": "gpustack-operator"}},
		"spec": map[string]any{
			"group": gatewayv1.GroupVersion.Group, "version": gatewayv1.GroupVersion.Version,
			"service":  map[string]any{"namespace": namespace, "name": name, "port": int64(port)},
			"caBundle": base64.StdEncoding.EncodeToString(caBundle), "groupPriorityMinimum": int64(1000), "versionPriority": int64(15),
		},
	}}
}
