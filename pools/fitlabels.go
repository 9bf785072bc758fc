package pools

import (
	"strconv"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// FitLabels returns a node's fit labels from its ledger: per accelerator group, the slice label while it has
// sliceable cards and the share label while it has cards outside a partitioning mode. A group of
// partitioned cards only gets neither.
func FitLabels(d *workerv1.Devices) map[string]string {
	out := map[string]string{}
	cards := LedgerCards(d)
	for _, g := range d.Spec.Groups {
		key := GroupKey(g)
		var sliceable, shareable bool
		var maxFree, freeCards int64
		for _, a := range g.Accelerators {
			c := cards[a.ID]
			if c.Partitioned() {
				continue
			}
			shareable = true
			free := !c.Unhealthy && (c.Mode == workerv1.AllocationNone || c.Mode == workerv1.AllocationShared)
			if free && c.Remaining >= share {
				freeCards++
			}
			if c.Slots == 0 {
				continue
			}
			sliceable = true
			if !c.Unhealthy && (c.Mode == workerv1.AllocationNone || c.Mode == workerv1.AllocationSliced) && c.AllocatedSlices < c.Slots {
				maxFree = max(maxFree, c.Remaining)
			}
		}
		if sliceable {
			out[workerv1.LabelSlicedMaxFreeUnits+key] = strconv.FormatInt(maxFree, 10)
		}
		if shareable {
			out[workerv1.LabelSharedFreeCards+key] = strconv.FormatInt(freeCards, 10)
		}
	}
	return out
}
