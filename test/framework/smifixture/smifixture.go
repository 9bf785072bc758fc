// Package smifixture renders what the vendors' management tools (rocm-smi, npu-smi, cnmon, hy-smi, ixsmi,
// mx-smi, mthreads-gmi, ppu-smi) would print on a node with the given cards, for the stand-in tools of the
// local cluster's real nodes: the hardware is simulated, and the agent's real backends read the tools' output
// as they would on a real node. One file per vendor; each renders exactly the commands its backend's Query
// runs, in the format the backend's parser reads (the round-trip tests hold them to that).
package smifixture

import (
	"github.com/gpustack/gpustack-operator/providers/smitool"
	"github.com/gpustack/gpustack-operator/providers/smitool/smitooltest"
)

// Answers are a tool's answers by command line, as smitool.Command.String writes it ("npu-smi info -m").
type Answers = smitooltest.Runner

// Renderer renders a vendor's tool answers for a node's cards of that vendor, in index order. Each card's
// BusID is the address the node's PCI bus shows it at (0000:01:00.0).
type Renderer func(cards []smitool.Card) (Answers, error)
