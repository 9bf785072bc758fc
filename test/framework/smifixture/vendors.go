package smifixture

import (
	"github.com/gpustack/gpustack-operator/providers/amd"
	"github.com/gpustack/gpustack-operator/providers/ascend"
	"github.com/gpustack/gpustack-operator/providers/cambricon"
	"github.com/gpustack/gpustack-operator/providers/hygon"
	"github.com/gpustack/gpustack-operator/providers/iluvatar"
	"github.com/gpustack/gpustack-operator/providers/metax"
	"github.com/gpustack/gpustack-operator/providers/mthreads"
	"github.com/gpustack/gpustack-operator/providers/thead"
)

// Tool is one vendor's management tool: its name and what it prints for a node's cards.
type Tool struct {
	// Name is the tool's command name.
	Name string
	// Render renders its answers.
	Render Renderer
}

// Tools are the management tools of the vendors read through one (every vendor but NVIDIA, which is read
// through NVML), by vendor key.
var Tools = map[string]Tool{
	"amd":       {amd.Command.Name, AMD},
	"ascend":    {ascend.Tool, Ascend},
	"cambricon": {cambricon.Tool, Cambricon},
	"hygon":     {hygon.Command.Name, Hygon},
	"iluvatar":  {iluvatar.Tool, Iluvatar},
	"metax":     {metax.Tool, MetaX},
	"mthreads":  {mthreads.Command.Name, MThreads},
	"thead":     {thead.Tool, THead},
}
