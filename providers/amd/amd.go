// Package amd is the AMD backend of the device provider: the cards on the PCI bus, described by rocm-smi's JSON
// report (rocm-smi --showproductname --showmeminfo vram --showbus --showuniqueid --showdriverversion --json).
package amd

import (
	"context"

	"github.com/gpustack/gpustack-operator/internal/vendors"
	"github.com/gpustack/gpustack-operator/providers/smitool"
)

// Command is the tool run that describes the cards.
var Command = smitool.Command{Name: "rocm-smi", Args: []string{"--showproductname", "--showmeminfo", "vram", "--showbus",
	"--showuniqueid", "--showdriverversion", "--json"}}

// New returns the backend, scanning the PCI devices under sysfsRoot (pcisysfs.DefaultRoot when empty).
func New(sysfsRoot string, run smitool.Runner) *smitool.Backend {
	v, _ := vendors.Lookup("amd")
	return &smitool.Backend{Vendor: v, SysfsRoot: sysfsRoot, Runner: run, Query: Query}
}

// Query runs rocm-smi and reads its report.
func Query(ctx context.Context, run smitool.Runner) ([]smitool.Card, error) {
	out, err := run.Run(ctx, Command)
	if err != nil {
		return nil, err
	}
	return smitool.ParseROCmSMI(out)
}
