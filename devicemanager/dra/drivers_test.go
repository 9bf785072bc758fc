package dra_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/gpustack/gpustack-operator/devicemanager/dra"
	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

var suite testenv.EnvtestSuite

func TestDRA(t *testing.T) { testenv.RunSuite(t, "DRA drivers suite", &suite) }

// register does what the kubelet does when a driver's registration socket shows up: asks the driver what it
// is, and tells it that it is registered.
func register(registrarDir, driver string) *registerapi.PluginInfo {
	GinkgoHelper()
	conn, err := grpc.NewClient("unix://"+filepath.Join(registrarDir, driver+"-reg.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = conn.Close() }()
	c := registerapi.NewRegistrationClient(conn)
	info, err := c.GetInfo(context.Background(), &registerapi.InfoRequest{})
	Expect(err).NotTo(HaveOccurred())
	_, err = c.NotifyRegistrationStatus(context.Background(), &registerapi.RegistrationStatus{PluginRegistered: true})
	Expect(err).NotTo(HaveOccurred())
	return info
}

// slicesOf returns the devices of the driver's ResourceSlices of the node, by device name.
func slicesOf(g Gomega, driver, node string) map[string]resourceapi.Device {
	var list resourceapi.ResourceSliceList
	g.Expect(suite.Client.List(context.Background(), &list)).To(Succeed())
	out := map[string]resourceapi.Device{}
	for _, s := range list.Items {
		if s.Spec.Driver == driver && s.Spec.NodeName != nil && *s.Spec.NodeName == node {
			g.Expect(s.Spec.Pool.Name).To(Equal(node))
			for _, d := range s.Spec.Devices {
				out[d.Name] = d
			}
		}
	}
	return out
}

// A node's agent runs one DRA driver per vendor with cards: each registers with the kubelet (the spec plays the
// kubelet's part of registration), publishes its vendor's healthy cards as the node's ResourceSlices, follows
// the cards as they change, and refuses to prepare a claim, saying what to ask for instead.
var _ = It("publishes each vendor's cards as ResourceSlices through a driver registered with the kubelet", func(ctx context.Context) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-dra"}}
	suite.Create(node)
	// Short directories: a unix socket's path has a limit of 108 bytes.
	dir, err := os.MkdirTemp("", "dra")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, dir)
	registrar, plugins := filepath.Join(dir, "registry"), filepath.Join(dir, "plugins")
	Expect(os.MkdirAll(registrar, 0o755)).To(Succeed())
	clientset, err := kubernetes.NewForConfig(suite.Config)
	Expect(err).NotTo(HaveOccurred())
	drivers := &dra.Drivers{Node: node.Name, Client: clientset, RegistrarDir: registrar, PluginDir: plugins, Log: logr.Discard()}
	DeferCleanup(drivers.Stop)

	mlu := providers.Device{Manufacturer: "cambricon", Product: "MLU370-X8", UUID: "MLU-0", MemoryMiB: 49152}
	drivers.Publish(ctx, []providers.Device{t4("GPU-t4-0", 0), t4("GPU-t4-1", 1), mlu})
	Expect(drivers.Ready()).To(MatchError(ContainSubstring("is not registered with the kubelet of node node-dra")))
	for _, driver := range []string{"nvidia.gpustack.ai", "cambricon.gpustack.ai"} {
		info := register(registrar, driver)
		Expect(info.Type).To(Equal(registerapi.DRAPlugin))
		Expect(info.Name).To(Equal(driver))
		Expect(info.Endpoint).To(Equal(filepath.Join(plugins, driver, "dra.sock")))
	}
	Expect(drivers.Ready()).To(Succeed())

	Eventually(func(g Gomega) []string {
		return keys(slicesOf(g, "nvidia.gpustack.ai", node.Name))
	}).WithTimeout(30 * time.Second).Should(ConsistOf("card-0", "card-1"))
	Eventually(func(g Gomega) []string {
		return keys(slicesOf(g, "cambricon.gpustack.ai", node.Name))
	}).WithTimeout(30 * time.Second).Should(ConsistOf("card-0"))
	Expect(slicesOf(Default, "nvidia.gpustack.ai", node.Name)["card-1"].Attributes).To(
		HaveKeyWithValue(resourceapi.QualifiedName("uuid"), HaveField("StringValue", HaveValue(Equal("GPU-t4-1")))))

	sick := t4("GPU-t4-1", 1)
	sick.Unhealthy = true
	drivers.Publish(ctx, []providers.Device{t4("GPU-t4-0", 0), sick})
	Eventually(func(g Gomega) []string {
		return keys(slicesOf(g, "nvidia.gpustack.ai", node.Name))
	}).WithTimeout(30*time.Second).Should(ConsistOf("card-0"), "a card that fell sick is no longer offered")
	Eventually(func(g Gomega) []string {
		return keys(slicesOf(g, "cambricon.gpustack.ai", node.Name))
	}).WithTimeout(30*time.Second).Should(BeEmpty(), "a vendor whose cards are gone publishes none")

	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "one-t4"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "card", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpustack-nvidia"}}}}}}
	Expect(suite.Client.Create(ctx, claim)).To(Succeed())
	DeferCleanup(func() { _ = suite.Client.Delete(context.Background(), claim) })
	claim.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
		Request: "card", Driver: "nvidia.gpustack.ai", Pool: node.Name, Device: "card-0"}}}}
	claim.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "p", UID: "pod-uid"}}
	Expect(suite.Client.Status().Update(ctx, claim)).To(Succeed())
	conn, err := grpc.NewClient("unix://"+filepath.Join(plugins, "nvidia.gpustack.ai", "dra.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(conn.Close)
	resp, err := drapb.NewDRAPluginClient(conn).NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: []*drapb.Claim{{
		Namespace: claim.Namespace, Name: claim.Name, Uid: string(claim.UID)}}})
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.Claims).To(HaveKey(string(claim.UID)))
	Expect(resp.Claims[string(claim.UID)].Error).To(And(ContainSubstring("ResourceClaim default/one-t4"),
		ContainSubstring("ask for them through the device plugin's resource nvidia.com/gpu")))
})

func keys(m map[string]resourceapi.Device) []string {
	out := []string{}
	for k := range m {
		out = append(out, k)
	}
	return out
}
