package dra_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"

	"github.com/gpustack/gpustack-operator/devicemanager/dra"
	"github.com/gpustack/gpustack-operator/providers"
)

func t4(uuid string, index int32) providers.Device {
	return providers.Device{Manufacturer: "nvidia", Product: "Tesla T4", UUID: uuid, Index: index, MemoryMiB: 15360,
		Cores: 2560, Family: "Turing", ComputeCapability: "7.5", DriverVersion: "535.104.05", RuntimeVersion: "12.2"}
}

// consumes is the counter consumption of a card's device: all of its own counter set's credits.
func consumes(set string) []resourceapi.DeviceCounterConsumption {
	return []resourceapi.DeviceCounterConsumption{{CounterSet: set, Counters: map[string]resourceapi.Counter{"credits": {Value: resource.MustParse("1600000")}}}}
}

func TestDevice(t *testing.T) {
	h100 := providers.Device{Manufacturer: "nvidia", Product: "NVIDIA H100 80GB HBM3", UUID: "GPU-h100", MemoryMiB: 81559,
		Partitions: []providers.Partition{{Name: "3g.40gb", MemoryMiB: 40448, ComputeSlices: 3, MemorySlices: 4, Count: 2}}}
	mlu := providers.Device{Manufacturer: "cambricon", Product: "MLU370-X8", UUID: "MLU-1", Index: 1, MemoryMiB: 49152}
	cases := map[string]struct {
		reason string
		card   providers.Device
		want   resourceapi.Device
	}{
		"SlicedCard": {
			reason: "A card of a vendor with soft slicing carries what its labels say, its memory and cores, and its slices",
			card:   t4("GPU-t4-0", 0),
			want: resourceapi.Device{Name: "card-0",
				Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
					"manufacturer": {StringValue: ptr.To("nvidia")}, "class": {StringValue: ptr.To("GPU")},
					"product": {StringValue: ptr.To("Tesla T4")}, "acceleratorKey": {StringValue: ptr.To("nvidia-tesla-t4")},
					"uuid": {StringValue: ptr.To("GPU-t4-0")}, "index": {IntValue: ptr.To[int64](0)},
					"family": {StringValue: ptr.To("Turing")}, "computeCapability": {StringValue: ptr.To("7.5")},
					"driverVersion": {StringValue: ptr.To("535.104.05")}, "runtimeVersion": {StringValue: ptr.To("12.2")},
					"partitioned": {BoolValue: ptr.To(false)},
				},
				Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
					"memory": {Value: resource.MustParse("15Gi")}, "cores": {Value: resource.MustParse("2560")},
					"slices": {Value: resource.MustParse("128")},
				},
				ConsumesCounters: consumes("card-0"),
			},
		},
		"PartitionedCard": {
			reason: "A card in a partitioning mode says so and offers no soft slices; what it does not report is left out",
			card:   h100,
			want: resourceapi.Device{Name: "card-0",
				Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
					"manufacturer": {StringValue: ptr.To("nvidia")}, "class": {StringValue: ptr.To("GPU")},
					"product": {StringValue: ptr.To("NVIDIA H100 80GB HBM3")}, "acceleratorKey": {StringValue: ptr.To("nvidia-h100-80gb-hbm3")},
					"uuid": {StringValue: ptr.To("GPU-h100")}, "index": {IntValue: ptr.To[int64](0)},
					"partitioned": {BoolValue: ptr.To(true)},
				},
				Capacity:         map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: resource.MustParse("81559Mi")}},
				ConsumesCounters: consumes("card-0"),
			},
		},
		"VendorWithoutSlicing": {
			reason: "A vendor whose slices this operator cannot enforce offers none",
			card:   mlu,
			want: resourceapi.Device{Name: "card-1",
				Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
					"manufacturer": {StringValue: ptr.To("cambricon")}, "class": {StringValue: ptr.To("MLU")},
					"product": {StringValue: ptr.To("MLU370-X8")}, "acceleratorKey": {StringValue: ptr.To("cambricon-mlu370-x8")},
					"uuid": {StringValue: ptr.To("MLU-1")}, "index": {IntValue: ptr.To[int64](1)},
					"partitioned": {BoolValue: ptr.To(false)},
				},
				Capacity:         map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: resource.MustParse("48Gi")}},
				ConsumesCounters: consumes("card-1"),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := dra.Device(tc.card)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nDevice(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestResources(t *testing.T) {
	sick := t4("GPU-t4-sick", 1)
	sick.Unhealthy = true
	// names lists each slice of each pool: its devices' names, or its counter sets' names and credits.
	names := func(r resourceslice.DriverResources) map[string][][]string {
		out := map[string][][]string{}
		for pool, p := range r.Pools {
			out[pool] = [][]string{}
			for _, s := range p.Slices {
				var items []string
				for _, d := range s.Devices {
					items = append(items, d.Name)
				}
				for _, c := range s.SharedCounters {
					credits := c.Counters["credits"]
					items = append(items, fmt.Sprintf("counters %s: %d credits", c.Name, credits.Value.Value()))
				}
				out[pool] = append(out[pool], items)
			}
		}
		return out
	}
	many := func(n int) []providers.Device {
		var cards []providers.Device
		for i := range n {
			cards = append(cards, t4(fmt.Sprintf("GPU-t4-%d", i), int32(i)))
		}
		return cards
	}
	counters := func(from, to int) []string {
		var out []string
		for i := from; i < to; i++ {
			out = append(out, fmt.Sprintf("counters card-%d: 1600000 credits", i))
		}
		return out
	}
	cases := map[string]struct {
		reason string
		cards  []providers.Device
		want   map[string][][]string
	}{
		"OnePoolPerNode": {
			reason: "The node's cards make one slice of its pool, named after it, ordered by index, and their counter sets another",
			cards:  []providers.Device{t4("GPU-t4-10", 10), t4("GPU-t4-2", 2), t4("GPU-t4-0", 0)},
			want: map[string][][]string{"node-t4-b": {{"card-0", "card-2", "card-10"},
				{"counters card-0: 1600000 credits", "counters card-2: 1600000 credits", "counters card-10: 1600000 credits"}}},
		},
		"UnhealthyLeftOut": {
			reason: "A card that cannot take work is not offered to claims, nor are its credits",
			cards:  []providers.Device{t4("GPU-t4-0", 0), sick},
			want:   map[string][][]string{"node-t4-b": {{"card-0"}, {"counters card-0: 1600000 credits"}}},
		},
		"EightCounterSetsASlice": {
			reason: "A slice holds at most 8 counter sets, so ten cards' counter sets take two slices",
			cards:  many(10),
			want: map[string][][]string{"node-t4-b": {{"card-0", "card-1", "card-2", "card-3", "card-4", "card-5", "card-6", "card-7", "card-8", "card-9"},
				counters(0, 8), counters(8, 10)}},
		},
		"NoCards": {
			reason: "A vendor without cards left publishes its pool empty, which removes the node's slices",
			want:   map[string][][]string{"node-t4-b": {}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := names(dra.Resources("node-t4-b", tc.cards))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nResources(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestResourcesSixtyFourDevicesASlice(t *testing.T) {
	var cards []providers.Device
	for i := range 70 {
		cards = append(cards, t4(fmt.Sprintf("GPU-t4-%d", i), int32(i)))
	}
	var devices []int
	for _, s := range dra.Resources("node-t4-b", cards).Pools["node-t4-b"].Slices {
		if len(s.Devices) > 0 {
			devices = append(devices, len(s.Devices))
		}
	}
	if diff := cmp.Diff([]int{64, 6}, devices); diff != "" {
		t.Errorf("A slice holds at most 64 devices that consume counters\nResources(...): devices a slice, -want, +got:\n%s", diff)
	}
}
