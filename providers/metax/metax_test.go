package metax

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/providers/pcisysfs/pcisysfstest"
	"github.com/gpustack/gpustack-operator/providers/smitool/smitooltest"
)

func TestDetect(t *testing.T) {
	bus := map[string]map[string]string{
		"0000:1a:00.0": pcisysfstest.Function("0x9999", "0x4001", "0x030200"),
		"0000:1b:00.0": pcisysfstest.Function("0x9999", "0x4001", "0x030200"),
	}
	c500 := func(index int32, driver, maca string) providers.Device {
		return providers.Device{Manufacturer: "metax", Product: "MXC500", UUID: "metax-" + string(rune('0'+index)),
			Index: index, MemoryMiB: 65536, DriverVersion: driver, RuntimeVersion: maca}
	}
	cases := map[string]struct {
		reason  string
		answers smitooltest.Runner
		want    []providers.Device
		err     string
	}{
		"Reports": {
			reason: "The memory report names each board and its address; the version report adds the driver and MACA versions.",
			answers: smitooltest.Runner{
				"mx-smi --show-memory":  {Stdout: smitooltest.Fixture(t, "show-memory.txt")},
				"mx-smi --show-version": {Stdout: smitooltest.Fixture(t, "show-version.txt")},
			},
			want: []providers.Device{c500(0, "2.9.8", "2.29.0.19"), c500(1, "2.9.8", "2.29.0.19")},
		},
		"VersionsUnreadable": {
			reason: "A failing version report only leaves the versions out.",
			answers: smitooltest.Runner{
				"mx-smi --show-memory":  {Stdout: smitooltest.Fixture(t, "show-memory.txt")},
				"mx-smi --show-version": {Err: errors.New("mx-smi: exit status 1")},
			},
			want: []providers.Device{c500(0, "", ""), c500(1, "", "")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := smitooltest.Devices(New(pcisysfstest.Tree(t, bus), tc.answers))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nDetect(...): -want, +got:\n%s", tc.reason, diff)
			}
			if tc.err == "" && err != "" || !strings.Contains(err, tc.err) {
				t.Errorf("%s\nDetect(...): error %q, want one containing %q", tc.reason, err, tc.err)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add(smitooltest.Fixture(f, "show-memory.txt"))
	f.Add("GPU#-1\nGPU#x y\nGPU#2 0000:1a:00.0\n vis_vram total : 1e308 KB\n")
	f.Fuzz(func(t *testing.T, s string) {
		cards, err := Parse([]byte(s))
		if err != nil {
			return
		}
		for _, c := range cards {
			if c.MemoryMiB < 0 || c.Index < 0 {
				t.Fatalf("card %+v", c)
			}
		}
	})
}
