package pools

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

func TestCountingCapacity(t *testing.T) {
	sliceable := func(n int32, overcommit bool) workerv1.Accelerator {
		return workerv1.Accelerator{Status: workerv1.AcceleratorStatus{
			LogicalSliced: &workerv1.LogicalSlicedCapability{Count: n, CoresPercentageOvercommit: overcommit}}}
	}
	cases := map[string]struct {
		reason string
		spec   workerv1.DevicesSpec
		want   map[string]int64
	}{
		"FourT4": {
			reason: "Four sliceable T4s give four cards of units, percentages and memory; compute overcommits by the slots.",
			spec: workerv1.DevicesSpec{Groups: []workerv1.DeviceGroup{{Manufacturer: "nvidia", Memory: 15360,
				Accelerators: []workerv1.Accelerator{sliceable(128, true), sliceable(128, true), sliceable(128, true), sliceable(128, true)}}}},
			want: map[string]int64{"nvidia.com/gpu.sliced.units": 6_400_000, "nvidia.com/gpu.sliced.memory-percentage": 400,
				"nvidia.com/gpu.sliced.memory-mib": 61440, "nvidia.com/gpu.sliced.cores-percentage": 51200},
		},
		"UnhealthyAndPartitioned": {
			reason: "An unhealthy card and a card in MIG mode give nothing; a Cambricon card does not overcommit compute.",
			spec: workerv1.DevicesSpec{Groups: []workerv1.DeviceGroup{
				{Manufacturer: "nvidia", Memory: 81920, Accelerators: []workerv1.Accelerator{
					{Status: workerv1.AcceleratorStatus{Unhealthy: true, LogicalSliced: &workerv1.LogicalSlicedCapability{Count: 128}}},
					{Status: workerv1.AcceleratorStatus{PhysicalSliced: &workerv1.PhysicalSlicedCapability{Count: 7}}},
				}},
				{Manufacturer: "cambricon", Memory: 24576, Accelerators: []workerv1.Accelerator{sliceable(16, false)}},
			}},
			want: map[string]int64{"cambricon.com/mlu.sliced.units": 1_600_000, "cambricon.com/mlu.sliced.memory-percentage": 100,
				"cambricon.com/mlu.sliced.memory-mib": 24576, "cambricon.com/mlu.sliced.cores-percentage": 100},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, CountingCapacity(tc.spec)); diff != "" {
				t.Errorf("%s\nCountingCapacity(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
