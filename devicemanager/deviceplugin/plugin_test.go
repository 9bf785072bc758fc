package deviceplugin

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/devicemanager/deviceplugin/deviceplugintest"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/vendors"
)

// startKubelet serves registration in a fresh short directory (unix socket paths are limited to 108 bytes).
func startKubelet(t *testing.T) (string, *deviceplugintest.Kubelet) {
	dir, err := os.MkdirTemp("", "dp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	k, err := deviceplugintest.StartKubelet(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	return dir, k
}

// dial connects to a plugin's socket as the kubelet does.
func dial(t *testing.T, dir, resource string) pluginapi.DevicePluginClient {
	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, SocketName(resource)), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return pluginapi.NewDevicePluginClient(conn)
}

// pending stands for the Pods being allocated: their slice budgets by card, the cards recorded by resource.
type pending struct {
	mu      sync.Mutex
	budgets map[string]Budget
	cards   map[string][]string
	profile string
}

func (p *pending) Budget(_ context.Context, _ Resource, card providers.Device) (Budget, error) {
	return p.budgets[card.UUID], nil
}

func (p *pending) Profile(context.Context, Resource) (string, string, error) {
	return p.profile, "pod-uid", nil
}

func (p *pending) Cards(_ context.Context, r Resource) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cards[r.Name]
}

func (p *pending) record(cards map[string][]string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cards = cards
}

// a10g is a card of the walkthrough's A10G node.
func a10g(index int32) providers.Device {
	return providers.Device{Manufacturer: "nvidia", Product: "NVIDIA A10G", UUID: "GPU-a10g-" + string('0'+index),
		Index: index, MemoryMiB: 24576, RuntimeVersion: "13.0", DriverVersion: "580.159.03"}
}

