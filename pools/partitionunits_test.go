package pools

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// h100 is a node inventory with one H100 80GB card, partitioned when profiles are given.
func h100(profiles ...workerv1.PartitionProfile) workerv1.Devices {
	a := workerv1.Accelerator{ID: "GPU-1"}
	if len(profiles) > 0 {
		a.Status.PhysicalSliced = &workerv1.PhysicalSlicedCapability{Count: 7, Profiles: profiles}
	}
	return workerv1.Devices{Spec: workerv1.DevicesSpec{Groups: []workerv1.DeviceGroup{{
		ID: "h100-80gb-hbm3", Manufacturer: "nvidia", Name: "NVIDIA H100 80GB HBM3", Memory: 81559,
		Accelerators: []workerv1.Accelerator{a}}}}}
}

func TestPartitionUnits(t *testing.T) {
	mig := []workerv1.PartitionProfile{{Name: "1g.10gb", MemoryMiB: 9856, Count: 7}, {Name: "3g.40gb", MemoryMiB: 40192, Count: 2},
		{Name: "7g.80gb", MemoryMiB: 81559, Count: 1}}
	type want struct {
		units int64
		ok    bool
	}
	cases := map[string]struct {
		reason      string
		inventories []workerv1.Devices
		aKey        string
		profile     string
		want        want
	}{
		"ThreeSevenths": {
			reason:      "3g.40gb costs its memory's share of the card: 40192/81559 of M",
			inventories: []workerv1.Devices{h100(mig...)},
			aKey:        "nvidia-h100-80gb-hbm3", profile: "3g.40gb",
			want: want{units: 40192 * M / 81559, ok: true},
		},
		"WholeCardProfile": {
			reason:      "a profile the size of the card costs M",
			inventories: []workerv1.Devices{h100(mig...)},
			aKey:        "nvidia-h100-80gb-hbm3", profile: "7g.80gb",
			want: want{units: M, ok: true},
		},
		"LaterNode": {
			reason:      "a node whose card is not partitioned is passed over for one that offers the profile",
			inventories: []workerv1.Devices{h100(), h100(mig...)},
			aKey:        "nvidia-h100-80gb-hbm3", profile: "1g.10gb",
			want: want{units: 9856 * M / 81559, ok: true},
		},
		"UnknownProfile": {
			reason:      "a profile no card offers is not known",
			inventories: []workerv1.Devices{h100(mig...)},
			aKey:        "nvidia-h100-80gb-hbm3", profile: "2g.20gb",
		},
		"OtherGroup": {
			reason:      "another group's profiles do not count",
			inventories: []workerv1.Devices{h100(mig...)},
			aKey:        "nvidia-a100-sxm4-80gb", profile: "3g.40gb",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			units, ok := PartitionUnits(tc.inventories, tc.aKey, tc.profile)
			if diff := cmp.Diff(tc.want, want{units, ok}, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nPartitionUnits(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
