package pools

import (
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// PartitionUnits returns what one partition of the profile costs on the cards of accelerator group aKey, in
// units: the profile's memory as a share of the card's, times M. A 3g.40gb partition of an 80 GiB card
// therefore costs what a 40 GiB soft slice does. The profile and the card's memory are read from the first
// node's inventory that offers the profile; ok is false when no inventory does.
func PartitionUnits(inventories []workerv1.Devices, aKey, profile string) (units int64, ok bool) {
	for _, d := range inventories {
		for _, g := range d.Spec.Groups {
			if g.Memory <= 0 || !IsGroup(g, aKey) {
				continue
			}
			for _, a := range g.Accelerators {
				ps := a.Status.PhysicalSliced
				if ps == nil {
					continue
				}
				for _, p := range ps.Profiles {
					if p.Name == profile && p.MemoryMiB > 0 {
						return min(M, p.MemoryMiB*M/g.Memory), true
					}
				}
			}
		}
	}
	return 0, false
}
