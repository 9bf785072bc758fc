package builders

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/providers"
)

// NodeWrapper builds a Node for tests.
type NodeWrapper struct{ corev1.Node }

// MakeNode returns a linux/amd64 Node with no capacity.
func MakeNode(name string) *NodeWrapper {
	return &NodeWrapper{corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		corev1.LabelHostname: name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
	}}}}
}

// Label sets a label.
func (w *NodeWrapper) Label(k, v string) *NodeWrapper {
	w.Labels[k] = v
	return w
}

// Annotation sets an annotation.
func (w *NodeWrapper) Annotation(k, v string) *NodeWrapper {
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[k] = v
	return w
}

// Capacity sets a capacity and the same allocatable.
func (w *NodeWrapper) Capacity(name corev1.ResourceName, q string) *NodeWrapper {
	if w.Status.Capacity == nil {
		w.Status.Capacity, w.Status.Allocatable = corev1.ResourceList{}, corev1.ResourceList{}
	}
	w.Status.Capacity[name] = resource.MustParse(q)
	w.Status.Allocatable[name] = resource.MustParse(q)
	return w
}

// Obj returns the Node.
func (w *NodeWrapper) Obj() *corev1.Node { return w.DeepCopy() }

// DevicesWrapper builds a node's Devices inventory for tests, through the same code the device manager publishes
// with.
type DevicesWrapper struct {
	node  string
	cards []providers.Device
}

// MakeDevices returns the inventory of a node without cards.
func MakeDevices(node string) *DevicesWrapper { return &DevicesWrapper{node: node} }

// Cards adds n cards of a product.
func (w *DevicesWrapper) Cards(manufacturer, product string, memoryMiB int64, n int) *DevicesWrapper {
	for i := 0; i < n; i++ {
		idx := int32(len(w.cards))
		w.cards = append(w.cards, providers.Device{Manufacturer: manufacturer, Product: product, MemoryMiB: memoryMiB,
			UUID: fmt.Sprintf("%s-%s-%d", manufacturer, w.node, idx), Index: idx})
	}
	return w
}

// Unhealthy marks the last card added unhealthy.
func (w *DevicesWrapper) Unhealthy() *DevicesWrapper {
	w.cards[len(w.cards)-1].Unhealthy = true
	return w
}

// Obj returns the Devices object.
func (w *DevicesWrapper) Obj() *workerv1.Devices {
	return &workerv1.Devices{ObjectMeta: metav1.ObjectMeta{Name: w.node}, Spec: providers.DevicesSpec(w.cards)}
}
