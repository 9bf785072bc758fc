package smifixture

import (
	"testing"

	"github.com/gpustack/gpustack-operator/providers/smitool"
	"github.com/gpustack/gpustack-operator/providers/thead"
)

// TestTHead compares index, UUID, product, memory, driver version and bus ID, in nvidia-smi's spelling
// (00000000:4F:00.0). Family, cores, compute capability and runtime version are not in the query.
func TestTHead(t *testing.T) {
	full := func(c smitool.Card) smitool.Card {
		c.Manufacturer, c.DriverVersion = "thead", "1.5.1"
		c.Family, c.Cores, c.ComputeCapability, c.RuntimeVersion = "PPU", 64, "1.0", "1.5.1"
		return c
	}
	read := func(c smitool.Card, bus string) smitool.Card {
		c.DriverVersion, c.BusID = "1.5.1", bus
		return c
	}
	zw810e := newCard(0, "PPU-ZW810E", 98304, "PPU-9c2e7f1a-0b3d-4e5f-8a6b-1c2d3e4f5a6b", "0000:4f:00.0")
	zw810 := newCard(1, "PPU-ZW810", 65536, "PPU-1c2d3e4f-5a6b-4e5f-8a6b-9c2e7f1a0b3d", "0001:50:00.0")
	runBackendCases(t, "THead", THead, thead.New, map[string]backendCase{
		"OneCard": {
			reason: "Every field ppu-smi's query reports comes back as rendered.",
			cards:  []smitool.Card{full(zw810e)},
			want:   []smitool.Card{read(zw810e, "00000000:4F:00.0")},
		},
		"SeveralProducts": {
			reason: "Cards of different products and memory come back in index order, a nonzero domain kept.",
			cards:  []smitool.Card{full(zw810), full(zw810e)},
			want:   []smitool.Card{read(zw810e, "00000000:4F:00.0"), read(zw810, "00000001:50:00.0")},
		},
		"NoMemory": {
			reason: "A card without memory would read back unhealthy.",
			cards:  []smitool.Card{newCard(1, "PPU-ZW810E", 0, "u", "0000:4f:00.0")},
			err:    "card 1 (PPU-ZW810E): no memory",
		},
		"SameIndex": {
			reason: "Two cards with one index would be one card to the backend.",
			cards:  []smitool.Card{zw810e, newCard(0, "PPU-ZW810", 65536, "u", "0000:50:00.0")},
			err:    "card 0: another card has the same index",
		},
	})
}
