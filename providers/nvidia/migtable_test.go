package nvidia

import (
	"context"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gpustack/gpustack-operator/providers"
)

// TestProductProfilesMatchNVML checks the product table against what NVML reports for a card in MIG mode
// (go-nvml's mock GPUs carry NVIDIA's profile tables): the same names, counts and compute slices, and memory
// within 7 % of the nominal size the name gives (NVML's 1g.5gb has 4864 MiB). Placements are not compared: the mock gives every profile a
// size of its compute slices (3g at {0,4}:3), where real cards report memory slices (nvidia-smi mig -lgipp on
// an A100: 3g at {0,4}:4, 7g at {0}:8, 1g.10gb at {0,2,4,6}:2), which the table follows.
func TestProductProfilesMatchNVML(t *testing.T) {
	for _, cfg := range []gpus.Config{gpus.A30_PCIE_24GB, gpus.A100_PCIE_40GB, gpus.A100_SXM4_40GB, gpus.A100_PCIE_80GB,
		gpus.A100_SXM4_80GB, gpus.H100_SXM5_80GB, gpus.H200_SXM5_141GB, gpus.B200_SXM5_180GB} {
		t.Run(cfg.Name, func(t *testing.T) {
			s, err := server.New(server.WithGPUs(cfg))
			if err != nil {
				t.Fatal(err)
			}
			s.Devices[0].(*server.Device).MigMode = nvml.DEVICE_MIG_ENABLE
			devices, _ := New(s).Detect(context.Background())
			if len(devices) != 1 {
				t.Fatalf("Detect(...): want 1 card, got %d", len(devices))
			}
			want, ok := ProductProfiles(cfg.Name)
			if !ok {
				t.Fatalf("ProductProfiles(%q): not in the table", cfg.Name)
			}
			got := devices[0].Partitions
			near := cmp.Comparer(func(a, b int64) bool { return a*100 >= b*93 && b*100 >= a*93 })
			if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(providers.Partition{}, "MemorySlices", "Placements"), cmp.FilterPath(func(p cmp.Path) bool {
				return p.Last().String() == ".MemoryMiB"
			}, near)); diff != "" {
				t.Errorf("the table's profiles of %s are NVML's\nProductProfiles(...): -want (table), +got (NVML):\n%s", cfg.Name, diff)
			}
		})
	}
}

func TestProductProfiles(t *testing.T) {
	names := func(product string) []string {
		ps, _ := ProductProfiles(product)
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	cases := map[string]struct {
		reason  string
		product string
		want    []string
	}{
		"H100":  {"Reference-behaviour section 12's list.", "NVIDIA H100 80GB HBM3", []string{"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}},
		"NVL":   {"H100 NVL is not read as an 80 GB H100.", "NVIDIA H100 NVL", []string{"1g.12gb", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb"}},
		"GH200": {"GH200 is not read as an H200.", "NVIDIA GH200 480GB", []string{"1g.12gb", "1g.24gb", "2g.24gb", "3g.48gb", "4g.48gb", "7g.96gb"}},
		"H20":   {"H20 has its own memory.", "NVIDIA H20", []string{"1g.12gb", "1g.24gb", "2g.24gb", "3g.48gb", "4g.48gb", "7g.96gb"}},
		"A10G":  {"A card without MIG has no profiles.", "NVIDIA A10G", nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, names(tc.product)); diff != "" {
				t.Errorf("%s\nProductProfiles(%q): -want, +got:\n%s", tc.reason, tc.product, diff)
			}
		})
	}
}
