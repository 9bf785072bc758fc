package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/devicemanager"
	"github.com/gpustack/gpustack-operator/devicemanager/deviceplugin"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/providers/simulated"
	"github.com/gpustack/gpustack-operator/test/framework/localcluster"
)

// The nodes are real and the chart's Pods run in containers on them: the worker's two replicas, Kueue,
// nfd-master, nfd-gc, the storage provisioner and an nfd-worker on every node. What the pools are made of is
// what the real components found in each node's simulated hardware: NFD's PCI label from the node's PCI bus,
// the CPU identity the cpu-info reporter read from its /proc/cpuinfo, the capacity the kubelet counted, and the
// cards each NVIDIA agent read through NVML from the node's stand-in driver.
var _ = It("runs the chart on real nodes, whose hardware NFD, the kubelets and the agents read", func() {
	ctx := context.Background()
	cs, err := cluster.Clientset()
	Expect(err).NotTo(HaveOccurred())
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect(nodes.Items).To(HaveLen(len(inv.Nodes)))
	for _, n := range nodes.Items {
		Expect(n.Status.NodeInfo.KubeletVersion).To(Equal("v1.36.3"), "node %s's kubelet", n.Name)
		Expect(n.Status.NodeInfo.ContainerRuntimeVersion).To(HavePrefix("containerd://"), "node %s's runtime", n.Name)
		nvidia := "true"
		if n.Name == "node-cpu" {
			nvidia = ""
		}
		Expect(n.Labels["feature.node.kubernetes.io/pci-10de.present"]).To(Equal(nvidia),
			"node %s: NFD's pci-10de.present label, from its PCI bus", n.Name)
		Expect(cpuIdentity(n, inventoryNode(n.Name))).To(BeEmpty())
	}
	// The agents' device plugins register with each kubelet once they have published the node's cards.
	eventually(time.Minute, func() (bool, string) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, n := range nodes.Items {
			if diff := capacity(n, inventoryNode(n.Name)); diff != "" {
				return false, diff
			}
		}
		return true, ""
	})
	running := map[string]int{}
	for _, ns := range []string{localcluster.ChartNamespace, "node-feature-discovery", "gpustack-storage"} {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.Status.ContainerStatuses[0].ContainerID != "" {
				running[p.Labels["app.kubernetes.io/name"]+" "+p.Labels["app.kubernetes.io/component"]+p.Labels["role"]]++
			}
		}
	}
	Expect(cmp.Diff(map[string]int{"gpustack-operator worker": 2, "kueue ": 1, "nfd master": 1, "nfd gc": 1, "nfd worker": len(inv.Nodes),
		"gpustack-local-path-provisioner ": 1}, running)).To(BeEmpty(), "the chart's Pods running in containers, by name and component: -want, +got")
	ds, err := cs.AppsV1().DaemonSets(workerv1.DeviceManagerNamespace).Get(ctx, devicemanager.DaemonSetName("nvidia"), metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect([]int32{ds.Status.DesiredNumberScheduled, ds.Status.NumberReady}).To(Equal([]int32{3, 3}),
		"the NVIDIA agents run and are ready on the three nodes with cards")
	amd, err := cs.AppsV1().DaemonSets(workerv1.DeviceManagerNamespace).Get(ctx, devicemanager.DaemonSetName("amd"), metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect(amd.Status.DesiredNumberScheduled).To(BeZero(), "AMD agents on a cluster without AMD cards")
	eventually(time.Minute, func() (bool, string) {
		ds, err := cs.AppsV1().DaemonSets(workerv1.DeviceManagerNamespace).Get(ctx, devicemanager.DaemonSetName(devicemanager.RDMAAgent), metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got := []int32{ds.Status.DesiredNumberScheduled, ds.Status.NumberReady}
		return got[0] == 1 && got[1] == 1, fmt.Sprintf("the RDMA agent runs and is ready on node-cpu alone, the node with an RDMA NIC and no card (desired, ready): %v", got)
	})
	ns, err := cs.CoreV1().Namespaces().Get(ctx, workerv1.DeviceManagerNamespace, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect(ns.Labels["pod-security.kubernetes.io/enforce"]).To(Equal("privileged"), "the agents' namespace's Pod Security level")
	eventually(time.Minute, func() (bool, string) {
		for _, n := range inv.Nodes {
			want, _ := simulated.New(n).Detect(ctx)
			d := &workerv1.Devices{}
			err := k.Get(ctx, client.ObjectKey{Name: n.Name}, d)
			if len(want) == 0 {
				if err == nil || !apierrors.IsNotFound(err) {
					return false, fmt.Sprintf("node %s has no card, yet a Devices object (%v)", n.Name, err)
				}
				continue
			}
			if err != nil {
				return false, fmt.Sprintf("node %s's Devices: %v", n.Name, err)
			}
			if diff := cmp.Diff(providers.DevicesSpec(want), d.Spec); diff != "" {
				return false, fmt.Sprintf("node %s's Devices, as its agent detected them: -inventory, +published:\n%s", n.Name, diff)
			}
		}
		return true, ""
	})
})

// capacity says what of a node's capacity differs from its inventory entry: the memory the kubelet read from
// the node's /proc/meminfo, the cards the agent's device plugin registered with it, and the RDMA NICs the agent
// found under the node's PCI bus (a device each, the node's shares, a partition per SR-IOV virtual function, and
// the label while one is up).
func capacity(n corev1.Node, want simulated.Node) string {
	var cards, nics, shares, vfs int64
	for _, a := range want.Accelerators {
		cards += int64(a.Count)
	}
	capable := ""
	for _, nic := range want.RDMA {
		nics, shares, vfs = nics+1, deviceplugin.RDMASharesPerNode, vfs+int64(nic.VirtualFunctions)
		if !nic.Down {
			capable = "true"
		}
	}
	quantity := func(name string) int64 {
		q := n.Status.Capacity[corev1.ResourceName(name)]
		return q.Value()
	}
	wantFields := []string{fmt.Sprint(want.Memory.Value()), fmt.Sprint(cards), fmt.Sprint(nics), fmt.Sprint(shares), fmt.Sprint(vfs), capable}
	got := []string{fmt.Sprint(n.Status.Capacity.Memory().Value()), fmt.Sprint(quantity("nvidia.com/gpu")),
		fmt.Sprint(quantity(deviceplugin.RDMAResource)), fmt.Sprint(quantity(deviceplugin.RDMASharedResource)),
		fmt.Sprint(quantity(deviceplugin.RDMAPartitionedResource)), n.Labels[workerv1.LabelRDMACapable]}
	if diff := cmp.Diff(wantFields, got); diff != "" {
		return fmt.Sprintf("node %s's memory, nvidia.com/gpu, RDMA capacity (whole, shared, partitioned) and rdma.capable label: -want, +got:\n%s", n.Name, strings.TrimSpace(diff))
	}
	return ""
}

// cpuIdentity says what of a node's CPU identity differs from its inventory entry, as the cpu-info reporter
// read it from the node's /proc/cpuinfo and NFD wrote it: the brand string annotation, the vendor label, the
// capacity the kubelet counted, the gKey the worker's profile derives from them, and acceleratable=false on
// the node without cards.
func cpuIdentity(n corev1.Node, want simulated.Node) string {
	gKey := workerv1.GeneralPrefix + pools.GeneralKey(want.CPU.Vendor, want.CPU.Model, want.CPU.Family, want.CPU.ID)
	got := map[string]string{
		"annotation " + workerv1.AnnotationCPUName: n.Annotations[workerv1.AnnotationCPUName],
		"label " + workerv1.LabelCPUVendor:         n.Labels[workerv1.LabelCPUVendor],
		"capacity cpu":                             n.Status.Capacity.Cpu().String(),
		"label " + gKey:                            n.Labels[gKey],
	}
	wantFields := map[string]string{
		"annotation " + workerv1.AnnotationCPUName: want.CPU.Model,
		"label " + workerv1.LabelCPUVendor:         want.CPU.Vendor,
		"capacity cpu":                             fmt.Sprint(want.CPU.Cores),
		"label " + gKey:                            "true",
	}
	if len(want.Accelerators) == 0 {
		got["label "+workerv1.LabelAcceleratable] = n.Labels[workerv1.LabelAcceleratable]
		wantFields["label "+workerv1.LabelAcceleratable] = "false"
	}
	if diff := cmp.Diff(wantFields, got); diff != "" {
		return fmt.Sprintf("node %s's CPU identity: -want, +got:\n%s", n.Name, strings.TrimSpace(diff))
	}
	return ""
}
