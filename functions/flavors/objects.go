package flavors

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/pools"
)

// ResourceFlavor returns the Kueue ResourceFlavor of a flavor: its labels select it, its note.gpustack.ai
// annotations describe its hardware, its nodeLabels pin the managed nodes it groups.
func ResourceFlavor(f pools.Flavor) *kueuev1beta2.ResourceFlavor {
	general := workerv1.GeneralPrefix + f.GKey
	labels := map[string]string{
		workerv1.LabelOS: f.OS, workerv1.LabelArch: f.Arch,
		general:                    "true",
		workerv1.LabelResourceType: workerv1.ResourceTypeNodes,
	}
	nodeLabels := map[string]string{
		workerv1.LabelOS: f.OS, workerv1.LabelArch: f.Arch, workerv1.LabelManaged: "true", general: "true",
	}
	if f.Accelerated() {
		key := workerv1.AcceleratablePrefix + f.AKey
		labels[workerv1.LabelAcceleratable] = "true"
		labels[key] = "true"
		labels[key+".count"] = pools.FormatCount(f.Count)
		labels[key+".capacity"] = pools.FormatCount(f.Capacity())
		nodeLabels[key] = "true"
		nodeLabels[key+".count"] = pools.FormatCount(f.Count)
	} else {
		labels[workerv1.LabelAcceleratable] = "false"
		labels[general+".count"] = pools.FormatCount(f.Count)
		labels[general+".capacity"] = pools.FormatCount(f.Capacity())
		nodeLabels[general+".count"] = pools.FormatCount(f.Count)
		if f.CPUOnly {
			nodeLabels[workerv1.LabelCPUOnly] = "true"
		}
	}
	return &kueuev1beta2.ResourceFlavor{
		TypeMeta:   metav1.TypeMeta{APIVersion: kueuev1beta2.SchemeGroupVersion.String(), Kind: "ResourceFlavor"},
		ObjectMeta: metav1.ObjectMeta{Name: f.Name, Labels: labels, Annotations: pools.Notes(f)},
		Spec:       kueuev1beta2.ResourceFlavorSpec{NodeLabels: nodeLabels},
	}
}

// InstanceTypeFlavor returns the catalog object of an entry. It carries no labels: its identity is its spec.
func InstanceTypeFlavor(e pools.CatalogEntry) *workerv1.InstanceTypeFlavor {
	spec := workerv1.InstanceTypeFlavorSpec{
		Acceleratable: e.Acceleratable(), AcceleratorGroup: e.AcceleratorGroup, GeneralGroup: e.GeneralGroup,
		Manufacturer: e.Manufacturer, Product: e.Product, Family: e.Family, Cores: e.Cores,
	}
	if e.Acceleratable() {
		spec.Memory = quantity(e.Memory)
		spec.Sliceable = ptr.To(e.SlicesPerCard > 0)
		spec.Feature = pools.Feature(e.SlicesPerCard, e.CoresOvercommit)
	}
	return &workerv1.InstanceTypeFlavor{
		TypeMeta:   metav1.TypeMeta{APIVersion: workerv1.GroupVersion.String(), Kind: "InstanceTypeFlavor"},
		ObjectMeta: metav1.ObjectMeta{Name: e.Name},
		Spec:       spec,
	}
}

// DerivedInstanceType returns the InstanceType the operator derives for a pool of a catalog entry, sized by
// the preset of its product. It is created once and never updated.
func DerivedInstanceType(p pools.Pool, e pools.CatalogEntry) *workerv1.InstanceType {
	name := p.Name()
	labels := map[string]string{
		workerv1.LabelOS: p.OS, workerv1.LabelArch: p.Arch,
		workerv1.LabelAcceleratable: "false", workerv1.LabelDerivedFromNode: "true",
		workerv1.LabelQueueEntrance: pools.EntranceName(name),
	}
	if e.Acceleratable() {
		labels[workerv1.LabelAcceleratable] = "true"
		labels[workerv1.AcceleratablePrefix+e.AcceleratorGroup] = "true"
	}
	if p.GeneralGroup != pools.Generic {
		labels[workerv1.GeneralPrefix+p.GeneralGroup] = "true"
	}
	unit := pools.PresetUnit(e.Acceleratable(), e.Memory)
	spec := workerv1.InstanceTypeSpec{
		Acceleratable: e.Acceleratable(), AcceleratorGroup: e.AcceleratorGroup, GeneralGroup: p.GeneralGroup,
		OS: p.OS, Arch: p.Arch,
		InstanceTypeDescriptors: workerv1.InstanceTypeDescriptors{
			Manufacturer: e.Manufacturer, Product: e.Product, Family: e.Family, Cores: e.Cores,
		},
		UnitResources: workerv1.UnitResources{CPU: resource.MustParse(unit.CPU), RAM: resource.MustParse(unit.RAM)},
		LocalStorage:  resource.MustParse(unit.LocalStorage),
	}
	if e.Acceleratable() {
		spec.Memory = quantity(e.Memory)
		spec.Feature = pools.Feature(e.SlicesPerCard, e.CoresOvercommit)
	}
	return &workerv1.InstanceType{
		TypeMeta: metav1.TypeMeta{APIVersion: workerv1.GroupVersion.String(), Kind: "InstanceType"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels,
			Annotations: map[string]string{workerv1.AnnotationComposePolicy: workerv1.ComposePolicyCreateOnly}},
		Spec: spec,
	}
}

func quantity(s string) *resource.Quantity {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return nil
	}
	return &q
}
