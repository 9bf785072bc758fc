package builders

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// ClusterQueueWrapper builds a Kueue ClusterQueue.
type ClusterQueueWrapper struct{ kueue.ClusterQueue }

// MakeClusterQueue starts a ClusterQueue open to every namespace, without resource groups.
func MakeClusterQueue(name string) *ClusterQueueWrapper {
	return &ClusterQueueWrapper{kueue.ClusterQueue{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       kueue.ClusterQueueSpec{NamespaceSelector: &metav1.LabelSelector{}},
	}}
}

// Flavor adds a flavor with a cpu quota of 100 to the queue's one resource group, which covers cpu.
func (w *ClusterQueueWrapper) Flavor(name string) *ClusterQueueWrapper {
	if len(w.Spec.ResourceGroups) == 0 {
		w.Spec.ResourceGroups = []kueue.ResourceGroup{{CoveredResources: []corev1.ResourceName{corev1.ResourceCPU}}}
	}
	w.Spec.ResourceGroups[0].Flavors = append(w.Spec.ResourceGroups[0].Flavors, kueue.FlavorQuotas{
		Name:      kueue.ResourceFlavorReference(name),
		Resources: []kueue.ResourceQuota{{Name: corev1.ResourceCPU, NominalQuota: resource.MustParse("100")}},
	})
	return w
}

// StopPolicy sets the queue's stop policy.
func (w *ClusterQueueWrapper) StopPolicy(p kueue.StopPolicy) *ClusterQueueWrapper {
	w.Spec.StopPolicy = ptr.To(p)
	return w
}

// Obj returns the ClusterQueue.
func (w *ClusterQueueWrapper) Obj() *kueue.ClusterQueue { return w.DeepCopy() }

// ResourceFlavorWrapper builds a Kueue ResourceFlavor.
type ResourceFlavorWrapper struct{ kueue.ResourceFlavor }

// MakeResourceFlavor starts a ResourceFlavor without node labels.
func MakeResourceFlavor(name string) *ResourceFlavorWrapper {
	return &ResourceFlavorWrapper{kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: name}}}
}

// NodeLabel adds a node label the flavor's nodes carry.
func (w *ResourceFlavorWrapper) NodeLabel(k, v string) *ResourceFlavorWrapper {
	if w.Spec.NodeLabels == nil {
		w.Spec.NodeLabels = map[string]string{}
	}
	w.Spec.NodeLabels[k] = v
	return w
}

// Obj returns the ResourceFlavor.
func (w *ResourceFlavorWrapper) Obj() *kueue.ResourceFlavor { return w.DeepCopy() }
