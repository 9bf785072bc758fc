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
	"strings"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	gatewayv1 "github.com/gpustack/gpustack-operator/apis/gateway/v1"
	"github.com/gpustack/gpustack-operator/apis/scheme"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/gateway"
	"github.com/gpustack/gpustack-operator/internal/webhooks"
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

// Behind a real kube-apiserver's aggregation layer: the gateway writes its serving certificate's CA into the
// APIService, and kubectl get on the manager cluster reads the members' aggregate through it, with the
// gateway's columns. The gateway answers
// only the front proxy: a request straight to it is refused.
var _ = Describe("the worker-gateway behind kube-apiserver", Ordered, func() {
	var kubeconfig, direct string
	var proxyCert tls.Certificate
	var mgr client.WithWatch
	var serving *gateway.Serving

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
		mgr, err = client.NewWithWatch(cfg, client.Options{Scheme: scheme.New()})
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
		// to it on loopback, where a cluster's Service would send it to the gateway's Pods; the APIService is the
		// chart's, without a caBundle: the gateway writes it.
		gw := &gateway.Gateway{Client: mgr, Namespace: workerv1.SystemNamespace, Scheme: scheme.New(),
			Interval: 200 * time.Millisecond, Timeout: time.Second, Log: logr.Discard()}
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		port := lis.Addr().(*net.TCPAddr).Port
		direct = "https://" + lis.Addr().String()
		Expect(mgr.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: service},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost", Ports: []corev1.ServicePort{{Port: int32(port)}}}})).To(Succeed())
		Expect(mgr.Create(ctx, chartAPIService(port))).To(Succeed())
		serving = replica(mgr)
		// kube-apiserver publishes the request-header settings a moment after it starts.
		Eventually(func() error { return serving.Refresh(ctx, 30*time.Second) }).WithTimeout(30 * time.Second).Should(Succeed())
		srv := &http.Server{Handler: gateway.Delegated(&gateway.Server{Source: gw, WatchInterval: 100 * time.Millisecond, MaxWatchesPerClient: 1}, serving.RequestHeader, mgr),
			ReadHeaderTimeout: time.Second, TLSConfig: serving.TLSConfig()}
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

	// Each user the front proxy names is held to its own count of open watches (one here).
	It("bounds the watches each user holds open", func() {
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{proxyCert},
			InsecureSkipVerify: true}}} // the test reaches the gateway's own self-signed port
		watch := func(user string) (int, string) {
			GinkgoHelper()
			ctx, cancel := context.WithCancel(context.Background())
			DeferCleanup(cancel)
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, direct+"/apis/gateway.gpustack.ai/v1/aggregatedinstancetypes?watch=true", nil)
			Expect(err).NotTo(HaveOccurred())
			req.Header.Set("X-Remote-User", user)
			req.Header.Add("X-Remote-Group", "system:masters")
			resp, err := c.Do(req)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(resp.Body.Close)
			if resp.StatusCode == http.StatusOK {
				return resp.StatusCode, ""
			}
			body, err := io.ReadAll(resp.Body)
			Expect(err).NotTo(HaveOccurred())
			return resp.StatusCode, string(body)
		}
		code, body := watch("root")
		Expect(code).To(Equal(http.StatusOK), body)
		code, body = watch("root")
		Expect(code).To(Equal(http.StatusTooManyRequests), body)
		Expect(body).To(ContainSubstring(`user \"root\" holds 1 watches open on the gateway`))
		code, body = watch("other-admin")
		Expect(code).To(Equal(http.StatusOK), "another user is not held to root's count: %s", body)
	})

	It("refuses a request that does not come through kube-apiserver", func() {
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 10 * time.Second} // the test reaches the gateway's own self-signed port
		resp, err := c.Get(direct + "/apis/gateway.gpustack.ai/v1/aggregatedinstancetypes")
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized), "status %s", strconv.Itoa(resp.StatusCode))
	})

	// kube-apiserver aggregates the gateway's OpenAPI v3 document, so kubectl explain knows its kinds.
	It("explains the served kinds with kubectl explain", func() {
		Eventually(func() (string, error) {
			return testenv.Kubectl(kubeconfig, "explain", "aggregatedinstancetypes.status")
		}).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(And(
			ContainSubstring("KIND:       AggregatedInstanceType"), ContainSubstring("GROUP:      gateway.gpustack.ai"),
			ContainSubstring("tiers"), ContainSubstring("group the active members by the deciding view")))
		out, err := testenv.Kubectl(kubeconfig, "explain", "clusterinstancetypes.spec")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("FIELD: spec <InstanceTypeSpec>"))
	})

	// Every replica serves the Secret's pair, whose CA the APIService carries; a renewed pair is served, and its
	// CA written, at the next refresh, without a restart.
	It("serves one certificate on every replica, and a renewed one without a restart", func() {
		ctx := context.Background()
		other := replica(mgr)
		Expect(other.Refresh(ctx, 30*time.Second)).To(Succeed())
		Expect(served(other)).To(Equal(served(serving)), "a second replica serves the first's certificate")
		Expect(servedDirect(direct)).To(Equal(served(serving)))

		hosts, err := other.Certificate.Hosts()
		Expect(err).NotTo(HaveOccurred())
		renewed, err := webhooks.SelfSigned(hosts, time.Now())
		Expect(err).NotTo(HaveOccurred())
		secret := &corev1.Secret{}
		Expect(mgr.Get(ctx, client.ObjectKey{Namespace: workerv1.SystemNamespace, Name: gatewayv1.ServingSecretName}, secret)).To(Succeed())
		secret.Data = map[string][]byte{"ca.crt": renewed.CA, "tls.crt": renewed.Cert, "tls.key": renewed.Key}
		Expect(mgr.Update(ctx, secret)).To(Succeed())
		Expect(serving.Refresh(ctx, 30*time.Second)).To(Succeed())
		block, _ := pem.Decode(renewed.Cert)
		Expect(servedDirect(direct)).To(Equal(block.Bytes), "the renewed certificate is served")
		Eventually(func() (string, error) {
			return testenv.Kubectl(kubeconfig, "get", "aggregatedinstancetypes", "-o", "name")
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(ContainSubstring("gpu"),
			"kube-apiserver trusts the renewed certificate through the APIService's new caBundle")
	})

	// A replica follows the Secret: the pair another replica made when the Secret was deleted is served here a
	// moment later, not at the next read (an hour here), so kube-apiserver, which trusts only the new pair's CA
	// from then on, is not refused by this replica in between.
	It("serves the pair another replica made at once, following the Secret", func() {
		ctx, cancel := context.WithCancel(context.Background())
		DeferCleanup(cancel)
		other := replica(mgr)
		other.Watch = mgr
		Expect(other.Refresh(ctx, 30*time.Second)).To(Succeed())
		go func() { _ = other.Start(ctx) }()
		before := served(other)

		Expect(mgr.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: gatewayv1.ServingSecretName}})).To(Succeed())
		// The first replica signs a new pair into the Secret at its next read.
		Eventually(func() error { return serving.Refresh(ctx, 30*time.Second) }).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(served(serving)).NotTo(Equal(before), "a new pair was made")
		Eventually(func() []byte { return served(other) }).WithTimeout(10*time.Second).Should(Equal(served(serving)),
			"the other replica serves the new pair without waiting for its next read")
	})
})

