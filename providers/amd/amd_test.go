package amd

import (
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/providers/pcisysfs/pcisysfstest"
	"github.com/gpustack/gpustack-operator/providers/smitool/smitooltest"
)

func TestDetect(t *testing.T) {
	bus := map[string]map[string]string{
		"0000:0c:00.0": pcisysfstest.Function("0x1002", "0x74a1", "0x038000"),
		"0000:1b:00.0": pcisysfstest.Function("0x1002", "0x74a1", "0x038000"),
	}
	mi300x := func(index int32, uuid string) providers.Device {
		return providers.Device{Manufacturer: "amd", Product: "AMD Instinct MI300X", UUID: uuid, Index: index,
			MemoryMiB: 196592, Family: "gfx942", DriverVersion: "6.8.5"}
	}
	cases := map[string]smitooltest.Case{
		"Report": {
			Reason:  "rocm-smi's report describes both cards, matched to the bus by address.",
			Answers: smitooltest.Runner{Command.String(): {Stdout: smitooltest.Fixture(t, "rocm-smi.json")}},
			Want:    []providers.Device{mi300x(0, "0x18c16c2b04b0a3e2"), mi300x(1, "0x4b9d3c7f13f1a6c1")},
		},
		"Garbage": {
			Reason:  "A report that is not JSON leaves both cards unhealthy and says why.",
			Answers: smitooltest.Runner{Command.String(): {Stdout: "Segmentation fault"}},
			Want: []providers.Device{
				{Manufacturer: "amd", Product: "AMD 74a1", UUID: "amd-pci-0000:0c:00.0", Index: 0, Unhealthy: true},
				{Manufacturer: "amd", Product: "AMD 74a1", UUID: "amd-pci-0000:1b:00.0", Index: 1, Unhealthy: true},
			},
			Err: "cannot parse",
		},
		"ToolFails": {
			Reason:  "A failing tool leaves the cards unhealthy with its error.",
			Answers: smitooltest.Runner{Command.String(): {Err: errors.New("rocm-smi: exit status 1: amdgpu driver not loaded")}},
			Want: []providers.Device{
				{Manufacturer: "amd", Product: "AMD 74a1", UUID: "amd-pci-0000:0c:00.0", Index: 0, Unhealthy: true},
				{Manufacturer: "amd", Product: "AMD 74a1", UUID: "amd-pci-0000:1b:00.0", Index: 1, Unhealthy: true},
			},
			Err: "amdgpu driver not loaded",
		},
	}
	smitooltest.RunDetect(t, bus, New, cases)
}
