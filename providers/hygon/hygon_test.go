package hygon

import (
	"testing"

	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/providers/pcisysfs/pcisysfstest"
	"github.com/gpustack/gpustack-operator/providers/smitool/smitooltest"
)

func TestDetect(t *testing.T) {
	bus := map[string]map[string]string{"0000:9f:00.0": pcisysfstest.Function("0x1d94", "0x6210", "0x120000")}
	cases := map[string]smitooltest.Case{
		"Report": {
			Reason:  "hy-smi's report, in rocm-smi's shape with its own key spellings, describes the DCU.",
			Answers: smitooltest.Runner{Command.String(): {Stdout: smitooltest.Fixture(t, "hy-smi.json")}},
			Want: []providers.Device{{Manufacturer: "hygon", Product: "K100_AI", UUID: "0x0b8f2c1d55a3e701",
				MemoryMiB: 65520, DriverVersion: "6.3.8-V1.5.2"}},
		},
		"NotInstalled": {
			Reason:  "Without hy-smi the DCU on the bus is still reported, unhealthy.",
			Answers: smitooltest.Runner{},
			Want:    []providers.Device{{Manufacturer: "hygon", Product: "Hygon 6210", UUID: "hygon-pci-0000:9f:00.0", Unhealthy: true}},
			Err:     "not installed",
		},
	}
	smitooltest.RunDetect(t, bus, New, cases)
}
