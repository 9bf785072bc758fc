package pcisysfs

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpustack/gpustack-operator/providers/pcisysfs/pcisysfstest"
)

func TestScan(t *testing.T) {
	gpu := func(vendor, device, class, numa string) map[string]string {
		return map[string]string{"vendor": vendor + "\n", "device": device + "\n", "class": class + "\n", "numa_node": numa + "\n"}
	}
	type want struct {
		devices  []Device
		problems int
	}
	cases := map[string]struct {
		reason  string
		tree    map[string]map[string]string
		vendors []string
		want    want
	}{
		"NvidiaAndAscend": {
			reason: "Cards of the wanted vendors and classes are found, sorted by address; the NIC and the other vendor are not.",
			tree: map[string]map[string]string{
				"0000:b1:00.0": gpu("0x10de", "0x2237", "0x030200", "1"),
				"0000:65:00.0": gpu("0x10de", "0x2237", "0x030200", "0"),
				"0000:3d:00.0": gpu("0x19e5", "0xd802", "0x120000", "-1"),
				"0000:00:1f.6": gpu("0x8086", "0x15bc", "0x020000", "0"),
				"0000:17:00.0": gpu("0x10de", "0x1aeb", "0x0c0330", "0"),
			},
			vendors: []string{"10de", "0x19E5"},
			want: want{devices: []Device{
				{Address: "0000:3d:00.0", VendorID: "19e5", DeviceID: "d802", Class: "120000", NUMANode: -1},
				{Address: "0000:65:00.0", VendorID: "10de", DeviceID: "2237", Class: "030200", NUMANode: 0},
				{Address: "0000:b1:00.0", VendorID: "10de", DeviceID: "2237", Class: "030200", NUMANode: 1},
			}},
		},
		"BrokenEntry": {
			reason: "An entry with garbage in its attributes is reported, and the others are still found.",
			tree: map[string]map[string]string{
				"0000:65:00.0": gpu("0x10de", "0x2237", "0x030200", "0"),
				"0000:66:00.0": gpu("0xzzzz", "0x2237", "0x030200", "0"),
				"0000:67:00.0": {"vendor": "0x10de\n"},
			},
			vendors: []string{"10de"},
			want: want{devices: []Device{{Address: "0000:65:00.0", VendorID: "10de", DeviceID: "2237", Class: "030200", NUMANode: 0}},
				problems: 2},
		},
		"NoCards": {
			reason:  "A node without accelerators yields none.",
			tree:    map[string]map[string]string{"0000:00:1f.6": gpu("0x8086", "0x15bc", "0x020000", "0")},
			vendors: []string{"10de"},
			want:    want{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			devices, problems, err := Scan(pcisysfstest.Tree(t, tc.tree), tc.vendors, DefaultClassPrefixes)
			if err != nil {
				t.Fatal(err)
			}
			got := want{devices: devices, problems: len(problems)}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nScan(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestScanMissingRoot(t *testing.T) {
	if _, _, err := Scan(filepath.Join(t.TempDir(), "nope"), []string{"10de"}, DefaultClassPrefixes); err == nil {
		t.Error("Scan of a missing sysfs root succeeded; want an error saying the devices cannot be listed")
	}
}

// FuzzParseHex feeds arbitrary attribute contents: parsing never panics, and what it accepts has the width.
func FuzzParseHex(f *testing.F) {
	f.Add("0x10de\n", 4)
	f.Add("0x030200", 6)
	f.Add("zz", 4)
	f.Fuzz(func(t *testing.T, s string, width int) {
		if width < 1 || width > 16 {
			return
		}
		v, err := ParseHex(s, width)
		if err == nil && len(v) != width {
			t.Errorf("ParseHex(%q, %d) = %q", s, width, v)
		}
	})
}

func TestClassPrefixesFromEnv(t *testing.T) {
	type want struct {
		Prefixes []string
		Err      string
	}
	cases := map[string]struct {
		reason string
		value  string
		want   want
	}{
		"Unset":  {reason: "Unset, the four accelerator classes.", want: want{Prefixes: DefaultClassPrefixes}},
		"List":   {reason: "A list is split, trimmed and lowercased.", value: "03, 0B,120000", want: want{Prefixes: []string{"03", "0b", "120000"}}},
		"NotHex": {reason: "A prefix that is not hex names the variable.", value: "03,gpu", want: want{Err: `GPUSTACK_PCI_CLASS_PREFIXES="03,gpu": "gpu" is not a PCI class prefix (two, four or six hex digits, such as 03 or 0302)`}},
		"Odd":    {reason: "A prefix of an odd length matches no class byte.", value: "030", want: want{Err: `GPUSTACK_PCI_CLASS_PREFIXES="030": "030" is not a PCI class prefix (two, four or six hex digits, such as 03 or 0302)`}},
		"Empty":  {reason: "An empty entry is refused rather than matching every class.", value: "03,", want: want{Err: `GPUSTACK_PCI_CLASS_PREFIXES="03,": "" is not a PCI class prefix (two, four or six hex digits, such as 03 or 0302)`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			prefixes, err := ClassPrefixesFromEnv(func(k string) string {
				if k == EnvClassPrefixes {
					return tc.value
				}
				return ""
			})
			got := want{Prefixes: prefixes}
			if err != nil {
				got.Err = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nClassPrefixesFromEnv(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
