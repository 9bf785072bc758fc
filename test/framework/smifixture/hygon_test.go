package smifixture

import (
	"fmt"
	"testing"

	"github.com/gpustack/gpustack-operator/providers/hygon"
	"github.com/gpustack/gpustack-operator/providers/smitool"
)

// TestHygon compares product, memory, UUID (Unique ID), driver version, index (cardN) and bus ID, in hy-smi's
// spelling (0000:9F:00.0). Family, cores, compute capability and runtime version are not in the report.
func TestHygon(t *testing.T) {
	full := func(c smitool.Card) smitool.Card {
		c.Manufacturer, c.Family, c.DriverVersion = "hygon", "gfx928", "6.3.8-V1.5.2"
		c.Cores, c.ComputeCapability, c.RuntimeVersion = 120, "9.2", "6.2.0"
		return c
	}
	read := func(c smitool.Card, bus string) smitool.Card {
		c.DriverVersion, c.BusID = "6.3.8-V1.5.2", bus
		return c
	}
	k100 := newCard(0, "K100_AI", 65520, "0x0b8f2c1d55a3e701", "0000:9f:00.0")
	z100 := newCard(1, "Z100L", 32752, "0x1c7d3e2f60b4a812", "00000000:A0:00.0")
	runBackendCases(t, "Hygon", Hygon, hygon.New, map[string]backendCase{
		"OneCard": {
			reason: "Every field hy-smi reports comes back as rendered.",
			cards:  []smitool.Card{full(k100)},
			want:   []smitool.Card{read(k100, "0000:9F:00.0")},
		},
		"SeveralProducts": {
			reason: "Cards of different products and memory come back in index order, bus IDs in hy-smi's spelling.",
			cards:  []smitool.Card{full(z100), full(k100)},
			want:   []smitool.Card{read(k100, "0000:9F:00.0"), read(z100, "0000:A0:00.0")},
		},
		"Unknowns": {
			reason: "A card without UUID or driver version is printed with N/A, which reads back as empty.",
			cards:  []smitool.Card{newCard(0, "K100_AI", 65520, "", "9f:00.0")},
			want:   []smitool.Card{newCard(0, "K100_AI", 65520, "", "0000:9F:00.0")},
		},
		"DriverVersionsDiffer": {
			reason: "The report has one driver version for the node.",
			cards:  []smitool.Card{full(k100), z100},
			err:    "card 1: driver version",
		},
		"NoBusID": {
			reason: "A card without a bus ID could not be matched to the bus by address.",
			cards:  []smitool.Card{newCard(2, "K100_AI", 65520, "u", "")},
			err:    "card 2 (K100_AI): bus ID",
		},
	})
}

func ExampleHygon() {
	card := newCard(0, "K100_AI", 65520, "0x0b8f2c1d55a3e701", "0000:9f:00.0")
	card.DriverVersion = "6.3.8-V1.5.2"
	answers, _ := Hygon([]smitool.Card{card})
	fmt.Print(answers[hygon.Command.String()].Stdout)
	// Output:
	// {"card0": {"Card series": "K100_AI", "Card model": "N/A", "Card vendor": "Chengdu C-3 Technology Co., Ltd", "VRAM Total Memory (B)": "68702699520", "VRAM Total Used Memory (B)": "0", "PCI Bus": "0000:9F:00.0", "Unique ID": "0x0b8f2c1d55a3e701"}, "system": {"Driver version": "6.3.8-V1.5.2"}}
}
