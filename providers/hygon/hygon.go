// Package hygon is the Hygon backend of the device provider: the cards on the PCI bus, described by hy-smi's JSON
// report (smitool.ROCmSMICommand).
package hygon

import (
	"github.com/gpustack/gpustack-operator/providers/smitool"
	"github.com/gpustack/gpustack-operator/vendors"
)

// Command is the tool run that describes the cards.
var Command = smitool.ROCmSMICommand("hy-smi")

// New returns the backend, scanning the PCI devices under sysfsRoot (pcisysfs.DefaultRoot when empty).
func New(sysfsRoot string, run smitool.Runner) *smitool.Backend {
	v, _ := vendors.Lookup("hygon")
	return &smitool.Backend{Vendor: v, SysfsRoot: sysfsRoot, Runner: run, Query: smitool.QueryROCmSMI("hy-smi")}
}
