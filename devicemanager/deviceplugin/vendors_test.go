package deviceplugin

import (
	"context"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/vendors"
)

// TestEveryVendorGrantsWhatItAdvertises is the nine-vendor table of "nothing advertised that cannot be
// given": for each vendor, a plain card and, where the vendor partitions, a card in its partitioning mode;
// every resource the plugins list a token of (what the kubelet counts, so what Kueue's admitted Pods may ask)
// is allocated, and Allocate must grant it. The advertised resources are listed per vendor, so a vendor that
// gains or loses soft slicing changes this table on purpose.
func TestEveryVendorGrantsWhatItAdvertises(t *testing.T) {
	want := map[string][]string{
		"nvidia":    {"device.gpustack.ai/nvidia.visibility", "nvidia.com/gpu", "nvidia.com/gpu.partitioned", "nvidia.com/gpu.shared", "nvidia.com/gpu.sliced"},
		"amd":       {"amd.com/gpu", "amd.com/gpu.shared", "amd.com/gpu.sliced", "device.gpustack.ai/amd.visibility"},
		"ascend":    {"device.gpustack.ai/ascend.visibility", "huawei.com/npu", "huawei.com/npu.shared", "huawei.com/npu.sliced"},
		"cambricon": {"cambricon.com/mlu", "cambricon.com/mlu.shared", "device.gpustack.ai/cambricon.visibility"},
		"hygon":     {"device.gpustack.ai/hygon.visibility", "hygon.com/dcu", "hygon.com/dcu.shared"},
		"iluvatar":  {"device.gpustack.ai/iluvatar.visibility", "iluvatar.com/gpu", "iluvatar.com/gpu.shared", "iluvatar.com/gpu.sliced"},
		"metax":     {"device.gpustack.ai/metax.visibility", "metax-tech.com/gpu", "metax-tech.com/gpu.shared"},
		"mthreads":  {"device.gpustack.ai/mthreads.visibility", "mthreads.com/gpu", "mthreads.com/gpu.shared"},
		"thead":     {"alibabacloud.com/ppu", "alibabacloud.com/ppu.shared", "alibabacloud.com/ppu.sliced", "device.gpustack.ai/thead.visibility"},
	}
	for _, v := range vendors.All() {
		t.Run(v.Key, func(t *testing.T) {
			cards := []providers.Device{{Manufacturer: v.Key, Product: "card", UUID: v.Key + "-0", Index: 0, MemoryMiB: 32768, RuntimeVersion: "8.0"}}
			if v.Key == "nvidia" {
				cards = append(cards, migCard(1))
			}
			rt := Runtime{LibDir: t.TempDir(), StateDir: t.TempDir()}
			stageEnforcers(t, rt.LibDir, cards...)
			var advertised []string
			for _, r := range Resources(v) {
				tokens := Tokens(r, cards)
				if len(tokens) == 0 {
					continue
				}
				advertised = append(advertised, r.Name)
				p := &Plugin{Resource: r, Cards: func() []providers.Device { return cards }, Runtime: rt,
					Pending: &pending{profile: "1g.10gb", budgets: map[string]Budget{
						cards[0].UUID: {MemoryMiB: 8192, CoresPercent: 25}}},
					Partitioner: &recordingPartitioner{}, Reservations: &Reservations{}}
				req := &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{tokens[0].ID}}}}
				if _, err := p.Allocate(context.Background(), req); err != nil {
					t.Errorf("%s lists %d tokens but Allocate refuses one: %v", r.Name, len(tokens), err)
				}
			}
			sort.Strings(advertised)
			if diff := cmp.Diff(want[v.Key], advertised); diff != "" {
				t.Errorf("the resources %s cards advertise: -want, +got:\n%s", v.DisplayName, diff)
			}
		})
	}
}
