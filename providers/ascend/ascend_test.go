package ascend

import (
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/providers/pcisysfs/pcisysfstest"
	"github.com/gpustack/gpustack-operator/providers/smitool/smitooltest"
)

// answers are npu-smi's reports of a two-NPU 910B3 node.
func answers(t *testing.T) smitooltest.Runner {
	r := smitooltest.Runner{"npu-smi info -m": {Stdout: smitooltest.Fixture(t, "info-m.txt")}}
	for _, i := range []string{"0", "1"} {
		r["npu-smi info -t board -i "+i] = smitooltest.Answer{Stdout: smitooltest.Fixture(t, "board-"+i+".txt")}
		r["npu-smi info -t board -i "+i+" -c 0"] = smitooltest.Answer{Stdout: smitooltest.Fixture(t, "board-"+i+"-0.txt")}
		r["npu-smi info -t memory -i "+i+" -c 0"] = smitooltest.Answer{Stdout: smitooltest.Fixture(t, "memory-"+i+"-0.txt")}
	}
	return r
}

func TestDetect(t *testing.T) {
	bus := map[string]map[string]string{
		"0000:c1:00.0": pcisysfstest.Function("0x19e5", "0xd802", "0x120000"),
		"0000:01:00.0": pcisysfstest.Function("0x19e5", "0xd802", "0x120000"),
	}
	npu := func(index int32, uuid string) providers.Device {
		return providers.Device{Manufacturer: "ascend", Product: "Ascend 910B3", UUID: uuid, Index: index,
			MemoryMiB: 65536, DriverVersion: "24.1.rc2"}
	}
	memoryFails := answers(t)
	memoryFails["npu-smi info -t memory -i 1 -c 0"] = smitooltest.Answer{Err: errors.New("npu-smi: exit status 255: device busy")}
	cases := map[string]smitooltest.Case{
		"Reports": {
			Reason:  "The chip map and each chip's reports describe both NPUs; the management controllers are skipped.",
			Answers: answers(t),
			Want: []providers.Device{
				npu(0, "4A4B0A0D-20108004-9E03D9A5-2E5D9D30-0C100000"),
				npu(1, "4A4B0A0D-20108004-9E03D9A5-2E5D9D31-0C100000"),
			},
		},
		"OneChipUnreadable": {
			Reason:  "A chip whose memory report fails is reported unhealthy; the other stays healthy.",
			Answers: memoryFails,
			Want: []providers.Device{
				npu(0, "4A4B0A0D-20108004-9E03D9A5-2E5D9D30-0C100000"),
				func() providers.Device {
					d := npu(1, "4A4B0A0D-20108004-9E03D9A5-2E5D9D31-0C100000")
					d.MemoryMiB, d.Unhealthy = 0, true
					return d
				}(),
			},
		},
		"NoDriver": {
			Reason:  "Without npu-smi both NPUs on the bus are reported unhealthy.",
			Answers: smitooltest.Runner{},
			Want: []providers.Device{
				{Manufacturer: "ascend", Product: "Huawei Ascend d802", UUID: "ascend-pci-0000:01:00.0", Index: 0, Unhealthy: true},
				{Manufacturer: "ascend", Product: "Huawei Ascend d802", UUID: "ascend-pci-0000:c1:00.0", Index: 1, Unhealthy: true},
			},
			Err: "not installed",
		},
	}
	smitooltest.RunDetect(t, bus, New, cases)
}

func TestParseChipMapRefusesGarbage(t *testing.T) {
	if _, err := ParseChipMap([]byte("dcmi module initialize failed. ret is -8005\n")); err == nil {
		t.Error("ParseChipMap(an error message): want an error")
	}
}

func FuzzParseChipMap(f *testing.F) {
	f.Add("NPU ID Chip ID Chip Logic ID Chip Name\n0 0 0 Ascend 910B3\n0 1 - Mcu\n")
	f.Add("1 2 3\n-1 -1 -1 x\n")
	f.Fuzz(func(t *testing.T, s string) {
		chips, err := ParseChipMap([]byte(s))
		if err != nil {
			return
		}
		for _, c := range chips {
			if c.NPU < 0 || c.Chip < 0 || c.Logical < 0 {
				t.Fatalf("chip %+v", c)
			}
		}
	})
}
