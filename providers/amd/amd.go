// Package amd is the AMD backend of the device provider: the cards on the PCI bus, described by rocm-smi's JSON
// report (smitool.ROCmSMICommand).
package amd

import (
	"github.com/gpustack/gpustack-operator/providers/smitool"
	"github.com/gpustack/gpustack-operator/vendors"
)

// Command is the tool run that describes the cards.
var Command = smitool.ROCmSMICommand("rocm-smi")

// New returns the backend, scanning the PCI devices under sysfsRoot (pcisysfs.DefaultRoot when empty).
func New(sysfsRoot string, run smitool.Runner) *smitool.Backend {
	v, _ := vendors.Lookup("amd")
	return &smitool.Backend{Vendor: v, SysfsRoot: sysfsRoot, Runner: run, Query: smitool.QueryROCmSMI("rocm-smi")}
}
