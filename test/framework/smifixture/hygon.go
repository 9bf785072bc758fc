package smifixture

import (
	"strconv"
	"strings"

	"github.com/gpustack/gpustack-operator/providers/hygon"
	"github.com/gpustack/gpustack-operator/providers/smitool"
)

// Hygon renders hy-smi's JSON report (hygon.Command), rocm-smi's format with hy-smi's lowercase keys, for Hygon
// cards. hy-smi prints no GFX version, so the cards' families do not reach the backend.
func Hygon(cards []smitool.Card) (Answers, error) {
	return rocmSMIAnswers(hygon.Command, cards, func(c smitool.Card) []rocmKey {
		return []rocmKey{
			{"Card series", c.Product},
			// A card does not carry its PCI device ID, and the tool prints N/A for what it cannot read.
			{"Card model", "N/A"},
			{"Card vendor", "Chengdu C-3 Technology Co., Ltd"},
			{"VRAM Total Memory (B)", strconv.FormatInt(c.MemoryMiB<<20, 10)},
			// The simulated cards are idle.
			{"VRAM Total Used Memory (B)", "0"},
			{"PCI Bus", strings.ToUpper(c.BusID)},
			{"Unique ID", orNA(c.UUID)},
		}
	})
}
