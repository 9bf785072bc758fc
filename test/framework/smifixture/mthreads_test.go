package smifixture

import (
	"fmt"
	"testing"

	"github.com/gpustack/gpustack-operator/providers/mthreads"
	"github.com/gpustack/gpustack-operator/providers/smitool"
)

// TestMThreads compares product, memory, UUID, index (Minor Number), driver version, runtime (MUSA) version and
// bus ID, in nvidia-smi -q's spelling (00000000:0F:00.0). Family, cores, compute capability, health and
// partitions are not in the report.
func TestMThreads(t *testing.T) {
	full := func(c smitool.Card) smitool.Card {
		c.Manufacturer, c.DriverVersion, c.RuntimeVersion = "mthreads", "2.7.0", "3.1.0"
		c.Family, c.Cores, c.ComputeCapability = "QY2", 8192, "2.2"
		return c
	}
	read := func(c smitool.Card, bus string) smitool.Card {
		c.DriverVersion, c.RuntimeVersion, c.BusID = "2.7.0", "3.1.0", bus
		return c
	}
	s4000 := newCard(0, "MTT S4000", 49152, "1f0e6c7d-8b21-4a43-9d5e-0c1b2a3f4e5d", "0000:0f:00.0")
	s80 := newCard(1, "MTT S80", 16384, "2a3f4e5d-0c1b-4d5e-8b21-1f0e6c7d9a43", "10:00.0")
	s3000 := newCard(11, "MTT S3000", 32768, "3b4c5d6e-7f80-4a91-b2c3-d4e5f6a7b8c9", "0001:8a:00.0")
	runBackendCases(t, "MThreads", MThreads, mthreads.New, map[string]backendCase{
		"OneCard": {
			reason: "Every field mthreads-gmi reports comes back as rendered.",
			cards:  []smitool.Card{full(s4000)},
			want:   []smitool.Card{read(s4000, "00000000:0F:00.0")},
		},
		"SeveralProducts": {
			reason: "Cards of different products and memory come back in index order, a nonzero domain kept.",
			cards:  []smitool.Card{full(s3000), full(s80), full(s4000)},
			want: []smitool.Card{read(s4000, "00000000:0F:00.0"), read(s80, "00000000:10:00.0"),
				read(s3000, "00000001:8A:00.0")},
		},
		"Unknowns": {
			reason: "A card without UUID or versions is printed with N/A, which reads back as empty.",
			cards:  []smitool.Card{newCard(0, "MTT S4000", 49152, "", "0000:0f:00.0")},
			want:   []smitool.Card{newCard(0, "MTT S4000", 49152, "", "00000000:0F:00.0")},
		},
		"NoCards": {
			reason: "A node without cards reports 0 attached GPUs, which the parser takes for no cards rather than garbage.",
			want:   []smitool.Card{},
		},
		"DriverVersionsDiffer": {
			reason: "The report has one driver version for the node.",
			cards:  []smitool.Card{full(s4000), s80},
			err:    "card 1: driver version \"\" differs",
		},
		"UUIDNA": {
			reason: "A UUID the parser takes for not available cannot come back.",
			cards:  []smitool.Card{newCard(2, "MTT S80", 16384, "N/A", "0000:0f:00.0")},
			err:    "card 2 (MTT S80): UUID \"N/A\"",
		},
		"SameIndex": {
			reason: "Two cards with one minor number would be one card to the backend.",
			cards:  []smitool.Card{s4000, newCard(0, "MTT S80", 16384, "u", "0000:10:00.0")},
			err:    "card 0: another card has the same index",
		},
	})
}

func ExampleMThreads() {
	card := newCard(0, "MTT S4000", 49152, "1f0e6c7d-8b21-4a43-9d5e-0c1b2a3f4e5d", "0000:0f:00.0")
	card.DriverVersion, card.RuntimeVersion = "2.7.0", "3.1.0"
	answers, _ := MThreads([]smitool.Card{card})
	fmt.Print(answers[mthreads.Command.String()].Stdout)
	// Output:
	// Timestamp                          : Mon Nov 30 08:00:00 2026
	// Driver Version                     : 2.7.0
	// MUSA Version                       : 3.1.0
	// Attached GPUs                      : 1
	//
	// GPU 00000000:0F:00.0
	//     Product Name                   : MTT S4000
	//     Product Brand                  : MTT
	//     Minor Number                   : 0
	//     GPU UUID                       : 1f0e6c7d-8b21-4a43-9d5e-0c1b2a3f4e5d
	//     FB Memory Usage
	//         Total                      : 49152MiB
	//         Used                       : 0MiB
	//         Free                       : 49152MiB
}
