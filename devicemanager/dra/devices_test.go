package dra_test

import (
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
				Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: resource.MustParse("81559Mi")}},
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
				Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: resource.MustParse("48Gi")}},
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
	names := func(r resourceslice.DriverResources) map[string][][]string {
		out := map[string][][]string{}
		for pool, p := range r.Pools {
			out[pool] = [][]string{}
			for _, s := range p.Slices {
				var devices []string
				for _, d := range s.Devices {
					devices = append(devices, d.Name)
				}
				out[pool] = append(out[pool], devices)
			}
		}
		return out
	}
	cases := map[string]struct {
		reason string
		cards  []providers.Device
		want   map[string][][]string
	}{
		"OnePoolPerNode": {
			reason: "The node's cards make one slice of its pool, named after it, ordered by index",
			cards:  []providers.Device{t4("GPU-t4-10", 10), t4("GPU-t4-2", 2), t4("GPU-t4-0", 0)},
			want:   map[string][][]string{"node-t4-b": {{"card-0", "card-2", "card-10"}}},
		},
		"UnhealthyLeftOut": {
			reason: "A card that cannot take work is not offered to claims",
			cards:  []providers.Device{t4("GPU-t4-0", 0), sick},
			want:   map[string][][]string{"node-t4-b": {{"card-0"}}},
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
