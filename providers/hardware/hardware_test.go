package hardware

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/google/go-cmp/cmp"

	"github.com/gpustack/gpustack-operator/providers/amd"
	"github.com/gpustack/gpustack-operator/providers/pcisysfs"
	"github.com/gpustack/gpustack-operator/providers/pcisysfs/pcisysfstest"
	"github.com/gpustack/gpustack-operator/providers/smitool/smitooltest"
	"github.com/gpustack/gpustack-operator/vendors"
)

func TestDetect(t *testing.T) {
	rocm, err := os.ReadFile("../amd/testdata/rocm-smi.json")
	if err != nil {
		t.Fatal(err)
	}
	amdOnly := map[string]map[string]string{
		"0000:0c:00.0": pcisysfstest.Function("0x1002", "0x74a1", "0x038000"),
		"0000:1b:00.0": pcisysfstest.Function("0x1002", "0x74a1", "0x038000"),
		"0000:00:1f.6": pcisysfstest.Function("0x8086", "0x15bc", "0x020000"),
	}
	withNvidia := map[string]map[string]string{
		"0000:0c:00.0": pcisysfstest.Function("0x1002", "0x74a1", "0x038000"),
		"0000:1b:00.0": pcisysfstest.Function("0x1002", "0x74a1", "0x038000"),
		"0000:65:00.0": pcisysfstest.Function("0x10de", "0x20b0", "0x030200"),
		"0000:66:00.0": pcisysfstest.Function("0x10de", "0x20b0", "0x030200"),
	}
	type want struct {
		products []string
		err      string
	}
	cases := map[string]struct {
		reason string
		bus    map[string]map[string]string
		nvml   func() nvml.Interface
		env    map[string]string
		want   want
	}{
		"OnlyWhatIsOnTheBus": {
			reason: "Only the vendor on the bus is asked: NVML, which would fail here, is never called.",
			bus:    amdOnly,
			nvml: func() nvml.Interface {
				s := dgxa100.New()
				s.InitFunc = func() nvml.Return {
					t.Error("NVML was initialised on a node without NVIDIA cards")
					return nvml.ERROR_UNKNOWN
				}
				return s
			},
			want: want{products: []string{"AMD Instinct MI300X", "AMD Instinct MI300X"}},
		},
		"TwoVendors": {
			reason: "A node with two vendors reports both, in the vendor table's order, NVIDIA through NVML.",
			bus:    withNvidia,
			nvml:   func() nvml.Interface { return dgxa100.New() },
			want: want{products: append(strings.Split(strings.Repeat("Mock NVIDIA A100-SXM4-40GB,", 8), ",")[:8],
				"AMD Instinct MI300X", "AMD Instinct MI300X")},
		},
		"ClassKept": {
			reason: "GPUSTACK_AMD_PCI_VENDOR_ID=0380_1002 takes the AMD functions of class 0380, which these are.",
			bus:    amdOnly,
			nvml:   func() nvml.Interface { return dgxa100.New() },
			env:    map[string]string{"GPUSTACK_AMD_PCI_VENDOR_ID": "0380_1002"},
			want:   want{products: []string{"AMD Instinct MI300X", "AMD Instinct MI300X"}},
		},
		"OtherClass": {
			reason: "GPUSTACK_AMD_PCI_VENDOR_ID=0302_1002 takes only AMD's 3D controllers: these display controllers (0380) are no card of it.",
			bus:    amdOnly,
			nvml:   func() nvml.Interface { return dgxa100.New() },
			env:    map[string]string{"GPUSTACK_AMD_PCI_VENDOR_ID": "0302_1002"},
			want:   want{},
		},
		"ClassPrefixes": {
			reason: "GPUSTACK_PCI_CLASS_PREFIXES=0302 counts 3D controllers alone: the AMD display controllers (0380) are no card, and their tool is not run.",
			bus:    withNvidia,
			nvml:   func() nvml.Interface { return dgxa100.New() },
			env:    map[string]string{"GPUSTACK_PCI_CLASS_PREFIXES": "0302"},
			want:   want{products: strings.Split(strings.Repeat("Mock NVIDIA A100-SXM4-40GB,", 8), ",")[:8]},
		},
		"NoNVML": {
			reason: "Without the NVIDIA library the NVIDIA cards on the bus stay visible, unhealthy, and the error says why.",
			bus:    withNvidia,
			nvml: func() nvml.Interface {
				s := dgxa100.New()
				s.InitFunc = func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }
				return s
			},
			want: want{products: []string{"NVIDIA 20b0", "NVIDIA 20b0", "AMD Instinct MI300X", "AMD Instinct MI300X"},
				err: "cannot initialise NVML"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			vendors.Configure(func(k string) string { return tc.env[k] })
			t.Cleanup(func() { vendors.Configure(func(string) string { return "" }) })
			classes, err := pcisysfs.ClassPrefixesFromEnv(func(k string) string { return tc.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			p := New(Options{SysfsRoot: pcisysfstest.Tree(t, tc.bus), NVML: tc.nvml(), ClassPrefixes: classes,
				Runner: smitooltest.Runner{amd.Command.String(): {Stdout: string(rocm)}}})
			got, err := p.Detect(context.Background())
			var products []string
			for _, d := range got {
				products = append(products, d.Product)
			}
			if diff := cmp.Diff(tc.want.products, products); diff != "" {
				t.Errorf("%s\nDetect(...): -want, +got products:\n%s", tc.reason, diff)
			}
			if tc.want.err == "" && err != nil || tc.want.err != "" && (err == nil || !strings.Contains(err.Error(), tc.want.err)) {
				t.Errorf("%s\nDetect(...): error %v, want one containing %q", tc.reason, err, tc.want.err)
			}
		})
	}
}
