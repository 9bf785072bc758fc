package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatewayv1 "github.com/gpustack/gpustack-operator/apis/gateway/v1"
	"github.com/gpustack/gpustack-operator/apis/scheme"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/gateway"
	"github.com/gpustack/gpustack-operator/package/rbac"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

var suite testenv.EnvtestSuite

func TestGateway(t *testing.T) { testenv.RunSuite(t, "worker-gateway suite", &suite) }

// memberCluster is a member: its own API server, reached through a proxy the spec can cut.
type memberCluster struct {
	name   string
	client client.Client
	proxy  *proxy
	// kubeconfig reaches the member through the proxy.
	kubeconfig []byte
}

// startMember starts an API server with this project's CRDs and a proxy in front of it, and registers it with
// the manager c by a Secret in the system namespace holding a kubeconfig that reaches it through the proxy.
func startMember(c client.Client, name string) *memberCluster {
	GinkgoHelper()
	return startMemberIn(c, workerv1.SystemNamespace, name)
}

// startMemberIn is startMember with the member Secret in namespace.
func startMemberIn(c client.Client, namespace, name string) *memberCluster {
	GinkgoHelper()
	bin, _, err := testenv.BinDir("etcd", "kube-apiserver")
	Expect(err).NotTo(HaveOccurred())
	cfg, stop, err := testenv.StartEnvtest(bin, testenv.Path("package", "crds"))
	DeferCleanup(stop)
	Expect(err).NotTo(HaveOccurred())
	m := &memberCluster{name: name}
	m.client, err = client.New(cfg, client.Options{Scheme: scheme.New()})
	Expect(err).NotTo(HaveOccurred())
	u, err := url.Parse(cfg.Host)
	Expect(err).NotTo(HaveOccurred())
	m.proxy = startProxy(u.Host)
	DeferCleanup(m.proxy.cut)
	m.kubeconfig = kubeconfigOf(cfg, m.proxy.addr)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name,
		Labels: map[string]string{gatewayv1.LabelMember: "true"}}, Data: map[string][]byte{gatewayv1.KubeconfigKey: m.kubeconfig}}
	Expect(c.Create(context.Background(), s)).To(Succeed())
	return m
}

