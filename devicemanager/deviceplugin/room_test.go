package deviceplugin

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/vendors"
)

// TestAllocateChecksTheLedger: the kubelet may hand out a token of a card the ledger says is full (it counts
// tokens, not memory); Allocate then refuses with the reason, unless the ledger already charged this Pod there.
func TestAllocateChecksTheLedger(t *testing.T) {
	nvidia, _ := vendors.Lookup("nvidia")
	sliced := Resource{Name: "nvidia.com/gpu.sliced", Kind: Sliced, Vendor: nvidia}
	partitioned := Resource{Name: "nvidia.com/gpu.partitioned", Kind: Partitioned, Vendor: nvidia}
	cards := func() []providers.Device { return []providers.Device{a10g(0), migCard(1)} }
	ledger := func(context.Context) (map[string]pools.Card, error) {
		return map[string]pools.Card{
			// 70 % of the A10G is taken by other slices.
			"GPU-a10g-0": {ID: "GPU-a10g-0", Mode: workerv1.AllocationSliced, Remaining: pools.M * 3 / 10, AllocatedSlices: 2, Slots: 128},
			// The H100 holds two 3g.40gb: no 3g.40gb placement is left.
			"GPU-h100-1": {ID: "GPU-h100-1", Mode: workerv1.AllocationPartitioned, Remaining: 0, Partitions: []pools.Partition{
				{Profile: "1g.10gb", Max: 7, Remaining: 0}, {Profile: "3g.40gb", Max: 2, Allocated: 2, Remaining: 0}}},
		}, nil
	}
	allocate := func(r Resource, token string, pend *pending) error {
		rt := Runtime{LibDir: t.TempDir(), StateDir: t.TempDir()}
		stageEnforcers(t, rt.LibDir, cards()...)
		p := &Plugin{Resource: r, Cards: cards, Ledger: ledger, Pending: pend, Partitioner: &recordingPartitioner{}, Runtime: rt}
		_, err := p.Allocate(context.Background(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{token}}}})
		return err
	}
	cases := map[string]struct {
		reason   string
		resource Resource
		token    string
		pending  *pending
		err      string
	}{
		"SliceFits": {reason: "A 20 % slice fits the 30 % left.", resource: sliced, token: "GPU-a10g-0::sliced-5",
			pending: &pending{budgets: map[string]Budget{"GPU-a10g-0": {MemoryMiB: 4915, CoresPercent: 100}}}},
		"SliceTooBig": {reason: "A 50 % slice does not fit the 30 % left: refused with the card's largest free piece.",
			resource: sliced, token: "GPU-a10g-0::sliced-5",
			pending: &pending{budgets: map[string]Budget{"GPU-a10g-0": {MemoryMiB: 12288, CoresPercent: 100}}},
			err:     "nvidia.com/gpu.sliced: card GPU-a10g-0: no card has room for a slice of 50%: the largest free piece is 30%"},
		"SliceChargedAlready": {reason: "The ledger charged this Pod's slice on the card already: it is its own.",
			resource: sliced, token: "GPU-a10g-0::sliced-5",
			pending: &pending{budgets: map[string]Budget{"GPU-a10g-0": {MemoryMiB: 12288, CoresPercent: 100}},
				cards: map[string][]string{"nvidia.com/gpu.sliced": {"GPU-a10g-0"}}}},
		"NoPlacement": {reason: "A 3g.40gb on a card with no 3g.40gb placement left is refused.",
			resource: partitioned, token: "GPU-h100-1::partitioned-0", pending: &pending{profile: "3g.40gb"},
			err: "card GPU-h100-1: no card has a free placement for 1 3g.40gb partition(s)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := allocate(tc.resource, tc.token, tc.pending)
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("%s\nAllocate(...): %v", tc.reason, err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("%s\nAllocate(...): error %v, want one containing %q", tc.reason, err, tc.err)
			}
		})
	}
}

// TestTokensOn checks that the tokens handed out on a card are its lowest-numbered available ones, whatever
// order the kubelet lists them in, each at most once.
func TestTokensOn(t *testing.T) {
	cases := map[string]struct {
		reason           string
		available, cards []string
		want             []string
	}{
		"Lowest": {
			reason:    "A partitioned card's list shrinks from the top, so the token allocated must be its lowest.",
			available: []string{"GPU-a::partitioned-3", "GPU-a::partitioned-10", "GPU-a::partitioned-1", "GPU-b::partitioned-0"},
			cards:     []string{"GPU-a"},
			want:      []string{"GPU-a::partitioned-1"},
		},
		"TwiceOnOneCard": {
			reason:    "Two units on one card are two tokens.",
			available: []string{"GPU-a::sliced-2", "GPU-a::sliced-0"},
			cards:     []string{"GPU-a", "GPU-a"},
			want:      []string{"GPU-a::sliced-0", "GPU-a::sliced-2"},
		},
		"NoneLeft": {
			reason:    "A card without an available token gives nothing.",
			available: []string{"GPU-a::sliced-0"},
			cards:     []string{"GPU-a", "GPU-b"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tokensOn(tc.available, tc.cards)); diff != "" {
				t.Errorf("%s\ntokensOn(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestSlicedAllocateGate: GPUSTACK_DEVICE_PLUGIN_SLICED_ALLOCATE_GATE=false hands out a slice the ledger says
// has no room; with the gate on (its default, TestBoolEnvs) Allocate refuses it.
func TestSlicedAllocateGate(t *testing.T) {
	nvidia, _ := vendors.Lookup("nvidia")
	cards := func() []providers.Device { return []providers.Device{a10g(0)} }
	full := func(context.Context) (map[string]pools.Card, error) {
		return map[string]pools.Card{"GPU-a10g-0": {ID: "GPU-a10g-0", Mode: workerv1.AllocationSliced, Remaining: pools.M * 3 / 10, AllocatedSlices: 2, Slots: 128}}, nil
	}
	for _, off := range []bool{false, true} {
		rt := Runtime{LibDir: t.TempDir(), StateDir: t.TempDir()}
		stageEnforcers(t, rt.LibDir, cards()...)
		p := &Plugin{Resource: Resource{Name: "nvidia.com/gpu.sliced", Kind: Sliced, Vendor: nvidia}, Cards: cards, Ledger: full,
			Pending: &pending{budgets: map[string]Budget{"GPU-a10g-0": {MemoryMiB: 12288, CoresPercent: 100}}}, Runtime: rt, NoSlicedAllocateGate: off}
		_, err := p.Allocate(context.Background(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"GPU-a10g-0::sliced-5"}}}})
		if (err != nil) == off {
			t.Errorf("A 50 %% slice on a card with 30 %% left, gate off %t: Allocate(...) error %v", off, err)
		}
	}
}
