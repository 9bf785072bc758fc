package pools

import (
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/vendors"
)

// CountingCapacity returns the Node capacity of the counting keys a node's sliceable cards give, keyed by
// resource name: per vendor, .sliced.units (cards × M), .sliced.memory-percentage (cards × 100),
// .sliced.memory-mib (the cards' memory) and .sliced.cores-percentage (cards × 100, times the slots when the
// vendor lets slices overcommit compute). The scheduler checks a slice's keys against them; the per-card fit
// is the admission check's. Cards in a partitioning mode and unhealthy cards give none.
func CountingCapacity(spec workerv1.DevicesSpec) map[string]int64 {
	out := map[string]int64{}
	for _, g := range spec.Groups {
		v, ok := vendors.Lookup(g.Manufacturer)
		if !ok {
			continue
		}
		for _, a := range g.Accelerators {
			ls := a.Status.LogicalSliced
			if a.Status.Unhealthy || ls == nil || ls.Count == 0 || a.Status.PhysicalSliced != nil {
				continue
			}
			base := v.ResourceName + ".sliced"
			out[base+".units"] += M
			out[base+".memory-percentage"] += 100
			out[base+".memory-mib"] += g.Memory
			cores := int64(100)
			if ls.CoresPercentageOvercommit {
				cores *= int64(ls.Count)
			}
			out[base+".cores-percentage"] += cores
		}
	}
	return out
}
