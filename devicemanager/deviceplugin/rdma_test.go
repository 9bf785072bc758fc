package deviceplugin

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/gpustack/gpustack-operator/providers/rdma"
)

func TestRDMAPlugin(t *testing.T) {
	dir, k := startKubelet(t)
	devices := []rdma.Device{
		{Name: "mlx5_0", Active: true, Verbs: []string{"uverbs0"}},
		{Name: "mlx5_1", Verbs: []string{"uverbs1"}},
		{Name: "mlx5_2", Active: true, Verbs: []string{"uverbs2"}, Virtual: true},
	}
	devDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(devDir, "rdma_cm"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	whole := &RDMAPlugin{Devices: func() []rdma.Device { return devices }, DevDir: devDir}
	shared := &RDMAPlugin{Kind: RDMAShared, Devices: whole.Devices, DevDir: devDir}
	partitioned := &RDMAPlugin{Kind: RDMAPartitioned, Devices: whole.Devices, DevDir: devDir}
	for _, p := range []*RDMAPlugin{whole, shared, partitioned} {
		if _, err := Serve(ctx, dir, p.Resource(), p); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{RDMAResource, RDMASharedResource, RDMAPartitionedResource} {
		r, ok := k.Registered()[name]
		if !ok || r.Options.GetPreferredAllocationAvailable {
			t.Errorf("%s registers with the kubelet, asking for no preferred allocation: %+v", name, r)
		}
	}

	spec := func(name string) *pluginapi.DeviceSpec {
		return &pluginapi.DeviceSpec{ContainerPath: "/dev/infiniband/" + name, HostPath: "/dev/infiniband/" + name, Permissions: "rw"}
	}
	cases := map[string]struct {
		reason  string
		plugin  *RDMAPlugin
		ids     []string
		want    []*pluginapi.DeviceSpec
		wantErr bool
	}{
		"Whole": {reason: "A whole device gives its verbs device and the connection manager.",
			plugin: whole, ids: []string{"mlx5_1"}, want: []*pluginapi.DeviceSpec{spec("uverbs1"), spec("rdma_cm")}},
		"Shared": {reason: "A share gives every physical device with a port up, not the virtual functions'.",
			plugin: shared, ids: []string{"rdma-share-7"}, want: []*pluginapi.DeviceSpec{spec("uverbs0"), spec("rdma_cm")}},
		"Partitioned": {reason: "A virtual function's device gives its own verbs device and the connection manager.",
			plugin: partitioned, ids: []string{"mlx5_2"}, want: []*pluginapi.DeviceSpec{spec("uverbs2"), spec("rdma_cm")}},
		"Unknown":             {reason: "A device the node does not have is refused.", plugin: whole, ids: []string{"mlx5_9"}, wantErr: true},
		"VirtualAsWhole":      {reason: "A virtual function's device is not handed out as a whole one.", plugin: whole, ids: []string{"mlx5_2"}, wantErr: true},
		"PhysicalAsPartition": {reason: "A physical function's device is not handed out as a partition.", plugin: partitioned, ids: []string{"mlx5_0"}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resp, err := dial(t, dir, tc.plugin.Resource()).Allocate(ctx, &pluginapi.AllocateRequest{
				ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: tc.ids}}})
			if (err != nil) != tc.wantErr {
				t.Fatalf("%s\nAllocate(...): error %v, want error %t", tc.reason, err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if diff := cmp.Diff(tc.want, resp.ContainerResponses[0].Devices, protocmp.Transform()); diff != "" {
				t.Errorf("%s\nAllocate(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}

	t.Run("Tokens", func(t *testing.T) {
		got := RDMATokens(RDMAWhole, devices)
		want := []*pluginapi.Device{{ID: "mlx5_0", Health: pluginapi.Healthy}, {ID: "mlx5_1", Health: pluginapi.Unhealthy}}
		if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
			t.Errorf("one token per physical device, healthy while a port is up: -want, +got:\n%s", diff)
		}
		got = RDMATokens(RDMAPartitioned, devices)
		want = []*pluginapi.Device{{ID: "mlx5_2", Health: pluginapi.Healthy}}
		if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
			t.Errorf("one token per virtual function's device: -want, +got:\n%s", diff)
		}
		if n := len(RDMATokens(RDMAShared, devices)); n != RDMASharesPerNode {
			t.Errorf("RDMATokens(shared): %d tokens, want %d", n, RDMASharesPerNode)
		}
		if got := RDMATokens(RDMAShared, nil); len(got) != 0 {
			t.Errorf("RDMATokens(shared) of a node without RDMA: %d tokens, want none", len(got))
		}
		if got := RDMATokens(RDMAShared, rdma.Virtual(devices)); len(got) != 0 {
			t.Errorf("RDMATokens(shared) of a node with virtual functions alone: %d tokens, want none", len(got))
		}
		kinds := map[string][]RDMAKind{"physical": RDMAKinds(devices[:2]), "virtual": RDMAKinds(devices[2:]), "both": RDMAKinds(devices), "none": RDMAKinds(nil)}
		wantKinds := map[string][]RDMAKind{"physical": {RDMAWhole, RDMAShared}, "virtual": {RDMAPartitioned}, "both": {RDMAWhole, RDMAShared, RDMAPartitioned}, "none": nil}
		if diff := cmp.Diff(wantKinds, kinds); diff != "" {
			t.Errorf("RDMAKinds(...): the resources served for a node's devices: -want, +got:\n%s", diff)
		}
	})
}