// service is the gateway's Service, which its serving certificate names.
const service = "gpustack-operator-worker-gateway"

// replica is a replica's Serving, as worker-gateway --secure-port makes it, self-signing into the Secret.
func replica(c client.Client) *gateway.Serving {
	return &gateway.Serving{Client: c, Every: time.Hour, Log: logr.Discard(), Certificate: webhooks.Serving{
		Namespace: workerv1.SystemNamespace, Service: service, Secret: gatewayv1.ServingSecretName, APIServices: []string{gatewayv1.APIServiceName}}}
}

// chartAPIService is the APIService the chart makes, to the Service on port.
func chartAPIService(port int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": map[string]any{"name": gatewayv1.APIServiceName},
		"spec": map[string]any{"group": gatewayv1.GroupVersion.Group, "version": gatewayv1.GroupVersion.Version,
			"service":              map[string]any{"namespace": workerv1.SystemNamespace, "name": service, "port": int64(port)},
			"groupPriorityMinimum": int64(1000), "versionPriority": int64(15)}}}
}

// served is the DER of the certificate a replica serves.
func served(s *gateway.Serving) []byte {
	GinkgoHelper()
	cert, err := s.TLSConfig().GetCertificate(nil)
	Expect(err).NotTo(HaveOccurred())
	return cert.Certificate[0]
}

// servedDirect is the DER of the certificate the gateway's port presents.
func servedDirect(url string) []byte {
	GinkgoHelper()
	conn, err := tls.Dial("tcp", strings.TrimPrefix(url, "https://"), &tls.Config{InsecureSkipVerify: true}) // read, not trusted
	Expect(err).NotTo(HaveOccurred())
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Raw
}
