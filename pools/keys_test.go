package pools

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

func TestGeneralKey(t *testing.T) {
	type args struct{ vendor, name, family, id string }
	cases := map[string]struct {
		reason string
		args   args
		want   string
	}{
		"EPYC7R32":       {reason: "The walkthrough's A10G node.", args: args{vendor: "AMD", name: "AMD EPYC 7R32"}, want: "amd-epyc-7r32"},
		"EPYC7R13":       {reason: "A trailing Processor is dropped.", args: args{vendor: "AMD", name: "AMD EPYC 7R13 Processor"}, want: "amd-epyc-7r13"},
		"EPYC7763":       {reason: "A core count is dropped.", args: args{vendor: "AMD", name: "AMD EPYC 7763 64-Core Processor"}, want: "amd-epyc-7763"},
		"Xeon":           {reason: "Trademarks and the frequency are dropped.", args: args{vendor: "Intel", name: "Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz"}, want: "intel-xeon-platinum-8259cl"},
		"CPUIDVendor":    {reason: "The raw cpuid vendor string maps to its enum name.", args: args{vendor: "GenuineIntel", name: "Intel(R) Core(TM) i9-13900K"}, want: "intel-core-i9-13900k"},
		"NoName":         {reason: "Without a name, family and model IDs stand in.", args: args{vendor: "AMD", family: "25", id: "1"}, want: "amd-25-1"},
		"TemplateName":   {reason: "An unresolved NFD template counts as no name.", args: args{vendor: "AMD", name: "@cpu.model.name", family: "25", id: "1"}, want: "amd-25-1"},
		"Nothing":        {reason: "No CPU identity at all is generic.", args: args{}, want: "generic"},
		"VendorOnly":     {reason: "A vendor alone is not an identity.", args: args{vendor: "AMD"}, want: "generic"},
		"ManufacturerIn": {reason: "A name that does not start with the vendor keeps all its words.", args: args{vendor: "ARM", name: "Neoverse-N1"}, want: "arm-neoverse-n1"},
		"Long": {reason: "Keys are cut to the label budget.",
			args: args{vendor: "AMD", name: "AMD Very Long Experimental Engineering Sample Processor Model Name With Many Words"},
			want: "amd-very-long-experimental-engineering-sample-processo"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := GeneralKey(tc.args.vendor, tc.args.name, tc.args.family, tc.args.id)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nGeneralKey(...): -want, +got:\n%s", tc.reason, diff)
			}
			if len(got) > KeyBudget {
				t.Errorf("%s\nGeneralKey(...) = %q is longer than %d", tc.reason, got, KeyBudget)
			}
		})
	}
}

