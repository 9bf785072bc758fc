package gateway_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	gatewayv1 "github.com/gpustack/gpustack-operator/apis/gateway/v1"
	"github.com/gpustack/gpustack-operator/apis/scheme"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/gateway"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
	"github.com/gpustack/gpustack-operator/test/framework/walkthrough"
)

// frontProxy writes a CA and the front proxy's client certificate (common name front-proxy) signed by it, as
// kube-apiserver's --requestheader-client-ca-file and --proxy-client-cert-file/--proxy-client-key-file.
func frontProxy(dir string) (ca, cert, key string) {
	GinkgoHelper()
	write := func(name, kind string, der []byte) string {
		p := filepath.Join(dir, name)
		Expect(os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600)).To(Succeed())
		return p
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "front-proxy-ca"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour)}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	Expect(err).NotTo(HaveOccurred())
	proxyKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "front-proxy"}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour)}
	caCert, err := x509.ParseCertificate(caDER)
	Expect(err).NotTo(HaveOccurred())
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &proxyKey.PublicKey, caKey)
	Expect(err).NotTo(HaveOccurred())
	keyDER, err := x509.MarshalECPrivateKey(proxyKey)
	Expect(err).NotTo(HaveOccurred())
	return write("front-proxy-ca.crt", "CERTIFICATE", caDER), write("front-proxy.crt", "CERTIFICATE", der), write("front-proxy.key", "EC PRIVATE KEY", keyDER)
}

