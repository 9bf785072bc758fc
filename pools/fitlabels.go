package pools

import (
	"strconv"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// The fit labels tell, per accelerator group of a node, what its freest card can still take, so people (and
// node affinities) can see where a slice or shares would fit without reading the ledger.
const (
	// LabelSlicedMaxFreeUnits + aKey is the largest free units (credits) on one card that can still take a
	// slice and has a free slot; 0 when none can.
	LabelSlicedMaxFreeUnits = "sliced-max-free-units.fit.gpustack.ai/"
	// LabelSharedFreeCards + aKey is the number of cards that can still give a share.
	LabelSharedFreeCards = "shared-free-cards.fit.gpustack.ai/"
)

// FitLabels returns a node's fit labels from its ledger: per accelerator group, the slice label while it has
// sliceable cards and the share label while it has cards outside a partitioning mode. A group of
// partitioned cards only gets neither.
func FitLabels(d *workerv1.Devices) map[string]string {
	out := map[string]string{}
	cards := LedgerCards(d)
	for _, g := range d.Spec.Groups {
		key := AcceleratorKey(g.Manufacturer, g.Name)
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
			out[LabelSlicedMaxFreeUnits+key] = strconv.FormatInt(maxFree, 10)
		}
		if shareable {
			out[LabelSharedFreeCards+key] = strconv.FormatInt(freeCards, 10)
		}
	}
	return out
}
