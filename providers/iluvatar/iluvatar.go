// Package iluvatar is the Iluvatar backend of the device provider: the cards on the PCI bus, described by ixsmi, which
// copies nvidia-smi's query interface (ixsmi --query-gpu=... --format=csv,noheader,nounits).
package iluvatar

import (
	"github.com/gpustack/gpustack-operator/providers/smitool"
	"github.com/gpustack/gpustack-operator/vendors"
)

// Tool is the management tool that describes the cards.
const Tool = "ixsmi"

// New returns the backend, scanning the PCI devices under sysfsRoot (pcisysfs.DefaultRoot when empty).
func New(sysfsRoot string, run smitool.Runner) *smitool.Backend {
	v, _ := vendors.Lookup("iluvatar")
	return &smitool.Backend{Vendor: v, SysfsRoot: sysfsRoot, Runner: run, Query: smitool.QueryLikeNvidiaSMI(Tool)}
}