// Behind a real kube-apiserver's aggregation layer: the gateway registers its APIService, and kubectl get on
// the manager cluster reads the members' aggregate through it, with the gateway's columns. The gateway answers
// only the front proxy: a request straight to it is refused.
var _ = Describe("the worker-gateway behind kube-apiserver", Ordered, func() {
	var kubeconfig, direct string
	var proxyCert tls.Certificate

	BeforeAll(func() {
		bin, _, err := testenv.BinDir("etcd", "kube-apiserver")
		Expect(err).NotTo(HaveOccurred())
		dir := GinkgoT().TempDir()
		ca, cert, key := frontProxy(dir)
		proxyCert, err = tls.LoadX509KeyPair(cert, key)
		Expect(err).NotTo(HaveOccurred())
		env := &envtest.Environment{CRDDirectoryPaths: []string{testenv.Path("package", "crds")}, ErrorIfCRDPathMissing: true, BinaryAssetsDirectory: bin}
		args := env.ControlPlane.GetAPIServer().Configure()
		for flag, value := range map[string]string{"requestheader-client-ca-file": ca, "requestheader-allowed-names": "front-proxy",
			"requestheader-username-headers": "X-Remote-User", "requestheader-group-headers": "X-Remote-Group",
			"requestheader-extra-headers-prefix": "X-Remote-Extra-", "proxy-client-cert-file": cert, "proxy-client-key-file": key} {
			args.Set(flag, value)
		}
		cfg, err := env.Start()
		DeferCleanup(func() { _ = env.Stop() })
		Expect(err).NotTo(HaveOccurred())
		mgr, err := client.New(cfg, client.Options{Scheme: scheme.New()})
		Expect(err).NotTo(HaveOccurred())
		ctx := context.Background()
		Expect(mgr.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: workerv1.SystemNamespace}})).To(Succeed())
		u, err := url.Parse(cfg.Host)
		Expect(err).NotTo(HaveOccurred())
		kubeconfig = filepath.Join(dir, "kubeconfig")
		Expect(os.WriteFile(kubeconfig, kubeconfigOf(cfg, u.Host), 0o600)).To(Succeed())

		m := startMember(mgr, "member-a")
		m.instanceType("gpu", true, 2, 3, 4, workerv1.InstanceTypeActive)

		// The gateway as worker-gateway --secure-port runs it. A Service of type ExternalName sends kube-apiserver
		// to it on loopback, where a cluster's Service would send it to the gateway's Pods.
		gw := &gateway.Gateway{Client: mgr, Namespace: workerv1.SystemNamespace, Scheme: scheme.New(),
			Interval: 200 * time.Millisecond, Timeout: time.Second, Log: logr.Discard()}
		var rh gateway.RequestHeader
		Eventually(func() error { rh, err = gateway.ReadRequestHeader(ctx, mgr); return err }).WithTimeout(30 * time.Second).Should(Succeed())
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		port := lis.Addr().(*net.TCPAddr).Port
		direct = "https://" + lis.Addr().String()
		const service = "gpustack-operator-worker-gateway"
		Expect(mgr.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: service},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost", Ports: []corev1.ServicePort{{Port: int32(port)}}}})).To(Succeed())
		servingCert, err := gateway.Register(ctx, mgr, workerv1.SystemNamespace, service, int32(port))
		Expect(err).NotTo(HaveOccurred())
		srv := &http.Server{Handler: gateway.Delegated(&gateway.Server{Source: gw, WatchInterval: 100 * time.Millisecond}, rh, mgr),
			ReadHeaderTimeout: time.Second, TLSConfig: &tls.Config{Certificates: []tls.Certificate{servingCert}, ClientAuth: tls.RequestClientCert}}
		runCtx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = gw.Run(runCtx)
		}()
		go func() { _ = srv.ServeTLS(lis, "", "") }()
		DeferCleanup(func() {
			cancel()
			<-done
			_ = srv.Close()
		})
	})

	It("serves kubectl get aggregatedinstancetypes on the manager", func() {
		var out string
		Eventually(func(g Gomega) {
			var err error
			out, err = testenv.Kubectl(kubeconfig, "get", "aggregatedinstancetypes")
			status, _ := testenv.Kubectl(kubeconfig, "get", "apiservice", gatewayv1.APIServiceName, "-o", "jsonpath={.status.conditions}")
			g.Expect(err).NotTo(HaveOccurred(), "%s; the APIService's conditions: %s", out, status)
			g.Expect(out).To(ContainSubstring("gpu"))
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		Expect(walkthrough.ParseTable(out)).To(Equal([][]string{
			{"NAME", "CLUSTERS", "ACCELERATOR(EX/SH/SL/PT)", "CPU", "TIERS", "INACTIVE"},
			{"gpu", "1/1", "2/3 0/0 0/0 0/0", "0/0", "1", ""},
		}))
		out, err := testenv.Kubectl(kubeconfig, "get", "clustermembers", "-o", "jsonpath={.items[0].metadata.name}={.items[0].status.reachable}")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(Equal("member-a=true"))
	})

	// What kube-apiserver checks before it passes a request on, the gateway checks again with the cluster's
	// authorizer: with the front proxy's certificate, a user RBAC gives nothing is refused, an administrator is not.
	It("asks the cluster's authorizer about the user the front proxy names", func() {
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{proxyCert},
			InsecureSkipVerify: true}}, Timeout: 10 * time.Second} // the test reaches the gateway's own self-signed port
		get := func(user string, groups ...string) (int, string) {
			GinkgoHelper()
			req, err := http.NewRequest(http.MethodGet, direct+"/apis/gateway.gpustack.ai/v1/aggregatedinstancetypes", nil)
			Expect(err).NotTo(HaveOccurred())
			req.Header.Set("X-Remote-User", user)
			for _, g := range groups {
				req.Header.Add("X-Remote-Group", g)
			}
			resp, err := c.Do(req)
			Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			Expect(err).NotTo(HaveOccurred())
			return resp.StatusCode, string(body)
		}
		code, body := get("alice")
		Expect(code).To(Equal(http.StatusForbidden), body)
		Expect(body).To(ContainSubstring(`user \"alice\" cannot list resource \"aggregatedinstancetypes\" in API group \"gateway.gpustack.ai\"`))
		code, body = get("root", "system:masters")
		Expect(code).To(Equal(http.StatusOK), body)
	})

	It("refuses a request that does not come through kube-apiserver", func() {
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 10 * time.Second} // the test reaches the gateway's own self-signed port
		resp, err := c.Get(direct + "/apis/gateway.gpustack.ai/v1/aggregatedinstancetypes")
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized), "status %s", strconv.Itoa(resp.StatusCode))
	})
})
