package dra_test

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/devicemanager/deviceplugin"
	"github.com/gpustack/gpustack-operator/devicemanager/dra"
	"github.com/gpustack/gpustack-operator/pools"
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
// the cards as they change (less those containers hold through the device plugins), and prepares a claim
// allocated one of them as a CDI spec of the card's edits, refusing one whose card containers hold.
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
	cdi := filepath.Join(dir, "cdi")
	Expect(os.MkdirAll(cdi, 0o755)).To(Succeed())
	var ledger atomic.Pointer[map[string]pools.Card]
	ledger.Store(&map[string]pools.Card{})
	// injectCDI plays a node whose NVIDIA cards reach containers through the vendor's own CDI specs.
	var injectCDI atomic.Bool
	drivers := &dra.Drivers{Node: node.Name, Client: clientset, RegistrarDir: registrar, PluginDir: plugins, CDIDir: cdi,
		Ledger: func(context.Context) (map[string]pools.Card, error) { return *ledger.Load(), nil }, Log: logr.Discard(),
		Edits: func(vendor string, cards []providers.Device) *pluginapi.ContainerAllocateResponse {
			return deviceplugin.Runtime{CDI: map[string]bool{"nvidia": injectCDI.Load()}}.WholeCards(vendor, cards)
		}}
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
	drivers.Publish(ctx, []providers.Device{t4("GPU-t4-0", 0), sick, t4("GPU-t4-2", 2)})
	Eventually(func(g Gomega) []string {
		return keys(slicesOf(g, "nvidia.gpustack.ai", node.Name))
	}).WithTimeout(30*time.Second).Should(ConsistOf("card-0", "card-2"), "a card that fell sick is no longer offered")
	Eventually(func(g Gomega) []string {
		return keys(slicesOf(g, "cambricon.gpustack.ai", node.Name))
	}).WithTimeout(30*time.Second).Should(BeEmpty(), "a vendor whose cards are gone publishes none")

	// A claim of two cards: its request's one CDI device names both, as the device plugin names a container's cards.
	claim := allocated(ctx, node.Name, "two-t4", "card-0", "card-2")
	conn, err := grpc.NewClient("unix://"+filepath.Join(plugins, "nvidia.gpustack.ai", "dra.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(conn.Close)
	kubelet := drapb.NewDRAPluginClient(conn)
	prepare := func(c *resourceapi.ResourceClaim) *drapb.NodePrepareResourceResponse {
		GinkgoHelper()
		resp, err := kubelet.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: []*drapb.Claim{{
			Namespace: c.Namespace, Name: c.Name, Uid: string(c.UID)}}})
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Claims).To(HaveKey(string(c.UID)))
		return resp.Claims[string(c.UID)]
	}
	got := prepare(claim)
	Expect(got.Error).To(BeEmpty())
	cdiID := "nvidia.gpustack.ai/claim=" + string(claim.UID) + "-card"
	Expect(got.Devices).To(ConsistOf(
		And(HaveField("PoolName", node.Name), HaveField("DeviceName", "card-0"), HaveField("RequestNames", ConsistOf("card")),
			HaveField("CdiDeviceIds", ConsistOf(cdiID))),
		And(HaveField("PoolName", node.Name), HaveField("DeviceName", "card-2"), HaveField("RequestNames", ConsistOf("card")),
			HaveField("CdiDeviceIds", BeEmpty()))))
	spec := filepath.Join(cdi, "nvidia.gpustack.ai-claim_"+string(claim.UID)+".json")
	Expect(os.ReadFile(spec)).To(MatchJSON(`{"cdiVersion": "0.5.0", "kind": "nvidia.gpustack.ai/claim", "devices": [
		{"name": "` + string(claim.UID) + `-card", "containerEdits": {"env": ["NVIDIA_VISIBLE_DEVICES=GPU-t4-0,GPU-t4-2"]}}]}`))

	// Where the node injects through the vendor's CDI specs, the request's CDI devices are the claim's own and
	// the vendor's of each card, named once, by the request's first device.
	injectCDI.Store(true)
	viaCDI := allocated(ctx, node.Name, "cdi-t4", "card-2", "card-0")
	got = prepare(viaCDI)
	Expect(got.Error).To(BeEmpty())
	Expect(got.Devices).To(ConsistOf(
		And(HaveField("DeviceName", "card-2"), HaveField("CdiDeviceIds", Equal([]string{
			"nvidia.gpustack.ai/claim=" + string(viaCDI.UID) + "-card", "nvidia.com/gpu=GPU-t4-2", "nvidia.com/gpu=GPU-t4-0"}))),
		And(HaveField("DeviceName", "card-0"), HaveField("CdiDeviceIds", BeEmpty()))))
	Expect(os.ReadFile(filepath.Join(cdi, "nvidia.gpustack.ai-claim_"+string(viaCDI.UID)+".json"))).To(MatchJSON(
		`{"cdiVersion": "0.5.0", "kind": "nvidia.gpustack.ai/claim", "devices": [
		{"name": "` + string(viaCDI.UID) + `-card", "containerEdits": {"env": ["NVIDIA_VISIBLE_DEVICES=void"]}}]}`))
	injectCDI.Store(false)

	// Containers took card-0 through the device plugin (the ledger says): it leaves the slices, and a claim
	// allocated it before the slices said so is refused.
	ledger.Store(&map[string]pools.Card{"GPU-t4-0": {ID: "GPU-t4-0", Mode: workerv1.AllocationExclusive},
		"GPU-t4-2": {ID: "GPU-t4-2", Mode: workerv1.AllocationExclusive, ResourceClaims: []string{"default/other"}}})
	drivers.Publish(ctx, []providers.Device{t4("GPU-t4-0", 0), t4("GPU-t4-2", 2)})
	Eventually(func(g Gomega) []string {
		return keys(slicesOf(g, "nvidia.gpustack.ai", node.Name))
	}).WithTimeout(30*time.Second).Should(ConsistOf("card-2"), "a card containers hold is not offered; one a claim holds is")
	late := allocated(ctx, node.Name, "late-t4", "card-0")
	Expect(prepare(late).Error).To(And(ContainSubstring("ResourceClaim default/late-t4"),
		ContainSubstring("card GPU-t4-0 (device card-0) of node node-dra is held by containers granted it through the device plugins")))
	second := allocated(ctx, node.Name, "second-t4", "card-2")
	Expect(prepare(second).Error).To(ContainSubstring("card GPU-t4-2 (device card-2) of node node-dra is allocated to ResourceClaim default/other"))
	gone := allocated(ctx, node.Name, "gone-t4", "card-7")
	Expect(prepare(gone).Error).To(ContainSubstring("device card-7 is not a card of node node-dra"))

	unprepared, err := kubelet.NodeUnprepareResources(ctx, &drapb.NodeUnprepareResourcesRequest{Claims: []*drapb.Claim{{
		Namespace: claim.Namespace, Name: claim.Name, Uid: string(claim.UID)}}})
	Expect(err).NotTo(HaveOccurred())
	Expect(unprepared.Claims[string(claim.UID)].GetError()).To(BeEmpty())
	Expect(spec).NotTo(BeAnExistingFile())
})

// allocated makes a claim of whole cards and allocates its request the devices of the node's nvidia pool,
// reserved for a Pod, as the scheduler would.
func allocated(ctx context.Context, node, name string, devices ...string) *resourceapi.ResourceClaim {
	GinkgoHelper()
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "card", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpustack-nvidia", Count: int64(len(devices))}}}}}}
	Expect(suite.Client.Create(ctx, claim)).To(Succeed())
	DeferCleanup(func() { _ = suite.Client.Delete(context.Background(), claim) })
	claim.Status.Allocation = &resourceapi.AllocationResult{}
	for _, d := range devices {
		claim.Status.Allocation.Devices.Results = append(claim.Status.Allocation.Devices.Results,
			resourceapi.DeviceRequestAllocationResult{Request: "card", Driver: "nvidia.gpustack.ai", Pool: node, Device: d})
	}
	claim.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "p-" + name, UID: "pod-uid-" + types.UID(name)}}
	Expect(suite.Client.Status().Update(ctx, claim)).To(Succeed())
	return claim
}

func keys(m map[string]resourceapi.Device) []string {
	out := []string{}
	for k := range m {
		out = append(out, k)
	}
	return out
}
