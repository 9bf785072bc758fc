package smifixture

import (
	"fmt"
	"testing"

	"github.com/gpustack/gpustack-operator/providers/metax"
	"github.com/gpustack/gpustack-operator/providers/smitool"
)

// TestMetaX compares product, memory, index (GPU#n), bus ID (as sysfs writes it, 0000:1a:00.0), driver version
// and runtime (MACA) version. UUID, family, cores, compute capability, health and partitions are not in the
// reports, so the cards read back have no UUID.
func TestMetaX(t *testing.T) {
	full := func(c smitool.Card) smitool.Card {
		c.Manufacturer, c.UUID, c.DriverVersion, c.RuntimeVersion = "metax", "GPU-"+c.BusID, "2.9.8", "2.29.0.19"
		c.Family, c.Cores, c.ComputeCapability = "Xcore1000", 104, "8.0"
		return c
	}
	read := func(c smitool.Card, bus string) smitool.Card {
		c.DriverVersion, c.RuntimeVersion, c.BusID = "2.9.8", "2.29.0.19", bus
		return c
	}
	c500 := newCard(0, "MXC500", 65536, "", "0000:1a:00.0")
	n100 := newCard(1, "MXN100", 16384, "", "00000000:1B:00.0")
	vpu := newCard(7, "MetaX C280 VPU", 65536, "", "9c:00.0")
	runBackendCases(t, "MetaX", MetaX, metax.New, map[string]backendCase{
		"OneCard": {
			reason: "Every field mx-smi reports comes back as rendered.",
			cards:  []smitool.Card{full(c500)},
			want:   []smitool.Card{read(c500, "0000:1a:00.0")},
		},
		"SeveralProducts": {
			reason: "Cards of different products and memory, one of several words, come back in index order.",
			cards:  []smitool.Card{full(vpu), full(n100), full(c500)},
			want:   []smitool.Card{read(c500, "0000:1a:00.0"), read(n100, "0000:1b:00.0"), read(vpu, "0000:9c:00.0")},
		},
		"Unknowns": {
			reason: "Cards without versions are printed with N/A, which reads back as empty.",
			cards:  []smitool.Card{c500},
			want:   []smitool.Card{c500},
		},
		"NoCards": {
			reason: "A node without cards has a memory report of nothing but its header.",
			want:   []smitool.Card{},
		},
		"DriverVersionsDiffer": {
			reason: "The version report has one driver version for the node.",
			cards:  []smitool.Card{full(c500), func() smitool.Card { c := full(n100); c.DriverVersion = "2.9.7"; return c }()},
			err:    "card 1: driver version \"2.9.7\" differs",
		},
		"RuntimeVersionsDiffer": {
			reason: "The version report has one MACA version for the node.",
			cards:  []smitool.Card{full(c500), func() smitool.Card { c := full(n100); c.RuntimeVersion = ""; return c }()},
			err:    "card 1: runtime version \"\" differs",
		},
		"SpacedProduct": {
			reason: "The parser splits the card's line on blanks, so a product with two spaces in a row cannot come back.",
			cards:  []smitool.Card{newCard(2, "MetaX  C500", 65536, "", "0000:1a:00.0")},
			err:    "card 2: product \"MetaX  C500\"",
		},
		"NoProduct": {
			reason: "A card without a product would read back unhealthy.",
			cards:  []smitool.Card{newCard(2, "", 65536, "", "0000:1a:00.0")},
			err:    "card 2: no product",
		},
	})
}

func ExampleMetaX() {
	card := newCard(0, "MXC500", 65536, "", "0000:1a:00.0")
	card.DriverVersion, card.RuntimeVersion = "2.9.8", "2.29.0.19"
	answers, _ := MetaX([]smitool.Card{card})
	fmt.Print(answers["mx-smi --show-memory"].Stdout)
	// Output:
	// mx-smi  version: 2.1.9
	//
	// =================== MetaX System Management Interface Log ===================
	// Timestamp                                         : Mon Nov 30 08:00:00 2026
	//
	// Attached GPUs                                     : 1
	// GPU#0  MXC500  0000:1a:00.0
	//     Memory
	//         vis_vram total                            : 67108864 KB
	//         vis_vram used                             : 0 KB
	//         vis_vram usage                            : 0 %
}
