package smifixture

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/providers/amd"
	"github.com/gpustack/gpustack-operator/providers/smitool"
)

// backendCase is one round trip: the cards rendered, the cards the vendor's real Query reads back from the
// rendering, and a fragment of the error wanted ("" for none).
type backendCase struct {
	reason string
	cards  []smitool.Card
	want   []smitool.Card
	err    string
}

// runBackendCases renders each case's cards with render and reads them back with the Query of the backend
// newBackend builds, as the agent would on a node whose tool printed the rendering. Manufacturer is never
// compared: the backend's Detect stamps it, not the tool.
func runBackendCases(t *testing.T, fn string, render Renderer, newBackend func(string, smitool.Runner) *smitool.Backend, cases map[string]backendCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []smitool.Card
			answers, err := render(tc.cards)
			if err == nil {
				got, err = newBackend("", answers).Query(context.Background(), answers)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n%s(...): -want, +got:\n%s", tc.reason, fn, diff)
			}
			switch {
			case err != nil && tc.err == "":
				t.Errorf("%s\n%s(...): unexpected error %q", tc.reason, fn, err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("%s\n%s(...): error %v, want one containing %q", tc.reason, fn, err, tc.err)
			}
		})
	}
}

// newCard is a card as the tests write it.
func newCard(index int32, product string, mib int64, uuid, bus string) smitool.Card {
	return smitool.Card{BusID: bus, Device: providers.Device{Index: index, Product: product, MemoryMiB: mib, UUID: uuid}}
}

// TestAMD compares product, memory, UUID (Unique ID), family (GFX Version), driver version, index (cardN) and
// bus ID, in rocm-smi's spelling (0000:1B:00.0). Cores, compute capability and runtime version are not in the
// report.
func TestAMD(t *testing.T) {
	full := func(c smitool.Card) smitool.Card {
		c.Manufacturer, c.Family, c.DriverVersion = "amd", "gfx942", "6.8.5"
		c.Cores, c.ComputeCapability, c.RuntimeVersion = 304, "9.4", "6.2.0"
		return c
	}
	read := func(c smitool.Card) smitool.Card {
		c.Family, c.DriverVersion = "gfx942", "6.8.5"
		return c
	}
	mi300x := newCard(0, "AMD Instinct MI300X", 196592, "0x18c16c2b04b0a3e2", "0000:1b:00.0")
	mi210 := newCard(1, "AMD Instinct MI210", 65520, "0x4b9d3c7f13f1a6c1", "0000:0c:00.0")
	mi250x := newCard(10, "AMD Instinct MI250X", 131072, "0x2c71a0b3e5d49f08", "0000:c1:00.0")
	withBus := func(c smitool.Card, bus string) smitool.Card {
		c.BusID = bus
		return c
	}
	runBackendCases(t, "AMD", AMD, amd.New, map[string]backendCase{
		"OneCard": {
			reason: "Every field rocm-smi reports comes back as rendered.",
			cards:  []smitool.Card{full(mi300x)},
			want:   []smitool.Card{read(withBus(mi300x, "0000:1B:00.0"))},
		},
		"SeveralProducts": {
			reason: "Cards of different products and memory come back in index order, card10 after card1.",
			cards:  []smitool.Card{full(mi250x), full(mi210), full(mi300x)},
			want: []smitool.Card{read(withBus(mi300x, "0000:1B:00.0")), read(withBus(mi210, "0000:0C:00.0")),
				read(withBus(mi250x, "0000:C1:00.0"))},
		},
		"BusIDSpellings": {
			reason: "Bus IDs in any spelling sysfs or a tool uses are printed as rocm-smi prints them.",
			cards:  []smitool.Card{full(withBus(mi300x, "00000000:1B:00.0")), full(withBus(mi210, "0c:00.0"))},
			want:   []smitool.Card{read(withBus(mi300x, "0000:1B:00.0")), read(withBus(mi210, "0000:0C:00.0"))},
		},
		"Unknowns": {
			reason: "A card without UUID, family or driver version is printed with N/A, which reads back as empty.",
			cards:  []smitool.Card{newCard(0, "AMD Instinct MI300X", 196592, "", "0000:1b:00.0")},
			want:   []smitool.Card{newCard(0, "AMD Instinct MI300X", 196592, "", "0000:1B:00.0")},
		},
		"NoCards": {
			reason: "A node without cards has a report of nothing but the system.",
		},
		"DriverVersionsDiffer": {
			reason: "The report has one driver version for the node.",
			cards:  []smitool.Card{full(mi300x), func() smitool.Card { c := full(mi210); c.DriverVersion = "6.7.0"; return c }()},
			err:    "card 1: driver version",
		},
		"NoProduct": {
			reason: "A card without a product would read back unhealthy.",
			cards:  []smitool.Card{newCard(3, "", 1024, "u", "0000:1b:00.0")},
			err:    "card 3: no product",
		},
		"NoMemory": {
			reason: "A card without memory would read back unhealthy.",
			cards:  []smitool.Card{newCard(3, "AMD Instinct MI300X", 0, "u", "0000:1b:00.0")},
			err:    "card 3 (AMD Instinct MI300X): no memory",
		},
		"NoBusID": {
			reason: "A card without a bus ID could not be matched to the bus by address.",
			cards:  []smitool.Card{newCard(3, "AMD Instinct MI300X", 1024, "u", "")},
			err:    "card 3 (AMD Instinct MI300X): bus ID",
		},
		"SameIndex": {
			reason: "Two cards with one index would be one cardN key.",
			cards:  []smitool.Card{mi300x, withBus(mi300x, "0000:0c:00.0")},
			err:    "card 0: another card has the same index",
		},
	})
}

func ExampleAMD() {
	card := newCard(0, "AMD Instinct MI300X", 196592, "0x18c16c2b04b0a3e2", "0000:1b:00.0")
	card.Family, card.DriverVersion = "gfx942", "6.8.5"
	answers, _ := AMD([]smitool.Card{card})
	fmt.Print(answers[amd.Command.String()].Stdout)
	// Output:
	// {"card0": {"Card Series": "AMD Instinct MI300X", "Card Model": "N/A", "Card Vendor": "Advanced Micro Devices, Inc. [AMD/ATI]", "Card SKU": "N/A", "GFX Version": "gfx942", "VRAM Total Memory (B)": "206141652992", "VRAM Total Used Memory (B)": "0", "PCI Bus": "0000:1B:00.0", "Unique ID": "0x18c16c2b04b0a3e2"}, "system": {"Driver version": "6.8.5"}}
}
