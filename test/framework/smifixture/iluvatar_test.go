package smifixture

import (
	"fmt"
	"testing"

	"github.com/gpustack/gpustack-operator/providers/iluvatar"
	"github.com/gpustack/gpustack-operator/providers/smitool"
)

// TestIluvatar compares index, UUID, product, memory, driver version and bus ID, in nvidia-smi's spelling
// (00000000:3B:00.0). Family, cores, compute capability and runtime version are not in the query.
func TestIluvatar(t *testing.T) {
	full := func(c smitool.Card) smitool.Card {
		c.Manufacturer, c.DriverVersion = "iluvatar", "4.2.0"
		c.Family, c.Cores, c.ComputeCapability, c.RuntimeVersion = "Ivcore11", 16, "8.0", "4.2.0"
		return c
	}
	read := func(c smitool.Card, bus string) smitool.Card {
		c.DriverVersion, c.BusID = "4.2.0", bus
		return c
	}
	v150 := newCard(0, "Iluvatar BI-V150", 32768, "GPU-7a1c2e0d-6c3f-5b1a-9a0e-3d2b1c0f4e5a", "0000:3b:00.0")
	v100 := newCard(1, "Iluvatar BI-V100", 32768, "GPU-0e5d4c3b-2a19-4f8e-7d6c-5b4a39281706", "0000:3c:00.0")
	mr100 := newCard(2, "Iluvatar MR-V100", 16384, "GPU-5b4a3928-1706-4f8e-7d6c-0e5d4c3b2a19", "00000000:AF:00.0")
	runBackendCases(t, "Iluvatar", Iluvatar, iluvatar.New, map[string]backendCase{
		"OneCard": {
			reason: "Every field ixsmi's query reports comes back as rendered.",
			cards:  []smitool.Card{full(v150)},
			want:   []smitool.Card{read(v150, "00000000:3B:00.0")},
		},
		"SeveralProducts": {
			reason: "Cards of different products and memory come back in index order.",
			cards:  []smitool.Card{full(mr100), full(v150), full(v100)},
			want: []smitool.Card{read(v150, "00000000:3B:00.0"), read(v100, "00000000:3C:00.0"),
				read(mr100, "00000000:AF:00.0")},
		},
		"Unknowns": {
			reason: "A card without UUID or driver version is printed with [N/A], which reads back as empty.",
			cards:  []smitool.Card{newCard(0, "Iluvatar BI-V150", 32768, "", "3b:00.0")},
			want:   []smitool.Card{newCard(0, "Iluvatar BI-V150", 32768, "", "00000000:3B:00.0")},
		},
		"CommaInProduct": {
			reason: "The parser splits on commas, so a product with one cannot be carried.",
			cards:  []smitool.Card{newCard(4, "Iluvatar BI-V150, rev 2", 32768, "u", "0000:3b:00.0")},
			err:    "card 4: \"Iluvatar BI-V150, rev 2\" has a comma",
		},
		"NoBusID": {
			reason: "A card without a bus ID could not be matched to the bus by address.",
			cards:  []smitool.Card{newCard(2, "Iluvatar BI-V150", 32768, "u", "not-an-address")},
			err:    "card 2 (Iluvatar BI-V150): bus ID \"not-an-address\"",
		},
	})
}

func ExampleIluvatar() {
	card := newCard(0, "Iluvatar BI-V150", 32768, "GPU-7a1c2e0d-6c3f-5b1a-9a0e-3d2b1c0f4e5a", "0000:3b:00.0")
	card.DriverVersion = "4.2.0"
	answers, _ := Iluvatar([]smitool.Card{card})
	for command, answer := range answers {
		fmt.Printf("%s\n%s", command, answer.Stdout)
	}
	// Output:
	// ixsmi --query-gpu=index,uuid,name,memory.total,driver_version,pci.bus_id --format=csv,noheader,nounits
	// 0, GPU-7a1c2e0d-6c3f-5b1a-9a0e-3d2b1c0f4e5a, Iluvatar BI-V150, 32768, 4.2.0, 00000000:3B:00.0
}
