package webhooks

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"bytes"
	"context"
	"crypto/tls"
	"encoding/pem"
	"net"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// servedCert returns the DER of the leaf certificate a TLS server at addr presents.
func servedCert(addr string) []byte {
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) // reads the certificate only
	if err != nil {
		return nil
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Raw
}

func der(certPEM []byte) []byte {
	b, _ := pem.Decode(certPEM)
	return b.Bytes
}

// Rotates the webhooks' certificate under a running webhook server, twice: cert-manager renews the Secret, and
// later the self-signed pair nears its end (a clock moved on). Each time the server presents the new
// certificate without a restart, and the configurations carry the new CA; a CA bundle dropped by someone else
// is written again.
var _ = It("rotates the webhook certificate without a restart", func() {
	ctx := context.Background()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	port := l.Addr().(*net.TCPAddr).Port
	Expect(l.Close()).To(Succeed())
	addr := "127.0.0.1:" + strconv.Itoa(port)
	s := Serving{Namespace: "default", URL: "https://" + addr, Secret: "rotating-webhook-tls", CertManager: true, CertDir: GinkgoT().TempDir()}
	DeferCleanup(func() {
		_ = suite.Client.Delete(context.Background(), &admissionv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: MutatingName}})
		_ = suite.Client.Delete(context.Background(), &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: ValidatingName}})
	})
	now := time.Now()
	issued, err := SelfSigned([]string{"127.0.0.1"}, now)
	Expect(err).NotTo(HaveOccurred())
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: s.Secret}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"ca.crt": issued.CA, "tls.crt": issued.Cert, "tls.key": issued.Key}}
	suite.Create(secret)
	Expect(Provision(ctx, suite.Client, s, now, 10*time.Second)).To(Succeed())

	server := webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: s.CertDir})
	testenv.RunUntilCleanup(server.Start)
	Eventually(func() []byte { return servedCert(addr) }).WithTimeout(30*time.Second).Should(Equal(der(issued.Cert)), "the first certificate")

	caBundle := func() []byte {
		m := &admissionv1.MutatingWebhookConfiguration{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Name: MutatingName}, m)).To(Succeed())
		return m.Webhooks[0].ClientConfig.CABundle
	}
	r := &Rotation{Client: suite.Client, Serving: s, Every: time.Hour, Log: logr.Discard()}
	Expect(r.Check(ctx)).To(Succeed())
	Expect(caBundle()).To(Equal(issued.CA), "nothing changed: the same CA")

	// helm adopting the configuration drops a webhook's CA bundle: the next check writes it again.
	m := &admissionv1.MutatingWebhookConfiguration{}
	Expect(suite.Client.Get(ctx, client.ObjectKey{Name: MutatingName}, m)).To(Succeed())
	m.Webhooks[0].ClientConfig.CABundle = nil
	Expect(suite.Client.Update(ctx, m, client.FieldOwner("helm"))).To(Succeed())
	Expect(r.Check(ctx)).To(Succeed())
	Expect(caBundle()).To(Equal(issued.CA), "the CA bundle written again")

	// cert-manager renews the Secret.
	renewed, err := SelfSigned([]string{"127.0.0.1"}, now)
	Expect(err).NotTo(HaveOccurred())
	secret.Data = map[string][]byte{"ca.crt": renewed.CA, "tls.crt": renewed.Cert, "tls.key": renewed.Key}
	Expect(suite.Client.Update(ctx, secret)).To(Succeed())
	Expect(r.Check(ctx)).To(Succeed())
	Eventually(func() []byte { return servedCert(addr) }).WithTimeout(30*time.Second).Should(Equal(der(renewed.Cert)),
		"the renewed certificate, served without a restart")
	Expect(caBundle()).To(Equal(renewed.CA), "the configurations carry the renewed CA")

	// Self-signed, the pair is signed again once it nears its end.
	s.CertManager = false
	r = &Rotation{Client: suite.Client, Serving: s, Every: time.Hour, Log: logr.Discard(),
		Now: func() time.Time { return now.AddDate(10, 0, 0).Add(-time.Hour) }}
	Expect(r.Check(ctx)).To(Succeed())
	Expect(caBundle()).NotTo(Equal(renewed.CA), "a new CA once the pair nears its end")
	Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(secret), secret)).To(Succeed())
	Expect(bytes.Equal(secret.Data["tls.crt"], renewed.Cert)).To(BeFalse(), "the Secret holds the new pair")
	Eventually(func() []byte { return servedCert(addr) }).WithTimeout(30*time.Second).Should(Equal(der(secret.Data["tls.crt"])),
		"the new self-signed certificate, served without a restart")
})
