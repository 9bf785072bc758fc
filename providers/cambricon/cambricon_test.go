package cambricon

import (
	"testing"

	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/providers/pcisysfs/pcisysfstest"
	"github.com/gpustack/gpustack-operator/providers/smitool/smitooltest"
)

const command = "cnmon info -e -m -u -j"

func TestDetect(t *testing.T) {
	bus := map[string]map[string]string{
		"0000:3d:00.0": pcisysfstest.Function("0xcabc", "0x0370", "0x120000"),
		"0000:3e:00.0": pcisysfstest.Function("0xcabc", "0x0370", "0x120000"),
	}
	mlu := func(index int32, uuid string) providers.Device {
		return providers.Device{Manufacturer: "cambricon", Product: "MLU370-X8", UUID: uuid, Index: index,
			MemoryMiB: 24576, DriverVersion: "v5.10.29"}
	}
	cases := map[string]smitooltest.Case{
		"Report": {
			Reason: "The report cnmon writes into its working directory describes both MLUs.",
			Answers: smitooltest.Runner{command: {Files: map[string]string{
				ReportFile: smitooltest.Fixture(t, "cnmon_info.json")}}},
			Want: []providers.Device{
				mlu(0, "MLU-30c4f8a1-2b6d-4e0f-9a3c-5d7e1f2a4b6c"), mlu(1, "MLU-7e1f2a4b-6c30-4f8a-b12b-6d4e0f9a3c5d"),
			},
		},
		"NoReport": {
			Reason:  "cnmon exiting without writing its report leaves the MLUs unhealthy and says so.",
			Answers: smitooltest.Runner{command: {}},
			Want: []providers.Device{
				{Manufacturer: "cambricon", Product: "Cambricon 0370", UUID: "cambricon-pci-0000:3d:00.0", Index: 0, Unhealthy: true},
				{Manufacturer: "cambricon", Product: "Cambricon 0370", UUID: "cambricon-pci-0000:3e:00.0", Index: 1, Unhealthy: true},
			},
			Err: "left no report",
		},
	}
	smitooltest.RunDetect(t, bus, New, cases)
}

func FuzzParse(f *testing.F) {
	f.Add(smitooltest.Fixture(f, "cnmon_info.json"))
	f.Add(`{"CnmonInfo":[{"CardNum":-3,"PhysicalMemUsage":{"Total":1e400}}]}`)
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
