package metax

import (
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

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
		return providers.Device{Manufacturer: "metax", Product: "MXC500", UUID: "metax-" + string('0'+index),
			Index: index, MemoryMiB: 65536, DriverVersion: driver, RuntimeVersion: maca}
	}
	cases := map[string]smitooltest.Case{
		"Reports": {
			Reason: "The memory report names each board and its address; the version report adds the driver and MACA versions.",
			Answers: smitooltest.Runner{
				"mx-smi --show-memory":  {Stdout: smitooltest.Fixture(t, "show-memory.txt")},
				"mx-smi --show-version": {Stdout: smitooltest.Fixture(t, "show-version.txt")},
			},
			Want: []providers.Device{c500(0, "2.9.8", "2.29.0.19"), c500(1, "2.9.8", "2.29.0.19")},
		},
		"VersionsUnreadable": {
			Reason: "A failing version report only leaves the versions out.",
			Answers: smitooltest.Runner{
				"mx-smi --show-memory":  {Stdout: smitooltest.Fixture(t, "show-memory.txt")},
				"mx-smi --show-version": {Err: errors.New("mx-smi: exit status 1")},
			},
			Want: []providers.Device{c500(0, "", ""), c500(1, "", "")},
		},
	}
	smitooltest.RunDetect(t, bus, New, cases)
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
