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
	}
	devDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(devDir, "rdma_cm"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	whole := &RDMAPlugin{Devices: func() []rdma.Device { return devices }, DevDir: devDir}
	shared := &RDMAPlugin{Shared: true, Devices: whole.Devices, DevDir: devDir}
	for _, p := range []*RDMAPlugin{whole, shared} {
		if _, err := Serve(ctx, dir, p.Resource(), p); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{RDMAResource, RDMASharedResource} {
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
		"Shared": {reason: "A share gives every device with a port up.",
			plugin: shared, ids: []string{"rdma-share-7"}, want: []*pluginapi.DeviceSpec{spec("uverbs0"), spec("rdma_cm")}},
		"Unknown": {reason: "A device the node does not have is refused.", plugin: whole, ids: []string{"mlx5_9"}, wantErr: true},
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
		got := RDMATokens(false, devices)
		want := []*pluginapi.Device{{ID: "mlx5_0", Health: pluginapi.Healthy}, {ID: "mlx5_1", Health: pluginapi.Unhealthy}}
		if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
			t.Errorf("one token per device, healthy while a port is up: -want, +got:\n%s", diff)
		}
		if n := len(RDMATokens(true, devices)); n != RDMASharesPerNode {
			t.Errorf("RDMATokens(shared): %d tokens, want %d", n, RDMASharesPerNode)
		}
		if got := RDMATokens(true, nil); len(got) != 0 {
			t.Errorf("RDMATokens(shared) of a node without RDMA: %d tokens, want none", len(got))
		}
	})
}
