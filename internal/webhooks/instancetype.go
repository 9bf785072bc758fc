package webhooks

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/vendors"
)

// InstanceTypeDefaulter enriches a new InstanceType: it stamps its entrance label and, for an authored
// accelerated type that names only its acceleratorGroup, copies the descriptors (manufacturer, product,
// family, memory, cores, slicing) from the catalog flavor of that group.
type InstanceTypeDefaulter struct {
	// Reader reads the catalog, from the cache.
	Reader client.Reader
}

// Default enriches the type; a group the catalog does not know leaves it as it is (its queue then has no
// flavors until such cards join).
func (d *InstanceTypeDefaulter) Default(ctx context.Context, it *workerv1.InstanceType) error {
	if it.Labels == nil {
		it.Labels = map[string]string{}
	}
	it.Labels[workerv1.LabelQueueEntrance] = pools.EntranceName(it.Name)
	if !it.Spec.Acceleratable || it.Spec.Manufacturer != "" {
		return nil
	}
	f := &workerv1.InstanceTypeFlavor{}
	err := d.Reader.Get(ctx, client.ObjectKey{Name: pools.CatalogName(it.Spec.GeneralGroup, it.Spec.AcceleratorGroup)}, f)
	if apierrors.IsNotFound(err) && it.Spec.GeneralGroup != "" && it.Spec.GeneralGroup != pools.Generic {
		err = d.Reader.Get(ctx, client.ObjectKey{Name: pools.CatalogName("", it.Spec.AcceleratorGroup)}, f)
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	it.Spec.Manufacturer, it.Spec.Product, it.Spec.Family, it.Spec.Cores = f.Spec.Manufacturer, f.Spec.Product, f.Spec.Family, f.Spec.Cores
	if f.Spec.Memory != nil {
		m := f.Spec.Memory.DeepCopy()
		it.Spec.Memory = &m
	}
	feature := &workerv1.InstanceTypeFeature{PhysicalSliced: &workerv1.PhysicalSlicedFeature{}}
	if v, ok := vendors.Lookup(f.Spec.Manufacturer); ok && f.Spec.Sliceable != nil && *f.Spec.Sliceable {
		feature.LogicalSliced = &workerv1.LogicalSlicedFeature{MaxSize: v.SlicesPerCard,
			CoresPercentageOvercommit: v.CoresOvercommit, MemoryPercentageStep: 1}
	}
	it.Spec.Feature = feature
	return nil
}