// kubeconfigOf is an administrator's kubeconfig of the API server, reaching it at addr.
func kubeconfigOf(cfg *rest.Config, addr string) []byte {
	GinkgoHelper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["member"] = &clientcmdapi.Cluster{Server: "https://" + addr, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["member"] = &clientcmdapi.Context{Cluster: "member", AuthInfo: "admin"}
	kc.CurrentContext = "member"
	data, err := clientcmd.Write(*kc)
	Expect(err).NotTo(HaveOccurred())
	return data
}

// instanceType creates an InstanceType in a member with the EX view (or the CPU view) and phase given.
func (m *memberCluster) instanceType(name string, accelerated bool, once, remaining, capacity int64, phase workerv1.InstanceTypePhase) {
	GinkgoHelper()
	w := builders.MakeInstanceType(name).LocalStorage("100Gi").Platform("linux", "amd64")
	if accelerated {
		w = w.Accelerated(name).Unit("8", "64Gi")
	} else {
		w = w.General(name).Unit("1", "2Gi")
	}
	it := w.Obj()
	ctx := context.Background()
	Expect(m.client.Create(ctx, it)).To(Succeed())
	v := &workerv1.CapacityView{Capacity: *resource.NewQuantity(capacity, resource.DecimalSI),
		OnceMaxRequest: *resource.NewQuantity(once, resource.DecimalSI), Remaining: *resource.NewQuantity(remaining, resource.DecimalSI)}
	it.Status.Phase = phase
	if accelerated {
		it.Status.Accelerator = v
	} else {
		it.Status.CPU = v
	}
	it.Summarize()
	Expect(m.client.Status().Update(ctx, it)).To(Succeed())
}

var _ = Describe("the worker-gateway", Ordered, func() {
	var a, b *memberCluster
	var gw *gateway.Gateway
	var get func(path, accept string) []byte
	var socket string

	BeforeAll(func() {
		a, b = startMember(suite.Client, "member-a"), startMember(suite.Client, "member-b")
		a.instanceType("gpu", true, 2, 3, 4, workerv1.InstanceTypeActive)
		a.instanceType("cpu", false, 16, 40, 64, workerv1.InstanceTypeActive)
		b.instanceType("gpu", true, 4, 8, 8, workerv1.InstanceTypeActive)

		gw = &gateway.Gateway{Client: suite.Client, Namespace: workerv1.SystemNamespace, Scheme: scheme.New(),
			Interval: 200 * time.Millisecond, Timeout: time.Second, Log: logr.Discard()}
		dir, err := os.MkdirTemp("", "gw")
		Expect(err).NotTo(HaveOccurred())
		socket = filepath.Join(dir, "gateway.sock")
		lis, err := net.Listen("unix", socket)
		Expect(err).NotTo(HaveOccurred())
		srv := &http.Server{Handler: &gateway.Server{Source: gw, WatchInterval: 100 * time.Millisecond}, ReadHeaderTimeout: time.Second}
		Expect(gw.MembersRead(nil)).To(MatchError(ContainSubstring("not listed yet")), "not ready before it runs")
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = gw.Run(ctx)
		}()
		go func() { _ = srv.Serve(lis) }()
		DeferCleanup(func() {
			cancel()
			<-done
			_ = srv.Close()
			_ = os.RemoveAll(dir)
		})
		get = func(path, accept string) []byte {
			GinkgoHelper()
			body, code := request(socket, path, accept)
			Expect(code).To(Equal(http.StatusOK), "GET %s: %s", path, body)
			return body
		}
	})

	// aggregatedIn reads an aggregate, failing g (an Eventually's) while it cannot.
	aggregatedIn := func(g Gomega, name string) gatewayv1.AggregatedInstanceType {
		body, code := request(socket, "/apis/gateway.gpustack.ai/v1/aggregatedinstancetypes/"+name, "application/json")
		members, _ := request(socket, "/apis/gateway.gpustack.ai/v1/clustermembers", "application/json")
		g.Expect(code).To(Equal(http.StatusOK), "GET %s: %s; members: %s", name, body, members)
		var it gatewayv1.AggregatedInstanceType
		g.Expect(json.Unmarshal(body, &it)).To(Succeed())
		return it
	}
	aggregated := func(name string) gatewayv1.AggregatedInstanceType {
		GinkgoHelper()
		return aggregatedIn(Default, name)
	}

	// Section 11's rules on two members: member-b's larger onceMaxRequest makes the first tier, member-a the
	// second, each with its own bundle; capacity and remaining are summed; the CPU type is member-a's alone.
	It("aggregates the members' InstanceTypes", func() {
		Eventually(func() error { return gw.MembersRead(nil) }).WithTimeout(30*time.Second).Should(Succeed(), "ready once both members were read")
		Eventually(func(g Gomega) {
			members, _ := request(socket, "/apis/gateway.gpustack.ai/v1/clustermembers", "application/json")
			g.Expect(aggregatedIn(g, "gpu").Status.Clusters).To(Equal([]string{"member-a", "member-b"}), "members: %s", members)
		}).WithTimeout(30 * time.Second).Should(Succeed())
		gpu := aggregated("gpu").Status
		Expect(gpu.Inactive).To(BeEmpty())
		Expect(gpu.Tiers).To(HaveLen(2))
		Expect(gpu.Tiers[0].Winner).To(Equal("member-b"))
		Expect(gpu.Tiers[0].OnceMaxRequest.Accelerator.Value()).To(BeEquivalentTo(4))
		Expect(gpu.Tiers[1].Winner).To(Equal("member-a"))
		Expect(gpu.Summary.Accelerator).To(Equal("4/11 0/0 0/0 0/0"))
		Expect(gpu.Accelerator.Capacity.Value()).To(BeEquivalentTo(12))
		Expect(aggregated("cpu").Status.Summary.CPU).To(Equal("16/40"))

		// What kubectl get asks for: a Table with the resource's columns.
		var table metav1.Table
		Expect(json.Unmarshal(get("/apis/gateway.gpustack.ai/v1/aggregatedinstancetypes", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"), &table)).To(Succeed())
		Expect(table.Kind).To(Equal("Table"))
		var rows [][]any
		for _, r := range table.Rows {
			rows = append(rows, r.Cells)
		}
		Expect(rows).To(Equal([][]any{{"cpu", "1/1", "0/0 0/0 0/0 0/0", "16/40", "1", ""}, {"gpu", "2/2", "4/11 0/0 0/0 0/0", "0/0", "2", ""}}))

		var types gatewayv1.ClusterInstanceTypeList
		Expect(json.Unmarshal(get("/apis/gateway.gpustack.ai/v1/clusterinstancetypes", "application/json"), &types)).To(Succeed())
		var names []string
		for _, t := range types.Items {
			names = append(names, t.Name+"@"+t.Cluster)
		}
		Expect(names).To(Equal([]string{"member-a.cpu@member-a", "member-a.gpu@member-a", "member-b.gpu@member-b"}))

		body, code := request(socket, "/apis/gateway.gpustack.ai/v1/aggregatedinstancetypes/none", "application/json")
		Expect(code).To(Equal(http.StatusNotFound))
		Expect(string(body)).To(ContainSubstring(`aggregatedinstancetypes.gateway.gpustack.ai \"none\" not found`))
	})

	// A member cut off is shown unreachable, with the error; its type stays listed as inactive and counts
	// nowhere. Once it answers again it counts again.
	It("shows an unreachable member and takes it back when it answers", func() {
		b.proxy.cut()
		Eventually(func(g Gomega) {
			body, _ := request(socket, "/apis/gateway.gpustack.ai/v1/clustermembers", "application/json")
			var members gatewayv1.ClusterMemberList
			g.Expect(json.Unmarshal(body, &members)).To(Succeed())
			g.Expect(members.Items).To(HaveLen(2))
			g.Expect(members.Items[1].Status.Reachable).To(BeFalse())
			g.Expect(members.Items[1].Status.Message).To(ContainSubstring("cannot read member member-b"))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		gpu := aggregated("gpu").Status
		Expect(gpu.Inactive).To(Equal([]string{"member-b"}))
		Expect(gpu.Summary.Accelerator).To(Equal("2/3 0/0 0/0 0/0"), "member-a alone counts")

		b.proxy.restore()
		Eventually(func(g Gomega) {
			g.Expect(aggregatedIn(g, "gpu").Status.Inactive).To(BeEmpty())
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(aggregated("gpu").Status.Summary.Accelerator).To(Equal("4/11 0/0 0/0 0/0"))
	})

	// A watch from a list's resourceVersion replays what changed since, as kubectl get -w --resource-version
	// would: the change is read by the gateway before the watch starts, and the watch still hears of it.
	It("replays to a watch the changes since a list", func() {
		var list metav1.List
		Expect(json.Unmarshal(get("/apis/gateway.gpustack.ai/v1/aggregatedinstancetypes", "application/json"), &list)).To(Succeed())
		it := &workerv1.InstanceType{}
		Expect(a.client.Get(context.Background(), client.ObjectKey{Name: "gpu"}, it)).To(Succeed())
		it.Status.Accelerator.Remaining = *resource.NewQuantity(1, resource.DecimalSI)
		Expect(a.client.Status().Update(context.Background(), it)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(aggregatedIn(g, "gpu").Status.Summary.Accelerator).To(Equal("4/9 0/0 0/0 0/0"))
		}).WithTimeout(30 * time.Second).Should(Succeed())

		conn, err := net.Dial("unix", socket)
		Expect(err).NotTo(HaveOccurred())
		defer conn.Close()
		_, err = fmt.Fprintf(conn, "GET /apis/gateway.gpustack.ai/v1/aggregatedinstancetypes?watch=true&resourceVersion=%s HTTP/1.1\r\nHost: gw\r\nAccept: application/json\r\n\r\n",
			list.ResourceVersion)
		Expect(err).NotTo(HaveOccurred())
		events := make(chan string, 16)
		go func() {
			defer GinkgoRecover()
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				return
			}
			dec := json.NewDecoder(resp.Body)
			for {
				var ev struct {
					Type   string                           `json:"type"`
					Object gatewayv1.AggregatedInstanceType `json:"object"`
				}
				if err := dec.Decode(&ev); err != nil {
					return
				}
				events <- ev.Type + " " + ev.Object.Name + " " + ev.Object.Status.Summary.Accelerator
			}
		}()
		Eventually(events).WithTimeout(30 * time.Second).Should(Receive(Equal("MODIFIED gpu 4/9 0/0 0/0 0/0")))
		Consistently(events).WithTimeout(time.Second).ShouldNot(Receive(), "the unchanged cpu type is not sent")
	})

	// Section 11's references: a member's volume types in full, its SSH keys and pull secrets by name only. The
	// gateway drops the keys as it reads them and reads the pull secrets as metadata, so neither the served
	// objects nor what the gateway holds carry them.
	It("serves the names of a member's volume types, SSH keys and pull secrets, never their data", func() {
		ctx := context.Background()
		const key, password = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl alice", "hunter2-never-served"
		Expect(a.client.Create(ctx, &workerv1.InstancePersistentVolumeType{ObjectMeta: metav1.ObjectMeta{Name: "local-path"},
			Spec: workerv1.InstancePersistentVolumeTypeSpec{Provisioner: "rancher.io/local-path", Default: true, BindingMode: "WaitForFirstConsumer", ReclaimPolicy: "Delete"}})).To(Succeed())
		Expect(a.client.Create(ctx, &workerv1.InstanceSSHPublicKey{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "alice"},
			Spec: workerv1.InstanceSSHPublicKeySpec{Data: key}})).To(Succeed())
		Expect(a.client.Create(ctx, &workerv1.InstanceImagePullSecret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "registry"},
			Spec: workerv1.InstanceImagePullSecretSpec{Registry: "registry.example.com", Username: "alice", Password: password}})).To(Succeed())

		names := func(g Gomega, resource string) []string {
			body, code := request(socket, "/apis/gateway.gpustack.ai/v1/"+resource, "application/json")
			g.Expect(code).To(Equal(http.StatusOK), "GET %s: %s", resource, body)
			g.Expect(string(body)).NotTo(Or(ContainSubstring("AAAAC3NzaC1lZDI1NTE5"), ContainSubstring(password)), "GET %s", resource)
			var list struct {
				Items []struct {
					Metadata metav1.ObjectMeta `json:"metadata"`
					Cluster  string            `json:"cluster"`
				} `json:"items"`
			}
			g.Expect(json.Unmarshal(body, &list)).To(Succeed())
			var out []string
			for _, it := range list.Items {
				out = append(out, it.Metadata.Namespace+"/"+it.Metadata.Name+"@"+it.Cluster)
			}
			return out
		}
		Eventually(func(g Gomega) {
			g.Expect(names(g, "clusterinstancepersistentvolumetypes")).To(Equal([]string{"/member-a.local-path@member-a"}))
			g.Expect(names(g, "clusterinstancesshpublickeys")).To(Equal([]string{"default/member-a.alice@member-a"}))
			g.Expect(names(g, "clusterinstanceimagepullsecrets")).To(Equal([]string{"default/member-a.registry@member-a"}))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		var types gatewayv1.ClusterInstancePersistentVolumeTypeList
		Expect(json.Unmarshal(get("/apis/gateway.gpustack.ai/v1/clusterinstancepersistentvolumetypes", "application/json"), &types)).To(Succeed())
		Expect(types.Items[0].Spec.Provisioner).To(Equal("rancher.io/local-path"))

		held, _ := gw.States()
		Expect(fmt.Sprintf("%+v", held)).NotTo(Or(ContainSubstring("AAAAC3NzaC1lZDI1NTE5"), ContainSubstring(password)), "what the gateway holds")
	})

	// A member whose role predates these reads (it lets the gateway list neither SSH keys nor pull secrets nor
	// volume types) stays reachable and counted; its ClusterMember says what was not read, until its role
	// grants them.
	It("keeps a member whose role does not let it read the references, and says so", func() {
		ctx := context.Background()
		role, err := rbac.GatewayMember()
		Expect(err).NotTo(HaveOccurred())
		full := role.DeepCopy()
		role.Rules[0].Resources = []string{"instancetypes", "instances", "instancepersistentvolumes"}
		Expect(a.client.Create(ctx, role)).To(Succeed())
		DeferCleanup(func() { _ = a.client.Delete(context.Background(), role) })
		setMemberSecret(suite.Client, "member-a", a.readerKubeconfig(role.Name))
		DeferCleanup(func() { setMemberSecret(suite.Client, "member-a", a.kubeconfig) })

		member := func(g Gomega) gatewayv1.ClusterMemberStatus {
			var m gatewayv1.ClusterMember
			g.Expect(json.Unmarshal(get("/apis/gateway.gpustack.ai/v1/clustermembers/member-a", "application/json"), &m)).To(Succeed())
			return m.Status
		}
		Eventually(func(g Gomega) {
			st := member(g)
			g.Expect(st.Reachable).To(BeTrue())
			g.Expect(st.Message).To(ContainSubstring("cannot read its instancepersistentvolumetypes, instancesshpublickeys, instanceimagepullsecrets"))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(aggregated("gpu").Status.Inactive).To(BeEmpty(), "its types still count")

		role.Rules = full.Rules
		Expect(a.client.Update(ctx, role)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(member(g).Message).To(BeEmpty())
		}).WithTimeout(30 * time.Second).Should(Succeed())
	})

	// Members come and go with their Secrets.
	It("drops a member whose Secret is deleted", func() {
		Expect(suite.Client.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: "member-b"}})).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(aggregatedIn(g, "gpu").Status.Clusters).To(Equal([]string{"member-a"}))
		}).WithTimeout(30 * time.Second).Should(Succeed())
	})
})

