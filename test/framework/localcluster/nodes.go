package localcluster

import (
	"context"
	"strconv"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/devicemanager/deviceplugin"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpustack/gpustack-operator/providers/simulated"
	"github.com/gpustack/gpustack-operator/vendors"
)

// AnnotationKWOKNode marks a node KWOK acts as the kubelet of. The CPU identity labels the local cluster puts on
// its nodes in place of nfd-worker (which cannot read simulated hardware) are the domain core's keys.
const AnnotationKWOKNode = "kwok.x-k8s.io/node"

// kwokNode returns the KWOK Node of an inventory entry: Ready once KWOK picks it up, with the entry's CPU,
// memory, storage and whole accelerators as capacity, and the CPU identity NFD would have reported.
func kwokNode(n simulated.Node) *corev1.Node {
	labels := map[string]string{
		corev1.LabelHostname:   n.Name,
		corev1.LabelOSStable:   n.OS,
		corev1.LabelArchStable: n.Arch,
		"type":                 "kwok",
	}
	if n.CPU.Vendor != "" {
		labels[workerv1.LabelCPUVendor] = n.CPU.Vendor
	}
	if n.CPU.Family != "" {
		labels[workerv1.LabelCPUFamily] = n.CPU.Family
	}
	if n.CPU.ID != "" {
		labels[workerv1.LabelCPUModelID] = n.CPU.ID
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(n.CPU.Cores, resource.DecimalSI),
		corev1.ResourceMemory:           n.Memory,
		corev1.ResourceEphemeralStorage: n.Storage,
		corev1.ResourcePods:             resource.MustParse("110"),
	}
	for _, a := range n.Accelerators {
		if v, ok := vendors.Lookup(a.Vendor); ok {
			labels["feature.node.kubernetes.io/pci-"+v.PCILabel()+".present"] = "true"
		}
	}
	// What the device manager's plugins would register with a real kubelet, from the cards it would detect.
	cards, _ := simulated.New(n).Detect(context.Background())
	for _, v := range vendors.All() {
		for _, r := range deviceplugin.Resources(v) {
			if tokens := len(deviceplugin.Tokens(r, cards)); tokens > 0 {
				capacity[corev1.ResourceName(r.Name)] = *resource.NewQuantity(int64(tokens), resource.DecimalSI)
			}
		}
	}
	for k, v := range n.Labels {
		labels[k] = v
	}
	annotations := map[string]string{
		AnnotationKWOKNode:             "fake",
		"node.alpha.kubernetes.io/ttl": "0",
	}
	if n.CPU.Model != "" {
		annotations[workerv1.AnnotationCPUName] = n.CPU.Model
	}
	annotations[workerv1.AnnotationCPULogicalCores] = strconv.FormatInt(n.CPU.Cores, 10)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: labels, Annotations: annotations},
		Status:     corev1.NodeStatus{Capacity: capacity, Allocatable: capacity.DeepCopy()},
	}
}
