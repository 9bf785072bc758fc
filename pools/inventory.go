package pools

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// CheckInventory returns why a node's labels claim cards that its Devices inventory does not list, nil when
// they agree: every accelerator group the labels count must be the inventory's, card for card. Labels reach
// a node from any NodeFeature through NFD, so a count no inventory backs (a stale label, a typo, a crafted
// 2000000000) is trusted with neither quota nor memory; the node is left out of the pools until they agree.
func (n Node) CheckInventory(d *workerv1.Devices) error {
	for _, g := range n.Groups {
		key := workerv1.AcceleratablePrefix + g.Key + ".count"
		if d == nil {
			return errors.Errorf("node %s: label %s=%d claims cards, and the node has no Devices inventory", n.Name, key, g.Count)
		}
		var cards int64
		for _, dg := range d.Spec.Groups {
			if dg.Manufacturer == g.Manufacturer && IsGroup(dg, g.Key) {
				cards += int64(len(dg.Accelerators))
			}
		}
		if cards != g.Count {
			return errors.Errorf("node %s: label %s=%d, and its Devices inventory lists %d such cards", n.Name, key, g.Count, cards)
		}
	}
	return nil
}
