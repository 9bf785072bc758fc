package thead

import (
	"testing"

	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/providers/pcisysfs/pcisysfstest"
	"github.com/gpustack/gpustack-operator/providers/smitool/smitooltest"
)

// query is the command line the backend runs.
const query = Tool + " --query-gpu=index,uuid,name,memory.total,driver_version,pci.bus_id --format=csv,noheader,nounits"

func TestDetect(t *testing.T) {
	bus := map[string]map[string]string{"0000:4f:00.0": pcisysfstest.Function("0x1ded", "0x8020", "0x120000")}
	cases := map[string]smitooltest.Case{
		"Report": {
			Reason:  "The query's CSV describes every card, matched to the bus by address.",
			Answers: smitooltest.Runner{query: {Stdout: smitooltest.Fixture(t, "ppu-smi.csv")}},
			Want: []providers.Device{
				{Manufacturer: "thead", Product: "PPU-ZW810E", UUID: "PPU-9c2e7f1a-0b3d-4e5f-8a6b-1c2d3e4f5a6b", MemoryMiB: 98304, DriverVersion: "1.5.1"},
			},
		},
		"Garbage": {
			Reason:  "Output that is not the queried CSV leaves the cards unhealthy and says which line is wrong.",
			Answers: smitooltest.Runner{query: {Stdout: "Failed to initialize: driver/library version mismatch\n"}},
			Want: []providers.Device{
				{Manufacturer: "thead", Product: "T-Head 8020", UUID: "thead-pci-0000:4f:00.0", Unhealthy: true},
			},
			Err: "line 1",
		},
	}
	smitooltest.RunDetect(t, bus, New, cases)
}