func TestAcceleratorKey(t *testing.T) {
	cases := map[string]struct {
		reason, manufacturer, product, want string
	}{
		"A10G":    {"The vendor word is not repeated.", "nvidia", "NVIDIA A10G", "nvidia-a10g"},
		"T4":      {"The vendor is added when the product lacks it.", "nvidia", "Tesla T4", "nvidia-tesla-t4"},
		"H100":    {"Punctuation and spaces become dashes.", "nvidia", "NVIDIA H100 80GB HBM3", "nvidia-h100-80gb-hbm3"},
		"Ascend":  {"Other vendors follow the same rule.", "ascend", "Ascend 910B", "ascend-910b"},
		"Unnamed": {"A card without a product name is keyed by its vendor.", "metax", "", "metax"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, AcceleratorKey(tc.manufacturer, tc.product)); diff != "" {
				t.Errorf("%s\nAcceleratorKey(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestAcceleratorKeyWithMemory(t *testing.T) {
	long := "Accelerator " + strings.Repeat("X", 60)
	cases := map[string]struct {
		reason, product string
		memoryMiB       int64
		want            string
	}{
		"T4":      {"The reference's example: 16 GiB gives -16g.", "Tesla T4", 16384, "nvidia-tesla-t4-16g"},
		"Rounded": {"A real T4 reports 15360 MiB; the GiB are rounded, not cut.", "Tesla T4", 15360 + 600, "nvidia-tesla-t4-16g"},
		"Unknown": {"A card of unknown memory keeps the plain key.", "NVIDIA A10G", 0, "nvidia-a10g"},
		"Long":    {"The suffix survives the key's truncation to its budget.", long, 81920, "nvidia-accelerator-" + strings.Repeat("x", KeyBudget-len("nvidia-accelerator-")-len("-80g")) + "-80g"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := AcceleratorKeyWithMemory("nvidia", tc.product, tc.memoryMiB)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nAcceleratorKeyWithMemory(...): -want, +got:\n%s", tc.reason, diff)
			}
			if len(got) > KeyBudget {
				t.Errorf("%s\nAcceleratorKeyWithMemory(...) = %q, longer than %d", tc.reason, got, KeyBudget)
			}
		})
	}
}

func TestGroupKey(t *testing.T) {
	cases := map[string]struct {
		reason string
		group  workerv1.DeviceGroup
		want   string
	}{
		"ID":        {"The group's ID is the key the device manager chose, memory suffix included.", workerv1.DeviceGroup{ID: "tesla-t4-16g", Manufacturer: "nvidia", Name: "Tesla T4"}, "nvidia-tesla-t4-16g"},
		"NoID":      {"Without an ID the product names the group.", workerv1.DeviceGroup{Manufacturer: "nvidia", Name: "Tesla T4"}, "nvidia-tesla-t4"},
		"VendorKey": {"A card without a product name is grouped by its vendor alone.", workerv1.DeviceGroup{ID: "metax", Manufacturer: "metax"}, "metax"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, GroupKey(tc.group)); diff != "" {
				t.Errorf("%s\nGroupKey(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestEntranceName(t *testing.T) {
	cases := map[string]struct {
		reason, pool, want string
	}{
		"A10G":        {"The seed's collapsed A10G pool.", "gpustack--nvidia-a10g-linux-amd64", "gpustack-fnv64-c4680bb149644f1c"},
		"Generic":     {"The seed's generic CPU pool.", "gpustack--generic-linux-amd64", "gpustack-fnv64-3b93966fd73eb9ec"},
		"T4":          {"The seed's collapsed T4 pool.", "gpustack--nvidia-tesla-t4-linux-amd64", "gpustack-fnv64-6b371caa2da0b799"},
		"AwareA10G":   {"The seed's CPU-aware A10G pool.", "gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64", "gpustack-fnv64-029fd9550e0c70bd"},
		"Authored":    {"An admin-authored type uses the same rule (docs/glossary.md, entrance).", "a10g-12c128g", "gpustack-fnv64-d4c0e6cd72686015"},
		"OldAuthored": {"The walkthrough's stale hash is that of the type's older name.", "a10g-8c32g", "gpustack-fnv64-8cf5b3114035c84a"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := EntranceName(tc.pool)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nEntranceName(%q): -want, +got:\n%s", tc.reason, tc.pool, diff)
			}
			if len(got) != 31 {
				t.Errorf("EntranceName(%q) has %d characters, want 31", tc.pool, len(got))
			}
		})
	}
}

func TestLabelValues(t *testing.T) {
	cases := map[string]struct {
		reason string
		got    string
		want   string
	}{
		"ProductSpaces":  {"Spaces become dashes, case is kept.", ProductLabel("NVIDIA A10G"), "NVIDIA-A10G"},
		"ProductSymbols": {"Characters a label cannot hold become dashes.", ProductLabel("Tesla T4 (PCIe)"), "Tesla-T4-PCIe"},
		"Memory24Gi":     {"Whole GiB print in Gi.", MemoryLabel(24576), "24Gi"},
		"Memory15Gi":     {"A real T4 reports 15360 MiB.", MemoryLabel(15360), "15Gi"},
		"MemoryMi":       {"Memory that is no whole GiB prints in Mi.", MemoryLabel(23028), "23028Mi"},
		"MemoryNone":     {"Unknown memory is left out.", MemoryLabel(0), ""},
		"FlavorCPU":      {"CPU flavors end in c.", FlavorName("amd-epyc-7r13", "", "linux", "amd64", 16), "gpustack--amd-epyc-7r13-linux-amd64-16c"},
		"FlavorGPU":      {"Accelerated flavors end in d.", FlavorName("amd-epyc-7r32", "nvidia-a10g", "linux", "amd64", 1), "gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64-1d"},
		"PoolAware":      {"CPU-aware pools carry both keys.", PoolName("amd-epyc-7r32", "nvidia-a10g", "linux", "amd64"), "gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64"},
		"PoolCollapsed":  {"Collapsed pools carry the aKey only.", PoolName(Generic, "nvidia-a10g", "linux", "amd64"), "gpustack--nvidia-a10g-linux-amd64"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.got); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestPresetUnit(t *testing.T) {
	cases := map[string]struct {
		reason        string
		acceleratable bool
		memory        string
		want          Unit
	}{
		"CPU":     {"CPU pools are 1 CPU / 2Gi.", false, "", Unit{"1", "2Gi", "100Gi"}},
		"T4":      {"16Gi is small.", true, "16Gi", Unit{"8", "32Gi", "100Gi"}},
		"A10G":    {"24Gi is medium.", true, "24Gi", Unit{"8", "64Gi", "100Gi"}},
		"A100":    {"80Gi is large.", true, "80Gi", Unit{"12", "128Gi", "100Gi"}},
		"H200":    {"141Gi is xlarge.", true, "141Gi", Unit{"12", "192Gi", "100Gi"}},
		"Unknown": {"Unknown memory takes the fallback.", true, "", Unit{"4", "16Gi", "100Gi"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, PresetUnit(tc.acceleratable, tc.memory)); diff != "" {
				t.Errorf("%s\nPresetUnit(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	node := func(name string, cores int64, cards int64) Node {
		n := Node{Name: name, OS: "linux", Arch: "amd64", Managed: true, CPU: CPU{Key: "amd-epyc-7r32", Cores: cores, RequestedMilli: 500}}
		if cards > 0 {
			n.Groups = []Group{{Key: "nvidia-a10g", Manufacturer: "nvidia", Count: cards, Cards: []Card{{ID: "GPU-1", Remaining: M}}}}
		}
		return n
	}
	busy := node("e", 4, 1)
	busy.CPU.RequestedMilli = 1500
	nodes := []Node{node("c", 4, 1), node("a", 4, 1), node("b", 8, 0), node("d", 4, 1), busy}
	classes := Classify(nodes)
	var got [][]string
	for _, c := range classes {
		got = append(got, c.Names)
		if c.Identity.Name != "" {
			t.Errorf("class identity %+v keeps a name", c.Identity)
		}
	}
	if diff := cmp.Diff([][]string{{"a", "c", "d"}, {"b"}, {"e"}}, got); diff != "" {
		t.Errorf("nodes of one identity share a class\nClassify(...): -want, +got:\n%s", diff)
	}
	var names []string
	for _, n := range Expand(classes) {
		names = append(names, n.Name+"/"+FormatCount(n.CPU.Cores))
	}
	if diff := cmp.Diff([]string{"a/4", "b/8", "c/4", "d/4", "e/4"}, names); diff != "" {
		t.Errorf("Expand(Classify(...)) gives back every node: -want, +got:\n%s", diff)
	}
}