func TestPlugin(t *testing.T) {
	dir, k := startKubelet(t)
	nvidia, _ := vendors.Lookup("nvidia")
	var mu sync.Mutex
	cards := []providers.Device{a10g(0), a10g(1)}
	current := func() []providers.Device {
		mu.Lock()
		defer mu.Unlock()
		return append([]providers.Device(nil), cards...)
	}
	// Card 0 already holds one 20 % slice; card 1 is free.
	ledger := func(context.Context) (map[string]pools.Card, error) {
		return map[string]pools.Card{
			"GPU-a10g-0": {ID: "GPU-a10g-0", Mode: workerv1.AllocationSliced, Remaining: pools.M - 320_000, AllocatedSlices: 1, Slots: 128},
			"GPU-a10g-1": {ID: "GPU-a10g-1", Remaining: pools.M, Slots: 128},
		}, nil
	}
	rt := Runtime{LibDir: t.TempDir(), StateDir: t.TempDir()}
	stageEnforcers(t, rt.LibDir, cards...)
	reservations := &Reservations{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pend := &pending{budgets: map[string]Budget{"GPU-a10g-0": {MemoryMiB: 4915, CoresPercent: 50}, "GPU-a10g-1": {MemoryMiB: 4915, CoresPercent: 50}}}
	plugins := map[Kind]*Plugin{}
	for _, r := range Resources(nvidia) {
		p := &Plugin{Resource: r, Cards: current, Ledger: ledger, Runtime: rt, Reservations: reservations,
			Pending: pend}
		if _, err := Serve(ctx, dir, p.Resource.Name, p); err != nil {
			t.Fatal(err)
		}
		plugins[r.Kind] = p
	}

	t.Run("Registers", func(t *testing.T) {
		var got []string
		for name, r := range k.Registered() {
			if r.Version != pluginapi.Version || r.Endpoint != SocketName(name) || !r.Options.GetPreferredAllocationAvailable {
				t.Errorf("registration of %s: %+v", name, r)
			}
			got = append(got, name)
		}
		sort.Strings(got)
		want := []string{"device.gpustack.ai/nvidia.visibility", "nvidia.com/gpu", "nvidia.com/gpu.partitioned", "nvidia.com/gpu.shared", "nvidia.com/gpu.sliced"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("The five NVIDIA resources register with the kubelet: -want, +got:\n%s", diff)
		}
	})

	t.Run("ListsAndWatches", func(t *testing.T) {
		counts := map[string]int{}
		for _, name := range []string{"nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/gpu.sliced"} {
			stream, err := dial(t, dir, name).ListAndWatch(ctx, &pluginapi.Empty{})
			if err != nil {
				t.Fatal(err)
			}
			first, err := stream.Recv()
			if err != nil {
				t.Fatal(err)
			}
			counts[name] = len(first.Devices)
			if name != "nvidia.com/gpu" {
				continue
			}
			// The card turns unhealthy: the kubelet hears it on the open stream.
			mu.Lock()
			cards[1].Unhealthy = true
			mu.Unlock()
			plugins[Whole].Changed()
			next := make(chan *pluginapi.ListAndWatchResponse, 1)
			go func() { r, _ := stream.Recv(); next <- r }()
			select {
			case r := <-next:
				if r == nil || len(r.Devices) != 2 || r.Devices[1].Health != pluginapi.Unhealthy || r.Devices[0].Health != pluginapi.Healthy {
					t.Errorf("After a card turns unhealthy ListAndWatch sends it unhealthy: %v", r)
				}
			case <-time.After(10 * time.Second):
				t.Error("ListAndWatch sent nothing after the cards changed")
			}
			mu.Lock()
			cards[1].Unhealthy = false
			mu.Unlock()
		}
		want := map[string]int{"nvidia.com/gpu": 2, "nvidia.com/gpu.shared": 20, "nvidia.com/gpu.sliced": 256}
		if diff := cmp.Diff(want, counts); diff != "" {
			t.Errorf("Two cards give 2 whole cards, 10 shares and 128 slice slots each: -want, +got:\n%s", diff)
		}
	})

	t.Run("Prefers", func(t *testing.T) {
		cases := map[string]struct {
			reason    string
			resource  string
			recorded  map[string][]string
			available []string
			size      int32
			want      []string
		}{
			"WholeOnFreeCard": {reason: "A whole card goes to the free card, not the one holding a slice.",
				resource: "nvidia.com/gpu", available: []string{"GPU-a10g-0", "GPU-a10g-1"}, size: 1, want: []string{"GPU-a10g-1"}},
			"SliceOnFullestCard": {reason: "A slice goes onto the fullest card that still has room.",
				resource:  "nvidia.com/gpu.sliced",
				available: []string{"GPU-a10g-1::sliced-0", "GPU-a10g-0::sliced-1", "GPU-a10g-0::sliced-2"}, size: 1,
				want: []string{"GPU-a10g-0::sliced-1"}},
			"RecordedCardFirst": {reason: "A slice the ledger recorded on the free card gets that card, not the fullest one.",
				resource: "nvidia.com/gpu.sliced", recorded: map[string][]string{"nvidia.com/gpu.sliced": {"GPU-a10g-1"}},
				available: []string{"GPU-a10g-0::sliced-1", "GPU-a10g-1::sliced-0"}, size: 1,
				want: []string{"GPU-a10g-1::sliced-0"}},
			"SharesNeedDistinctFreeCards": {reason: "Two shares need two cards that can give one; the sliced card cannot, so nothing is preferred.",
				resource:  "nvidia.com/gpu.shared",
				available: []string{"GPU-a10g-0::shared-0", "GPU-a10g-1::shared-0", "GPU-a10g-1::shared-1"}, size: 2},
		}
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				pend.record(tc.recorded)
				defer pend.record(nil)
				resp, err := dial(t, dir, tc.resource).GetPreferredAllocation(ctx, &pluginapi.PreferredAllocationRequest{
					ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{{AvailableDeviceIDs: tc.available, AllocationSize: tc.size}}})
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.want, resp.ContainerResponses[0].DeviceIDs); diff != "" {
					t.Errorf("%s\nGetPreferredAllocation(...): -want, +got:\n%s", tc.reason, diff)
				}
			})
		}
	})

	t.Run("Allocates", func(t *testing.T) {
		libs := rt.LibDir + "/cuda-13/"
		cases := map[string]struct {
			reason   string
			resource string
			ids      []string
			want     *pluginapi.ContainerAllocateResponse
			err      string
		}{
			"Whole": {reason: "Whole cards are made visible by UUID.", resource: "nvidia.com/gpu",
				ids:  []string{"GPU-a10g-0", "GPU-a10g-1"},
				want: &pluginapi.ContainerAllocateResponse{Envs: map[string]string{"NVIDIA_VISIBLE_DEVICES": "GPU-a10g-0,GPU-a10g-1"}}},
			"Shared": {reason: "Shares on two cards make both visible, with no limits.", resource: "nvidia.com/gpu.shared",
				ids:  []string{"GPU-a10g-0::shared-3", "GPU-a10g-1::shared-0"},
				want: &pluginapi.ContainerAllocateResponse{Envs: map[string]string{"NVIDIA_VISIBLE_DEVICES": "GPU-a10g-0,GPU-a10g-1"}}},
			"SharesOnOneCard": {reason: "Two shares on one card are refused.", resource: "nvidia.com/gpu.shared",
				ids: []string{"GPU-a10g-0::shared-3", "GPU-a10g-0::shared-4"}, err: "distinct cards"},
			"Sliced": {reason: "A 20 % slice loads HAMi-core with the slice's memory and compute limits.", resource: "nvidia.com/gpu.sliced",
				ids: []string{"GPU-a10g-0::sliced-7"},
				want: &pluginapi.ContainerAllocateResponse{
					Envs: map[string]string{"NVIDIA_VISIBLE_DEVICES": "GPU-a10g-0", "CUDA_DEVICE_MEMORY_LIMIT_0": "4915m",
						"CUDA_DEVICE_SM_LIMIT": "50", "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "LIBCUDA_LOG_LEVEL": "0"},
					Mounts: []*pluginapi.Mount{
						{HostPath: libs + "libvgpu.so", ContainerPath: "/usr/local/gpustack/lib/libvgpu.so", ReadOnly: true},
						{HostPath: libs + "ld.so.preload", ContainerPath: "/etc/ld.so.preload", ReadOnly: true},
					}}},
			"SidecarSeesTheSlice": {reason: "The SSH sidecar, allocated after its Pod's slice, sees the slice's card and nothing else.",
				resource: "device.gpustack.ai/nvidia.visibility", ids: []string{"GPU-a10g-1::visibility-0"},
				want: &pluginapi.ContainerAllocateResponse{Envs: map[string]string{"NVIDIA_VISIBLE_DEVICES": "GPU-a10g-0"}}},
			"UnknownCard": {reason: "A card the node does not have is refused.", resource: "nvidia.com/gpu",
				ids: []string{"GPU-gone"}, err: "not on this node"},
		}
		for _, name := range []string{"Whole", "Shared", "SharesOnOneCard", "Sliced", "SidecarSeesTheSlice", "UnknownCard"} {
			tc := cases[name]
			t.Run(name, func(t *testing.T) {
				resp, err := dial(t, dir, tc.resource).Allocate(ctx, &pluginapi.AllocateRequest{
					ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: tc.ids}}})
				if tc.err != "" {
					if err == nil || !strings.Contains(err.Error(), tc.err) {
						t.Errorf("%s\nAllocate(...): error %v, want one containing %q", tc.reason, err, tc.err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				got := resp.ContainerResponses[0]
				if diff := cmp.Diff(tc.want.Envs, got.Envs); diff != "" {
					t.Errorf("%s\nAllocate(...) envs: -want, +got:\n%s", tc.reason, diff)
				}
				if diff := cmp.Diff(mounts(tc.want.Mounts), mounts(got.Mounts)); diff != "" {
					t.Errorf("%s\nAllocate(...) mounts: -want, +got:\n%s", tc.reason, diff)
				}
			})
		}
	})
}

func mounts(ms []*pluginapi.Mount) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.HostPath+" -> "+m.ContainerPath)
	}
	return out
}
