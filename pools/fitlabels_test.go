package pools

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

func TestFitLabels(t *testing.T) {
	a10g := func() *workerv1.Devices {
		d := twoA10G()
		d.Spec.Groups[0].ID, d.Spec.Groups[0].Name = "a10g", "NVIDIA A10G"
		return d
	}
	entry := func(id string, mode workerv1.AllocationMode, remaining int64, slices int32) workerv1.AcceleratorAllocation {
		return workerv1.AcceleratorAllocation{ID: id, Mode: mode, Remaining: remaining, Allocated: M - remaining, AllocatedSlices: slices}
	}
	cases := map[string]struct {
		reason string
		ledger []workerv1.AcceleratorAllocation
		want   map[string]string
	}{
		"Free": {reason: "Two free cards: a whole card of units, two cards that give shares.",
			want: map[string]string{"sliced-max-free-units.fit.gpustack.ai/nvidia-a10g": "1600000", "shared-free-cards.fit.gpustack.ai/nvidia-a10g": "2"}},
		"SlicedAndWhole": {reason: "A card 70 % sliced and one held whole: the freest piece is 30 %, and neither gives a share.",
			ledger: []workerv1.AcceleratorAllocation{entry("A", workerv1.AllocationSliced, M*3/10, 2), entry("B", workerv1.AllocationExclusive, 0, 0)},
			want:   map[string]string{"sliced-max-free-units.fit.gpustack.ai/nvidia-a10g": "480000", "shared-free-cards.fit.gpustack.ai/nvidia-a10g": "0"}},
		"Shared": {reason: "A shared card takes no slice but still gives shares; the free card takes a whole slice.",
			ledger: []workerv1.AcceleratorAllocation{entry("A", workerv1.AllocationShared, M-share, 0)},
			want:   map[string]string{"sliced-max-free-units.fit.gpustack.ai/nvidia-a10g": "1600000", "shared-free-cards.fit.gpustack.ai/nvidia-a10g": "2"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := a10g()
			d.Status.Groups = []workerv1.GroupAllocation{{ID: "a10g", Manufacturer: "nvidia", Accelerators: tc.ledger}}
			if diff := cmp.Diff(tc.want, FitLabels(d)); diff != "" {
				t.Errorf("%s\nFitLabels(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
	if got := FitLabels(h100MIG(2)); len(got) != 0 {
		t.Errorf("cards in MIG mode take neither slices nor shares: FitLabels(...) = %v, want none", got)
	}
}
