package deviceplugin

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/vendors"
)

// migCard is an H100 in MIG mode offering two profiles.
func migCard(index int32) providers.Device {
	return providers.Device{Manufacturer: "nvidia", Product: "NVIDIA H100 80GB HBM3", UUID: fmt.Sprintf("GPU-h100-%d", index),
		Index: index, MemoryMiB: 81920, Partitions: []providers.Partition{
			{Name: "1g.10gb", MemoryMiB: 10240, ComputeSlices: 1, MemorySlices: 1, Count: 7, Placements: []int32{0, 1, 2, 3, 4, 5, 6}},
			{Name: "3g.40gb", MemoryMiB: 40960, ComputeSlices: 3, MemorySlices: 4, Count: 2, Placements: []int32{0, 4}},
		}}
}

// recordingPartitioner creates partitions by name, as a MIG backend would, and remembers them.
type recordingPartitioner struct{ created []string }

func (r *recordingPartitioner) Create(_ context.Context, card providers.Device, profile, owner string) (string, error) {
	name := fmt.Sprintf("MIG-%s-%s-%s-%d", card.UUID, profile, owner, len(r.created))
	r.created = append(r.created, name)
	return name, nil
}

func (r *recordingPartitioner) Reclaim(context.Context, providers.Device, func(string) bool) []error {
	return nil
}

func TestPartitionTokens(t *testing.T) {
	nvidia, _ := vendors.Lookup("nvidia")
	cards := []providers.Device{migCard(0), a10g(1)}
	got := map[string]int{}
	for _, r := range Resources(nvidia) {
		got[r.Name] = len(Tokens(r, cards))
	}
	want := map[string]int{
		"nvidia.com/gpu": 1, "nvidia.com/gpu.shared": 10, "nvidia.com/gpu.sliced": 128,
		"nvidia.com/gpu.partitioned": 7, "device.gpustack.ai/nvidia.visibility": 128 + 7,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("a card in MIG mode offers only partitions, as many as its largest count; the other card everything else\nTokens(...): -want, +got:\n%s", diff)
	}
}

func TestLedgerTokens(t *testing.T) {
	nvidia, _ := vendors.Lookup("nvidia")
	r := Resource{Name: "nvidia.com/gpu.partitioned", Kind: Partitioned, Vendor: nvidia}
	cards := []providers.Device{migCard(0), migCard(1)}
	// Card 0 holds one 3g.40gb: three 1g.10gb placements and one 3g.40gb are left. Card 1 is not in the ledger.
	ledger := map[string]pools.Card{"GPU-h100-0": {ID: "GPU-h100-0", Partitions: []pools.Partition{
		{Profile: "1g.10gb", Max: 7, Remaining: 3}, {Profile: "3g.40gb", Max: 2, Remaining: 1, Allocated: 1}}}}
	var ids []string
	for _, d := range LedgerTokens(r, cards, ledger) {
		ids = append(ids, d.ID)
	}
	want := []string{"GPU-h100-0::partitioned-0", "GPU-h100-0::partitioned-1", "GPU-h100-0::partitioned-2", "GPU-h100-0::partitioned-3",
		"GPU-h100-1::partitioned-0", "GPU-h100-1::partitioned-1", "GPU-h100-1::partitioned-2", "GPU-h100-1::partitioned-3",
		"GPU-h100-1::partitioned-4", "GPU-h100-1::partitioned-5", "GPU-h100-1::partitioned-6"}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("a card in the ledger offers its partitions held plus the most it can still make (1 + 3); one not yet there its largest count\nLedgerTokens(...): -want, +got:\n%s", diff)
	}
}

func TestAllocatePartitions(t *testing.T) {
	nvidia, _ := vendors.Lookup("nvidia")
	r := Resource{Name: "nvidia.com/gpu.partitioned", Kind: Partitioned, Vendor: nvidia}
	cards := func() []providers.Device { return []providers.Device{migCard(0), migCard(1)} }
	req := &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{
		DevicesIds: []string{"GPU-h100-1::partitioned-0"}}}}

	t.Run("Creates", func(t *testing.T) {
		part := &recordingPartitioner{}
		p := &Plugin{Resource: r, Cards: cards, Pending: &pending{profile: "3g.40gb"}, Partitioner: part}
		resp, err := p.Allocate(context.Background(), req)
		if err != nil {
			t.Fatalf("Allocate(...): %v", err)
		}
		want := map[string]string{"NVIDIA_VISIBLE_DEVICES": "MIG-GPU-h100-1-3g.40gb-pod-uid-0"}
		if diff := cmp.Diff(want, resp.ContainerResponses[0].Envs); diff != "" {
			t.Errorf("the container sees the partition made for its Pod on its token's card, not the card\nAllocate(...): -want, +got:\n%s", diff)
		}
	})
	t.Run("NoPartitioner", func(t *testing.T) {
		p := &Plugin{Resource: r, Cards: cards, Pending: &pending{profile: "3g.40gb"}}
		_, err := p.Allocate(context.Background(), req)
		want := "nvidia.com/gpu.partitioned: this node's nvidia backend cannot create partitions"
		if err == nil || err.Error() != want {
			t.Errorf("a backend without partitions refuses them by name\nAllocate(...): want error %q, got %v", want, err)
		}
	})
}

func TestLedgerTokensClaimedCards(t *testing.T) {
	nvidia, _ := vendors.Lookup("nvidia")
	cards := []providers.Device{a10g(0), a10g(1)}
	ledger := map[string]pools.Card{a10g(1).UUID: {ID: a10g(1).UUID, Mode: 1, ResourceClaims: []string{"ns/rc"}}}
	for _, r := range Resources(nvidia) {
		if r.Kind == Partitioned {
			continue
		}
		health := map[string]string{}
		for _, d := range LedgerTokens(r, cards, ledger) {
			health[CardOf(d.ID)] = d.Health
		}
		want := map[string]string{a10g(0).UUID: pluginapi.Healthy, a10g(1).UUID: pluginapi.Unhealthy}
		if diff := cmp.Diff(want, health); diff != "" {
			t.Errorf("%s: a card allocated to a ResourceClaim is listed unhealthy, so the kubelet grants it to no container\nLedgerTokens(...): -want, +got:\n%s", r.Name, diff)
		}
	}
}
