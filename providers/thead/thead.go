// Package thead is the T-Head backend of the device provider: the cards on the PCI bus, described by ppu-smi, which
// copies nvidia-smi's query interface (ppu-smi --query-gpu=... --format=csv,noheader,nounits).
package thead

import (
	"github.com/gpustack/gpustack-operator/providers/smitool"
	"github.com/gpustack/gpustack-operator/vendors"
)

// Tool is the management tool that describes the cards.
const Tool = "ppu-smi"

// New returns the backend, scanning the PCI devices under sysfsRoot (pcisysfs.DefaultRoot when empty).
func New(sysfsRoot string, run smitool.Runner) *smitool.Backend {
	v, _ := vendors.Lookup("thead")
	return &smitool.Backend{Vendor: v, SysfsRoot: sysfsRoot, Runner: run, Query: smitool.QueryLikeNvidiaSMI(Tool)}
}
