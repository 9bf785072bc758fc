package devicemanager_test

import (
	"context"
	"os"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/devicemanager"
	"github.com/gpustack/gpustack-operator/devicemanager/deviceplugin"
	"github.com/gpustack/gpustack-operator/devicemanager/deviceplugin/deviceplugintest"
	"github.com/gpustack/gpustack-operator/providers/rdma"
)

// Runs a node's agent that finds an InfiniBand device with its port up beside its card: the node is labelled
// RDMA capable, and the RDMA resources register with the kubelet and hand a Pod the device's verbs device; an
// SR-IOV virtual function's device that appears is offered as a partition; once the port goes down the label
// goes.
var _ = It("labels a node with an RDMA device up as RDMA capable and offers its RDMA resources", func(ctx context.Context) {
	dir, err := os.MkdirTemp("", "agent")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = os.RemoveAll(dir) })
	kubelet, err := deviceplugintest.StartKubelet(dir)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(kubelet.Stop)

	nics := make(chan []rdma.Device, 1)
	nics <- []rdma.Device{{Name: "mlx5_0", LinkLayer: "InfiniBand", Active: true, Verbs: []string{"uverbs0"}}}
	last := []rdma.Device(nil)
	a := &devicemanager.Agent{Node: "node-rdma", Provider: cardsOf{a10g("GPU-rdma-0", 0)}, Client: suite.Client,
		Interval: 100 * time.Millisecond, PluginDir: dir, PluginCheck: 100 * time.Millisecond, Log: logr.Discard(),
		Runtime: deviceplugin.Runtime{LibDir: "/var/lib/gpustack/operator/lib", StateDir: GinkgoT().TempDir()},
		RDMA: func() ([]rdma.Device, error) {
			select {
			case last = <-nics:
			default:
			}
			return last, nil
		}}
	runAgent(a)

	labels := func() map[string]string {
		nf := &nfdv1alpha1.NodeFeature{}
		if err := suite.Client.Get(ctx, client.ObjectKey{Namespace: workerv1.SystemNamespace, Name: "node-rdma-gpustack-device-manager"}, nf); err != nil {
			return nil
		}
		return nf.Spec.Labels
	}
	Eventually(labels).WithTimeout(10 * time.Second).Should(HaveKeyWithValue(workerv1.LabelRDMACapable, "true"))
	Eventually(kubelet.Registered).WithTimeout(10 * time.Second).Should(And(
		HaveKey(deviceplugin.RDMAResource), HaveKey(deviceplugin.RDMASharedResource)))
	Eventually(a.Ready).WithTimeout(10 * time.Second).Should(Succeed())

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "mpi", UID: types.UID("mpi")}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "main", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{deviceplugin.RDMAResource: resource.MustParse("1")}}}}}}
	grants, err := kubelet.Admit(ctx, pod)
	Expect(err).NotTo(HaveOccurred())
	Expect(grants).To(HaveLen(1))
	Expect(grants[0].DeviceIDs).To(Equal([]string{"mlx5_0"}))
	Expect(grants[0].Response.Devices).To(ContainElement(HaveField("HostPath", "/dev/infiniband/uverbs0")))

	Expect(kubelet.Registered()).NotTo(HaveKey(deviceplugin.RDMAPartitionedResource), "no virtual function yet")
	nics <- []rdma.Device{{Name: "mlx5_0", LinkLayer: "InfiniBand", Active: true, Verbs: []string{"uverbs0"}},
		{Name: "mlx5_1", LinkLayer: "InfiniBand", Active: true, Verbs: []string{"uverbs1"}, Virtual: true}}
	Eventually(kubelet.Registered).WithTimeout(10*time.Second).Should(HaveKey(deviceplugin.RDMAPartitionedResource),
		"an SR-IOV virtual function's device is offered as a partition")
	vf := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "vf", UID: types.UID("vf")}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "main", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{deviceplugin.RDMAPartitionedResource: resource.MustParse("1")}}}}}}
	Eventually(func() ([]string, error) {
		grants, err := kubelet.Admit(ctx, vf)
		if err != nil || len(grants) != 1 {
			return nil, err
		}
		return []string{grants[0].DeviceIDs[0], grants[0].Response.Devices[0].HostPath}, nil
	}).WithTimeout(10 * time.Second).Should(Equal([]string{"mlx5_1", "/dev/infiniband/uverbs1"}))

	nics <- []rdma.Device{{Name: "mlx5_0", LinkLayer: "InfiniBand", Verbs: []string{"uverbs0"}}}
	Eventually(labels).WithTimeout(10*time.Second).ShouldNot(HaveKey(workerv1.LabelRDMACapable), "the port went down")
})
