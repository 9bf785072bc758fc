// Package smifixture renders what the vendors' management tools (rocm-smi, npu-smi, cnmon, hy-smi, ixsmi,
// mx-smi, mthreads-gmi, ppu-smi) would print on a node with the given cards, for the stand-in tools of the
// local cluster's real nodes: the hardware is simulated, and the agent's real backends read the tools' output
// as they would on a real node. One file per vendor; each renders exactly the commands its backend's Query
// runs, in the format the backend's parser reads (the round-trip tests hold them to that).
package smifixture

import (
	"encoding/json"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/gpustack/gpustack-operator/providers/smitool"
	"github.com/gpustack/gpustack-operator/providers/smitool/smitooltest"
)

// Answers are a tool's answers by command line, as smitool.Command.String writes it ("npu-smi info -m").
type Answers = smitooltest.Runner

// Renderer renders a vendor's tool answers for a node's cards of that vendor, in index order. Each card's
// BusID is the address the node's PCI bus shows it at (0000:01:00.0).
type Renderer func(cards []smitool.Card) (Answers, error)

// StandInJSON encodes answers as hack/smi-standin's smi-standin.json, which the stand-in tool answers from: each
// command line's stdout and the report files it leaves in its working directory.
func StandInJSON(answers Answers) ([]byte, error) {
	type answer struct {
		Stdout string            `json:"stdout"`
		Files  map[string]string `json:"files,omitempty"`
	}
	out := map[string]answer{}
	for line, a := range answers {
		if a.Err != nil {
			return nil, errors.Errorf("%s: the stand-in tool cannot fail with %v", line, a.Err)
		}
		out[line] = answer{Stdout: a.Stdout, Files: a.Files}
	}
	data, err := json.Marshal(out)
	return data, errors.Wrap(err, "cannot encode the tools' answers")
}
