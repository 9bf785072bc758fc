// Package dra publishes a node's cards to Dynamic Resource Allocation (resource.k8s.io): one DRA driver per
// vendor (nvidia.gpustack.ai), registered with the node's kubelet, whose ResourceSlices list each healthy card
// as one device with the attributes the node's labels carry and its memory, cores and soft slices as capacity.
// A claim allocated a card is prepared as a CDI spec of what the device plugin would give the card; the ledger
// keeps the two ways apart (a card a claim holds is no device plugin's to grant, and the other way round).
package dra

import (
	"cmp"
	"slices"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"

	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/vendors"
)

// DriverName is the DRA driver of a vendor's cards (nvidia.gpustack.ai, vendors.DRADriver).
func DriverName(manufacturer string) string { return vendors.DRADriver(manufacturer) }

// The attributes and capacities of a card's device, in its driver's domain.
const (
	AttributeManufacturer      resourceapi.QualifiedName = "manufacturer"
	AttributeClass             resourceapi.QualifiedName = "class"
	AttributeProduct           resourceapi.QualifiedName = "product"
	AttributeAcceleratorKey    resourceapi.QualifiedName = "acceleratorKey"
	AttributeUUID              resourceapi.QualifiedName = "uuid"
	AttributeIndex             resourceapi.QualifiedName = "index"
	AttributeFamily            resourceapi.QualifiedName = "family"
	AttributeComputeCapability resourceapi.QualifiedName = "computeCapability"
	AttributeDriverVersion     resourceapi.QualifiedName = "driverVersion"
	AttributeRuntimeVersion    resourceapi.QualifiedName = "runtimeVersion"
	// AttributePartitioned is true while the card is in a hardware partitioning mode (MIG): it offers
	// partitions, not itself.
	AttributePartitioned resourceapi.QualifiedName = "partitioned"

	CapacityMemory resourceapi.QualifiedName = "memory"
	CapacityCores  resourceapi.QualifiedName = "cores"
	// CapacitySlices is how many soft slices the card holds (the vendor's SlicesPerCard); absent where the
	// vendor's cards are not soft-sliced.
	CapacitySlices resourceapi.QualifiedName = "slices"
)

// Resources returns what a vendor's driver publishes for the node: one pool named after the node, with one
// device per healthy card of cards (all of the vendor), ordered by index, each consuming its own counter set's
// credits (CounterSet). An unhealthy card is left out, as the device plugin lists it unhealthy: no claim is
// allocated a card that cannot take work. The API keeps devices and counter sets in separate slices, at most
// 64 devices that consume counters and 8 counter sets a slice, so a pool of many cards is several slices. No card
// gives an empty pool, which removes the node's slices.
func Resources(node string, cards []providers.Device) resourceslice.DriverResources {
	cards = slices.SortedFunc(slices.Values(cards), func(a, b providers.Device) int { return cmp.Compare(a.Index, b.Index) })
	var devices []resourceapi.Device
	var counters []resourceapi.CounterSet
	for _, c := range cards {
		if !c.Unhealthy {
			devices = append(devices, Device(c))
			counters = append(counters, CounterSet(c))
		}
	}
	pool := resourceslice.Pool{}
	for chunk := range slices.Chunk(devices, resourceapi.ResourceSliceMaxDevicesWithAdvancedFeatures) {
		pool.Slices = append(pool.Slices, resourceslice.Slice{Devices: chunk})
	}
	for chunk := range slices.Chunk(counters, resourceapi.ResourceSliceMaxCounterSets) {
		pool.Slices = append(pool.Slices, resourceslice.Slice{SharedCounters: chunk})
	}
	return resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{node: pool}}
}

// CounterSet is a card's own counter set, named after its device: the card's M credits
// (vendors.DRACreditsCounter), all of which its device consumes. Kueue's configuration counts this counter to
// charge a claim of the card in the vendor's credits, as a device plugin's whole card is charged.
func CounterSet(c providers.Device) resourceapi.CounterSet {
	return resourceapi.CounterSet{Name: DeviceName(c), Counters: credits()}
}

// credits is a card's whole credits as a counter.
func credits() map[string]resourceapi.Counter {
	return map[string]resourceapi.Counter{vendors.DRACreditsCounter: {Value: *resource.NewQuantity(pools.M, resource.DecimalSI)}}
}

// DeviceName names a card's device after its index on the node (card-0), as the vendors' drivers name theirs.
func DeviceName(c providers.Device) string { return pools.DRADevice(c.Index) }

// Device is a card as a DRA device: the attributes its node's labels carry (manufacturer, product, the
// accelerator key, family, compute capability, driver and runtime versions) with its UUID and index, and its
// memory, cores and soft slices as capacity, consuming its counter set's credits. What the card does not report
// is left out.
func Device(c providers.Device) resourceapi.Device {
	v, _ := vendors.Lookup(c.Manufacturer)
	d := resourceapi.Device{
		Name: DeviceName(c),
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			AttributeManufacturer:   {StringValue: ptr.To(c.Manufacturer)},
			AttributeAcceleratorKey: {StringValue: ptr.To(providers.GroupKey(c))},
			AttributeUUID:           {StringValue: ptr.To(c.UUID)},
			AttributeIndex:          {IntValue: ptr.To(int64(c.Index))},
			AttributePartitioned:    {BoolValue: ptr.To(len(c.Partitions) > 0)},
		},
		Capacity:         map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{},
		ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: DeviceName(c), Counters: credits()}},
	}
	texts := map[resourceapi.QualifiedName]string{
		AttributeClass: v.Class, AttributeProduct: c.Product, AttributeFamily: c.Family,
		AttributeComputeCapability: c.ComputeCapability, AttributeDriverVersion: c.DriverVersion, AttributeRuntimeVersion: c.RuntimeVersion,
	}
	for name, value := range texts {
		if value != "" {
			d.Attributes[name] = resourceapi.DeviceAttribute{StringValue: ptr.To(value)}
		}
	}
	if c.MemoryMiB > 0 {
		d.Capacity[CapacityMemory] = resourceapi.DeviceCapacity{Value: *resource.NewQuantity(c.MemoryMiB<<20, resource.BinarySI)}
	}
	if c.Cores > 0 {
		d.Capacity[CapacityCores] = resourceapi.DeviceCapacity{Value: *resource.NewQuantity(c.Cores, resource.DecimalSI)}
	}
	if len(c.Partitions) == 0 && v.SlicesPerCard > 0 {
		d.Capacity[CapacitySlices] = resourceapi.DeviceCapacity{Value: *resource.NewQuantity(int64(v.SlicesPerCard), resource.DecimalSI)}
	}
	return d
}
