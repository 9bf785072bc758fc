package smifixture

import (
	"fmt"
	"testing"

	"github.com/gpustack/gpustack-operator/providers/ascend"
	"github.com/gpustack/gpustack-operator/providers/smitool"
)

// TestAscend compares product (Ascend + Chip Name), memory (HBM or DDR capacity), UUID (VDie ID), driver
// version (the NPU's Software Version), index (Chip Logic ID) and bus ID, in npu-smi's spelling (0000:C1:00.0).
// Family, cores, compute capability, runtime version, health and partitions are not in the reports.
func TestAscend(t *testing.T) {
	full := func(c smitool.Card) smitool.Card {
		c.Manufacturer, c.DriverVersion = "ascend", "24.1.rc2"
		c.Family, c.Cores, c.ComputeCapability, c.RuntimeVersion = "Ascend910B", 24, "2.2", "8.0.RC2"
		return c
	}
	read := func(c smitool.Card, bus string) smitool.Card {
		c.DriverVersion, c.BusID = "24.1.rc2", bus
		return c
	}
	b3 := newCard(0, "Ascend 910B3", 65536, "4A4B0A0D-20108004-9E03D9A5-2E5D9D30-0C100000", "0000:c1:00.0")
	b4 := newCard(1, "Ascend 910B4", 32768, "4A4B0A0D-20108004-9E03D9A5-2E5D9D31-0C100000", "0000:01:00.0")
	p3 := newCard(12, "Ascend 310P3", 21527, "5C2E1F0A-30207001-8E13C9B4-1F4D8C20-0B200000", "00000000:81:00.0")
	runBackendCases(t, "Ascend", Ascend, ascend.New, map[string]backendCase{
		"OneCard": {
			reason: "Every field npu-smi reports comes back as rendered.",
			cards:  []smitool.Card{full(b3)},
			want:   []smitool.Card{read(b3, "0000:C1:00.0")},
		},
		"SeveralProducts": {
			reason: "Chips of different products and memory, HBM and DDR, come back in index order.",
			cards:  []smitool.Card{full(p3), full(b4), full(b3)},
			want:   []smitool.Card{read(b3, "0000:C1:00.0"), read(b4, "0000:01:00.0"), read(p3, "0000:81:00.0")},
		},
		"DriverVersionsDiffer": {
			reason: "npu-smi reports a driver version per NPU, and each card is an NPU of its own.",
			cards:  []smitool.Card{full(b3), b4},
			want:   []smitool.Card{read(b3, "0000:C1:00.0"), newCard(1, "Ascend 910B4", 32768, b4.UUID, "0000:01:00.0")},
		},
		"Unknowns": {
			reason: "A chip without UUID or driver version is printed with NA, which reads back as empty.",
			cards:  []smitool.Card{newCard(0, "Ascend 910B3", 65536, "", "c1:00.0")},
			want:   []smitool.Card{newCard(0, "Ascend 910B3", 65536, "", "0000:C1:00.0")},
		},
		"NoCards": {
			reason: "A node without NPUs has a chip map of nothing but its header.",
		},
		"NotAscend": {
			reason: "The backend names a chip Ascend <chip name>, so another product cannot come back.",
			cards:  []smitool.Card{newCard(3, "Atlas 300I Pro", 24576, "", "0000:c1:00.0")},
			err:    "card 3: product \"Atlas 300I Pro\"",
		},
		"UUIDNotVDieID": {
			reason: "The backend joins the VDie ID's words with dashes, so a UUID with blanks cannot come back.",
			cards:  []smitool.Card{newCard(3, "Ascend 910B3", 65536, "npu 3", "0000:c1:00.0")},
			err:    "card 3 (Ascend 910B3): UUID \"npu 3\"",
		},
		"DriverVersionNA": {
			reason: "A driver version npu-smi's readers take for not available cannot come back.",
			cards:  []smitool.Card{func() smitool.Card { c := b3; c.DriverVersion = "NA"; return c }()},
			err:    "card 0 (Ascend 910B3): driver version \"NA\"",
		},
		"NoMemory": {
			reason: "A chip without memory would read back unhealthy.",
			cards:  []smitool.Card{newCard(3, "Ascend 910B3", 0, "", "0000:c1:00.0")},
			err:    "card 3 (Ascend 910B3): no memory",
		},
		"IndexTooLarge": {
			reason: "The chip map's IDs stop at 65536.",
			cards:  []smitool.Card{newCard(70000, "Ascend 910B3", 65536, "", "0000:c1:00.0")},
			err:    "card 70000 (Ascend 910B3): npu-smi's IDs stop at 65536",
		},
		"SameIndex": {
			reason: "Two chips with one logical ID would be one chip to the backend.",
			cards:  []smitool.Card{b3, newCard(0, "Ascend 910B4", 32768, "", "0000:01:00.0")},
			err:    "card 0: another card has the same index",
		},
	})
}

func ExampleAscend() {
	card := newCard(0, "Ascend 910B3", 65536, "4A4B0A0D-20108004-9E03D9A5-2E5D9D30-0C100000", "0000:c1:00.0")
	answers, _ := Ascend([]smitool.Card{card})
	fmt.Print(answers["npu-smi info -m"].Stdout, answers["npu-smi info -t memory -i 0 -c 0"].Stdout)
	// Output:
	//         NPU ID                         Chip ID                        Chip Logic ID                  Chip Name
	//         0                              0                              0                              Ascend 910B3
	//         0                              1                              -                              Mcu
	//         NPU ID                         : 0
	//         Chip ID                        : 0
	//         DDR Capacity(MB)               : 0
	//         DDR Clock Speed(MHz)           : 0
	//         DDR Usage Rate(%)              : 0
	//         HBM Capacity(MB)               : 65536
	//         HBM Clock Speed(MHz)           : 1600
	//         HBM Usage Rate(%)              : 0
	//         Aicpu Usage Rate(%)            : 0
}
