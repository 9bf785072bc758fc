package smifixture

import (
	"fmt"
	"testing"

	"github.com/gpustack/gpustack-operator/providers/cambricon"
	"github.com/gpustack/gpustack-operator/providers/smitool"
)

// TestCambricon compares product, memory, UUID, driver version, index (CardNum) and bus ID, in cnmon's spelling
// (0000:3D:00.0). The backend's Query runs cnmon in a temporary directory of its own, where the runner writes the
// report. Family, cores, compute capability, runtime version, health and partitions are not in the report.
func TestCambricon(t *testing.T) {
	full := func(c smitool.Card) smitool.Card {
		c.Manufacturer, c.DriverVersion = "cambricon", "v5.10.29"
		c.Family, c.Cores, c.ComputeCapability, c.RuntimeVersion = "MLU300", 64, "3.0", "3.10.2"
		return c
	}
	read := func(c smitool.Card, bus string) smitool.Card {
		c.DriverVersion, c.BusID = "v5.10.29", bus
		return c
	}
	x8 := newCard(0, "MLU370-X8", 24576, "MLU-30c4f8a1-2b6d-4e0f-9a3c-5d7e1f2a4b6c", "0000:3d:00.0")
	m5 := newCard(1, "MLU290-M5", 32768, "MLU-7e1f2a4b-6c30-4f8a-b12b-6d4e0f9a3c5d", "00000000:3E:00.0")
	s4 := newCard(10, "MLU370-S4", 24576, "MLU-1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d", "b1:00.0")
	runBackendCases(t, "Cambricon", Cambricon, cambricon.New, map[string]backendCase{
		"OneCard": {
			reason: "Every field cnmon reports comes back as rendered.",
			cards:  []smitool.Card{full(x8)},
			want:   []smitool.Card{read(x8, "0000:3D:00.0")},
		},
		"SeveralProducts": {
			reason: "Cards of different products and memory come back in index order, bus IDs in cnmon's spelling.",
			cards:  []smitool.Card{full(s4), full(m5), full(x8)},
			want:   []smitool.Card{read(x8, "0000:3D:00.0"), read(m5, "0000:3E:00.0"), read(s4, "0000:B1:00.0")},
		},
		"Unknowns": {
			reason: "A card without UUID or driver version is written with N/A, which reads back as empty.",
			cards:  []smitool.Card{newCard(0, "MLU370-X8", 24576, "", "0000:3d:00.0")},
			want:   []smitool.Card{newCard(0, "MLU370-X8", 24576, "", "0000:3D:00.0")},
		},
		"NoCards": {
			reason: "A node without cards has a report with an empty list.",
			want:   []smitool.Card{},
		},
		"PaddedProduct": {
			reason: "The parser trims values, so a product with blanks around it cannot come back.",
			cards:  []smitool.Card{newCard(2, " MLU370-X8", 24576, "", "0000:3d:00.0")},
			err:    "card 2 ( MLU370-X8): product",
		},
		"NoBusID": {
			reason: "A card without a bus ID could not be matched to the bus by address.",
			cards:  []smitool.Card{newCard(2, "MLU370-X8", 24576, "u", "")},
			err:    "card 2 (MLU370-X8): bus ID",
		},
	})
}

func ExampleCambricon() {
	card := newCard(0, "MLU370-X8", 24576, "MLU-30c4f8a1-2b6d-4e0f-9a3c-5d7e1f2a4b6c", "0000:3d:00.0")
	card.DriverVersion = "v5.10.29"
	answers, _ := Cambricon([]smitool.Card{card})
	fmt.Print(answers["cnmon info -e -m -u -j"].Files[cambricon.ReportFile])
	// Output:
	// {
	//     "CnmonInfo": [
	//         {
	//             "CardNum": 0,
	//             "ProductName": "MLU370-X8",
	//             "UUID": "MLU-30c4f8a1-2b6d-4e0f-9a3c-5d7e1f2a4b6c",
	//             "PCIeBusID": "0000:3D:00.0",
	//             "DriverVersion": "v5.10.29",
	//             "PhysicalMemUsage": {
	//                 "Total": 24576,
	//                 "Used": 0
	//             },
	//             "Utilization": {
	//                 "MLUAverage": 0
	//             }
	//         }
	//     ]
	// }
}
