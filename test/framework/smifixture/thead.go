package smifixture

import (
	"github.com/gpustack/gpustack-operator/providers/smitool"
	"github.com/gpustack/gpustack-operator/providers/thead"
)

// THead renders ppu-smi's answer to the nvidia-smi-style query the T-Head backend runs, for T-Head cards.
func THead(cards []smitool.Card) (Answers, error) {
	return nvidiaSMIQueryAnswers(thead.Tool, cards)
}
