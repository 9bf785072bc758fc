package providers

import (
	"sort"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/vendors"
)

// NodeLabels returns the NodeFeature labels for the node's cards: per manufacturer its presence and driver and
// runtime versions, per product group its key, count, memory, cores, family, product and compute capability.
// Values left undetected are left out.
func NodeLabels(devices []Device) map[string]string {
	if len(devices) == 0 {
		return map[string]string{}
	}
	l := map[string]string{workerv1.LabelAcceleratable: "true"}
	for _, g := range group(devices) {
		d := g.first
		mfr := workerv1.AcceleratablePrefix + d.Manufacturer
		l[mfr] = "true"
		setIf(l, mfr+".driver-version", d.DriverVersion)
		setIf(l, mfr+".runtime-version", d.RuntimeVersion)
		key := workerv1.AcceleratablePrefix + g.key
		l[key] = "true"
		l[key+".count"] = pools.FormatCount(int64(len(g.cards)))
		setIf(l, key+".memory", pools.MemoryLabel(d.MemoryMiB))
		if d.Cores > 0 {
			l[key+".cores"] = pools.FormatCount(d.Cores)
		}
		setIf(l, key+".family", d.Family)
		setIf(l, key+".product", pools.ProductLabel(d.Product))
		setIf(l, key+".comcap", d.ComputeCapability)
	}
	return l
}

// DevicesSpec returns the Devices spec for the node's cards, one group per product.
func DevicesSpec(devices []Device) workerv1.DevicesSpec {
	var spec workerv1.DevicesSpec
	for _, g := range group(devices) {
		d := g.first
		dg := workerv1.DeviceGroup{
			ID: pools.GroupID(d.Manufacturer, g.key), Manufacturer: d.Manufacturer, Name: d.Product,
			Memory: d.MemoryMiB, Cores: d.Cores, DriverVersion: d.DriverVersion, RuntimeVersion: d.RuntimeVersion,
			ComputeCapability: d.ComputeCapability, Family: d.Family,
		}
		v, _ := vendors.Lookup(d.Manufacturer)
		for _, c := range g.cards {
			a := workerv1.Accelerator{ID: c.UUID, Index: c.Index, Status: workerv1.AcceleratorStatus{Unhealthy: c.Unhealthy}}
			switch {
			case len(c.Partitions) > 0:
				// A card in a partitioning mode offers partitions only.
				ps := &workerv1.PhysicalSlicedCapability{}
				for _, p := range c.Partitions {
					ps.Count = max(ps.Count, p.Count)
					ps.Profiles = append(ps.Profiles, workerv1.PartitionProfile{Name: p.Name, MemoryMiB: p.MemoryMiB,
						ComputeSlices: p.ComputeSlices, MemorySlices: p.MemorySlices, Count: p.Count, Placements: p.Placements})
				}
				a.Status.PhysicalSliced = ps
			case v.SlicesPerCard > 0:
				a.Status.LogicalSliced = &workerv1.LogicalSlicedCapability{Count: v.SlicesPerCard, CoresPercentageOvercommit: v.CoresOvercommit}
			}
			dg.Accelerators = append(dg.Accelerators, a)
		}
		spec.Groups = append(spec.Groups, dg)
	}
	return spec
}

type productGroup struct {
	key   string
	first Device
	cards []Device
}

// group sorts cards into groups by aKey (GroupKey), each group's cards by index.
func group(devices []Device) []productGroup {
	byKey := map[string]*productGroup{}
	for _, d := range devices {
		key := GroupKey(d)
		g := byKey[key]
		if g == nil {
			g = &productGroup{key: key, first: d}
			byKey[key] = g
		}
		g.cards = append(g.cards, d)
	}
	var out []productGroup
	for _, g := range byKey {
		sort.Slice(g.cards, func(i, j int) bool { return g.cards[i].Index < g.cards[j].Index })
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

func setIf(l map[string]string, k, v string) {
	if v != "" {
		l[k] = v
	}
}
