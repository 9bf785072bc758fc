package iluvatar

import (
	"testing"

	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/providers/pcisysfs/pcisysfstest"
	"github.com/gpustack/gpustack-operator/providers/smitool/smitooltest"
)

// query is the command line the backend runs.
const query = Tool + " --query-gpu=index,uuid,name,memory.total,driver_version,pci.bus_id --format=csv,noheader,nounits"

func TestDetect(t *testing.T) {
	bus := map[string]map[string]string{"0000:3b:00.0": pcisysfstest.Function("0x1e3e", "0x0002", "0x030200"), "0000:3c:00.0": pcisysfstest.Function("0x1e3e", "0x0002", "0x030200")}
	cases := map[string]smitooltest.Case{
		"Report": {
			Reason:  "The query's CSV describes every card, matched to the bus by address.",
			Answers: smitooltest.Runner{query: {Stdout: smitooltest.Fixture(t, "ixsmi.csv")}},
			Want: []providers.Device{
				{Manufacturer: "iluvatar", Product: "Iluvatar BI-V150", UUID: "GPU-7a1c2e0d-6c3f-5b1a-9a0e-3d2b1c0f4e5a", MemoryMiB: 32768, DriverVersion: "4.2.0"},
				{Manufacturer: "iluvatar", Product: "Iluvatar BI-V150", UUID: "GPU-0e5d4c3b-2a19-4f8e-7d6c-5b4a39281706", Index: 1, MemoryMiB: 32768, DriverVersion: "4.2.0"},
			},
		},
		"Garbage": {
			Reason:  "Output that is not the queried CSV leaves the cards unhealthy and says which line is wrong.",
			Answers: smitooltest.Runner{query: {Stdout: "Failed to initialize: driver/library version mismatch\n"}},
			Want: []providers.Device{
				{Manufacturer: "iluvatar", Product: "Iluvatar 0002", UUID: "iluvatar-pci-0000:3b:00.0", Unhealthy: true},
				{Manufacturer: "iluvatar", Product: "Iluvatar 0002", UUID: "iluvatar-pci-0000:3c:00.0", Index: 1, Unhealthy: true},
			},
			Err: "line 1",
		},
	}
	smitooltest.RunDetect(t, bus, New, cases)
}