// readerKubeconfig is a kubeconfig of a service account of the member bound to the ClusterRole role, as an
// administrator gives a manager's gateway (docs/multi-cluster.md), reaching it through the proxy.
func (m *memberCluster) readerKubeconfig(role string) []byte {
	GinkgoHelper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gateway-reader"}}
	Expect(m.client.Create(ctx, sa)).To(Succeed())
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "gateway-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: sa.Namespace, Name: sa.Name}}}
	Expect(m.client.Create(ctx, binding)).To(Succeed())
	token := &authenticationv1.TokenRequest{}
	Expect(m.client.SubResource("token").Create(ctx, sa, token)).To(Succeed())
	kc, err := clientcmd.Load(m.kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	for _, auth := range kc.AuthInfos {
		*auth = clientcmdapi.AuthInfo{Token: token.Status.Token}
	}
	data, err := clientcmd.Write(*kc)
	Expect(err).NotTo(HaveOccurred())
	return data
}

// setMemberSecret replaces the kubeconfig of the member Secret name in the system namespace.
func setMemberSecret(c client.Client, name string, kubeconfig []byte) {
	GinkgoHelper()
	s := &corev1.Secret{}
	Expect(c.Get(context.Background(), client.ObjectKey{Namespace: workerv1.SystemNamespace, Name: name}, s)).To(Succeed())
	s.Data[gatewayv1.KubeconfigKey] = kubeconfig
	Expect(c.Update(context.Background(), s)).To(Succeed())
}

// request sends one GET over the unix socket.
func request(socket, path, accept string) ([]byte, int) {
	GinkgoHelper()
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", socket)
	}}, Timeout: 10 * time.Second}
	req, err := http.NewRequest(http.MethodGet, "http://gw"+path, nil)
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Accept", accept)
	resp, err := c.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return body, resp.StatusCode
}

// proxy forwards TCP connections to a target until cut; restore listens again on the same address.
type proxy struct {
	addr, target string
	mu           sync.Mutex
	lis          net.Listener
	conns        []net.Conn
}

func startProxy(target string) *proxy {
	GinkgoHelper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	p := &proxy{addr: lis.Addr().String(), target: target}
	p.serve(lis)
	return p
}

func (p *proxy) serve(lis net.Listener) {
	p.mu.Lock()
	p.lis = lis
	p.mu.Unlock()
	go func() {
		for {
			in, err := lis.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", p.target)
			if err != nil {
				_ = in.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(out, in); _ = out.Close() }()
			go func() { _, _ = io.Copy(in, out); _ = in.Close() }()
		}
	}()
}

// cut stops listening and drops every connection, as a member gone from the network.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.lis.Close()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

// restore listens again at the same address.
func (p *proxy) restore() {
	GinkgoHelper()
	lis, err := net.Listen("tcp", p.addr)
	Expect(err).NotTo(HaveOccurred())
	p.serve(lis)
}
