package localcluster

import (
	"github.com/gpustack/gpustack-operator/deviceagent/deviceplugin"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpustack/gpustack-operator/internal/inventory"
	"github.com/gpustack/gpustack-operator/internal/vendors"
)

// Labels and annotations the local cluster puts on its nodes in place of nfd-worker, which cannot read
// simulated hardware.
const (
	// LabelCPUVendor is NFD's cpuid vendor label.
	LabelCPUVendor = "feature.node.kubernetes.io/cpu-model.vendor_id"
	// LabelCPUFamily is NFD's CPU family label.
	LabelCPUFamily = "feature.node.kubernetes.io/cpu-model.family"
	// LabelCPUID is NFD's CPU model ID label.
	LabelCPUID = "feature.node.kubernetes.io/cpu-model.id"
	// AnnotationCPUName is the CPU model name that the gpustack-cpu-info NodeFeatureRule publishes.
	AnnotationCPUName = "feature.gpustack.ai/cpu-name"
	// AnnotationKWOKNode marks a node KWOK acts as the kubelet of.
	AnnotationKWOKNode = "kwok.x-k8s.io/node"
)

// NodeFor returns the KWOK Node of an inventory entry: Ready once KWOK picks it up, with the entry's CPU,
// memory, storage and whole accelerators as capacity, and the CPU identity NFD would have reported.
func NodeFor(n inventory.Node) *corev1.Node {
	labels := map[string]string{
		corev1.LabelHostname:   n.Name,
		corev1.LabelOSStable:   n.OS,
		corev1.LabelArchStable: n.Arch,
		"type":                 "kwok",
	}
	if n.CPU.Vendor != "" {
		labels[LabelCPUVendor] = n.CPU.Vendor
	}
	if n.CPU.Family != "" {
		labels[LabelCPUFamily] = n.CPU.Family
	}
	if n.CPU.ID != "" {
		labels[LabelCPUID] = n.CPU.ID
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(n.CPU.Cores, resource.DecimalSI),
		corev1.ResourceMemory:           n.Memory,
		corev1.ResourceEphemeralStorage: n.Storage,
		corev1.ResourcePods:             resource.MustParse("110"),
	}
	for _, a := range n.Accelerators {
		v, ok := vendors.Lookup(a.Vendor)
		if !ok {
			continue // Validate rejects unknown vendors; nothing to add for one here.
		}
		labels["feature.node.kubernetes.io/pci-"+v.PCIVendorID+".present"] = "true"
		// What the device agent's plugin would register with a real kubelet.
		for _, r := range deviceplugin.Resources(v) {
			name := corev1.ResourceName(r.Name)
			total := capacity[name]
			total.Add(*resource.NewQuantity(int64(a.Count)*int64(r.PerCard()), resource.DecimalSI))
			capacity[name] = total
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
		annotations[AnnotationCPUName] = n.CPU.Model
	}
	annotations["feature.gpustack.ai/cpu-logical-cores"] = strconv.FormatInt(n.CPU.Cores, 10)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: labels, Annotations: annotations},
		Status:     corev1.NodeStatus{Capacity: capacity, Allocatable: capacity.DeepCopy()},
	}
}
