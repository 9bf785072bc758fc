package vendors

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLookup(t *testing.T) {
	cases := map[string]struct {
		reason string
		name   string
		want   string
	}{
		"Key":         {reason: "A key finds its vendor.", name: "nvidia", want: "nvidia.com/gpu"},
		"DisplayName": {reason: "The display name finds its vendor.", name: "Moore Threads", want: "mthreads.com/gpu"},
		"Alias":       {reason: "Huawei means Ascend.", name: "Huawei", want: "huawei.com/npu"},
		"Case":        {reason: "Lookups ignore case.", name: "T-HEAD", want: "alibabacloud.com/ppu"},
		"Unknown":     {reason: "An unknown name finds nothing.", name: "acme", want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			v, _ := Lookup(tc.name)
			if diff := cmp.Diff(tc.want, v.ResourceName); diff != "" {
				t.Errorf("%s\nLookup(%q): -want, +got:\n%s", tc.reason, tc.name, diff)
			}
		})
	}
}

func TestOverrides(t *testing.T) {
	env := map[string]string{
		"GPUSTACK_NVIDIA_PCI_VENDOR_ID":               "0302_10DE",
		"GPUSTACK_NVIDIA_ACCELERATABLE_RESOURCE_NAME": "example.com/gpu",
		"GPUSTACK_NVIDIA_ACCELERATABLE_RUNTIME_NAME":  "none",
		"GPUSTACK_NVIDIA_PARTITION_KIND":              "mig2",
	}
	nvidia, _ := Lookup("nvidia")
	got := withOverrides(nvidia, func(k string) string { return env[k] })
	want := Vendor{Key: "nvidia", DisplayName: "NVIDIA", PCIVendorID: "10de", ResourceName: "example.com/gpu",
		RuntimeClass: "", Class: "GPU", SlicesPerCard: 128, CoresOvercommit: true, PartitionKind: "mig2", RuntimeInjects: true,
		PCIClass: "0302"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GPUSTACK_NVIDIA_* override the table entry\nwithOverrides(...): -want, +got:\n%s", diff)
	}
	if n := len(All()); n != 9 {
		t.Errorf("All() returned %d vendors, want the nine the project supports", n)
	}
}

func TestConfigure(t *testing.T) {
	env := map[string]string{"GPUSTACK_AMD_ACCELERATABLE_RESOURCE_NAME": "example.com/amd"}
	Configure(func(k string) string { return env[k] })
	t.Cleanup(func() { Configure(func(string) string { return "" }) })
	amd, _ := Lookup("amd")
	nvidia, _ := Lookup("nvidia")
	got := []string{amd.ResourceName, nvidia.ResourceName, All()[1].ResourceName}
	if diff := cmp.Diff([]string{"example.com/amd", "nvidia.com/gpu", "example.com/amd"}, got); diff != "" {
		t.Errorf("Lookup and All answer from the table Configure set, overridden entries only\n-want, +got:\n%s", diff)
	}
	Configure(func(string) string { return "" })
	if amd, _ := Lookup("amd"); amd.ResourceName != "amd.com/gpu" {
		t.Errorf("Configure with no overrides restores the built-in table; Lookup(amd) = %q", amd.ResourceName)
	}
}

func TestPCI(t *testing.T) {
	type function struct{ vendor, class string }
	type want struct {
		label string
		owns  []bool
	}
	functions := []function{{"10de", "030200"}, {"10de", "030000"}, {"1002", "030200"}}
	cases := map[string]struct {
		reason string
		id     string
		want   want
	}{
		"Builtin": {
			reason: "Without an override the vendor's every function is its card, and the label is NFD's by vendor.",
			want:   want{label: "10de", owns: []bool{true, true, false}},
		},
		"VendorOnly": {
			reason: "A vendor ID alone (any case) keeps every class.",
			id:     "10DE",
			want:   want{label: "10de", owns: []bool{true, true, false}},
		},
		"ClassAndVendor": {
			reason: "A class_vendor pair takes only that class's functions, and names NFD's class_vendor label.",
			id:     "0302_10de",
			want:   want{label: "0302_10de", owns: []bool{true, false, false}},
		},
		"OtherVendor": {
			reason: "A vendor ID moved elsewhere owns that vendor's functions, not the built-in one's.",
			id:     "0302:1002",
			want:   want{label: "0302_1002", owns: []bool{false, false, true}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			nvidia, _ := Lookup("nvidia")
			v := withOverrides(nvidia, func(k string) string {
				if k == "GPUSTACK_NVIDIA_PCI_VENDOR_ID" {
					return tc.id
				}
				return ""
			})
			got := want{label: v.PCILabel()}
			for _, f := range functions {
				got.owns = append(got.owns, v.OwnsPCI(f.vendor, f.class))
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nPCILabel and OwnsPCI(%v) with %q: -want, +got:\n%s", tc.reason, functions, tc.id, diff)
			}
		})
	}
}
