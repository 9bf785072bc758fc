package mthreads

import (
	"testing"

	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/providers/pcisysfs/pcisysfstest"
	"github.com/gpustack/gpustack-operator/providers/smitool/smitooltest"
)

func TestDetect(t *testing.T) {
	bus := map[string]map[string]string{
		"0000:0f:00.0": pcisysfstest.Function("0x1ed5", "0x0323", "0x030000"),
		"0000:10:00.0": pcisysfstest.Function("0x1ed5", "0x0323", "0x030000"),
	}
	s4000 := func(index int32, uuid string) providers.Device {
		return providers.Device{Manufacturer: "mthreads", Product: "MTT S4000", UUID: uuid, Index: index,
			MemoryMiB: 49152, DriverVersion: "2.7.0", RuntimeVersion: "3.1.0"}
	}
	cases := map[string]smitooltest.Case{
		"Report": {
			Reason:  "Each GPU section of mthreads-gmi -q describes a card; versions come from the header.",
			Answers: smitooltest.Runner{Command.String(): {Stdout: smitooltest.Fixture(t, "gmi-q.txt")}},
			Want: []providers.Device{
				s4000(0, "1f0e6c7d-8b21-4a43-9d5e-0c1b2a3f4e5d"), s4000(1, "2a3f4e5d-0c1b-4d5e-8b21-1f0e6c7d9a43"),
			},
		},
		"Garbage": {
			Reason:  "A report without GPU sections leaves the cards unhealthy.",
			Answers: smitooltest.Runner{Command.String(): {Stdout: "Error: failed to initialize mtml\n"}},
			Want: []providers.Device{
				{Manufacturer: "mthreads", Product: "Moore Threads 0323", UUID: "mthreads-pci-0000:0f:00.0", Index: 0, Unhealthy: true},
				{Manufacturer: "mthreads", Product: "Moore Threads 0323", UUID: "mthreads-pci-0000:10:00.0", Index: 1, Unhealthy: true},
			},
			Err: "no GPU section",
		},
	}
	smitooltest.RunDetect(t, bus, New, cases)
}

func FuzzParse(f *testing.F) {
	f.Add(smitooltest.Fixture(f, "gmi-q.txt"))
	f.Add("GPU 0:0.0\n Minor Number : -1\n FB Memory Usage\n  Total : 9e99 GiB\n")
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
