package rdma_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpustack/gpustack-operator/providers/pcisysfs/pcisysfstest"
	"github.com/gpustack/gpustack-operator/providers/rdma"
)

func TestScan(t *testing.T) {
	nic := pcisysfstest.Function("0x15b3", "0x101b", "0x020700")
	cases := map[string]struct {
		reason    string
		functions map[string]map[string]string
		// links are symbolic links to make under the root, path -> target (a virtual function's physfn).
		links   map[string]string
		want    []rdma.Device
		capable bool
	}{
		"InfiniBand": {reason: "An HCA with its port up is an active device with its verbs.",
			functions: map[string]map[string]string{"0000:3b:00.0": pcisysfstest.RDMA(nic, "mlx5_0", "uverbs0", "InfiniBand", "4: ACTIVE")},
			want:      []rdma.Device{{Name: "mlx5_0", PCIAddress: "0000:3b:00.0", LinkLayer: "InfiniBand", Active: true, Verbs: []string{"uverbs0"}}},
			capable:   true},
		"RoCEDown": {reason: "A RoCE NIC whose port is down is listed but carries nothing.",
			functions: map[string]map[string]string{"0000:5e:00.0": pcisysfstest.RDMA(nic, "mlx5_1", "uverbs1", "Ethernet", "1: DOWN")},
			want:      []rdma.Device{{Name: "mlx5_1", PCIAddress: "0000:5e:00.0", LinkLayer: "Ethernet", Verbs: []string{"uverbs1"}}}},
		"NoRDMA": {reason: "A card and a plain NIC have no RDMA devices.",
			functions: map[string]map[string]string{"0000:10:00.0": pcisysfstest.Function("0x10de", "0x2237", "0x030200"), "0000:11:00.0": nic}},
		"Two": {reason: "Devices of several functions come sorted by name; one up makes the node capable.",
			functions: map[string]map[string]string{
				"0000:5e:00.0": pcisysfstest.RDMA(nic, "mlx5_1", "uverbs1", "Ethernet", "1: DOWN"),
				"0000:3b:00.0": pcisysfstest.RDMA(nic, "mlx5_0", "uverbs0", "InfiniBand", "4: ACTIVE")},
			want: []rdma.Device{{Name: "mlx5_0", PCIAddress: "0000:3b:00.0", LinkLayer: "InfiniBand", Active: true, Verbs: []string{"uverbs0"}},
				{Name: "mlx5_1", PCIAddress: "0000:5e:00.0", LinkLayer: "Ethernet", Verbs: []string{"uverbs1"}}},
			capable: true},
		"VirtualFunction": {reason: "A function that links its physical one (physfn) is an SR-IOV virtual function: its device is virtual.",
			functions: map[string]map[string]string{
				"0000:3b:00.0": pcisysfstest.RDMA(nic, "mlx5_0", "uverbs0", "Ethernet", "4: ACTIVE"),
				"0000:3b:00.2": pcisysfstest.RDMA(nic, "mlx5_2", "uverbs2", "Ethernet", "4: ACTIVE")},
			links: map[string]string{"0000:3b:00.2/physfn": "../0000:3b:00.0"},
			want: []rdma.Device{{Name: "mlx5_0", PCIAddress: "0000:3b:00.0", LinkLayer: "Ethernet", Active: true, Verbs: []string{"uverbs0"}},
				{Name: "mlx5_2", PCIAddress: "0000:3b:00.2", LinkLayer: "Ethernet", Active: true, Verbs: []string{"uverbs2"}, Virtual: true}},
			capable: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			root := pcisysfstest.Tree(t, tc.functions)
			for path, target := range tc.links {
				if err := os.Symlink(target, filepath.Join(root, path)); err != nil {
					t.Fatal(err)
				}
			}
			got, err := rdma.Scan(root)
			if err != nil {
				t.Fatalf("%s\nScan(...): %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nScan(...): -want, +got:\n%s", tc.reason, diff)
			}
			if c := rdma.Capable(got); c != tc.capable {
				t.Errorf("%s\nCapable(...) = %t, want %t", tc.reason, c, tc.capable)
			}
		})
	}
	if _, err := rdma.Scan(t.TempDir() + "/missing"); err == nil {
		t.Errorf("Scan(a missing root): no error, want one")
	}
}
