// Package hardware assembles the real backends of all nine vendors into the one provider a node's agent runs:
// a vendor whose cards are not on the PCI bus is skipped without running its tool, so a node pays only for
// the hardware it has.
package hardware

import (
	"context"
	"slices"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/providers/amd"
	"github.com/gpustack/gpustack-operator/providers/ascend"
	"github.com/gpustack/gpustack-operator/providers/cambricon"
	"github.com/gpustack/gpustack-operator/providers/hygon"
	"github.com/gpustack/gpustack-operator/providers/iluvatar"
	"github.com/gpustack/gpustack-operator/providers/metax"
	"github.com/gpustack/gpustack-operator/providers/mthreads"
	"github.com/gpustack/gpustack-operator/providers/nvidia"
	"github.com/gpustack/gpustack-operator/providers/pcisysfs"
	"github.com/gpustack/gpustack-operator/providers/smitool"
	"github.com/gpustack/gpustack-operator/providers/thead"
	"github.com/gpustack/gpustack-operator/vendors"
)

// Options say where the node's hardware is read from.
type Options struct {
	// SysfsRoot is the PCI device directory; pcisysfs.DefaultRoot when empty.
	SysfsRoot string
	// ClassPrefixes are the PCI classes of accelerators (pcisysfs.ClassPrefixesFromEnv); the default when empty.
	ClassPrefixes []string
	// Runner runs the vendors' tools; an smitool.ExecRunner when nil.
	Runner smitool.Runner
	// NVML is the NVIDIA management library; when nil, the driver's under nvidia.DriverRoots, else the one
	// the loader finds.
	NVML nvml.Interface
}

// Provider detects every vendor's cards on the node.
type Provider struct {
	opts     Options
	backends map[string]providers.Provider
}

// New returns the provider over all nine backends.
func New(opts Options) *Provider {
	if opts.Runner == nil {
		opts.Runner = smitool.ExecRunner{}
	}
	if opts.NVML == nil {
		var lib []nvml.LibraryOption
		if path := nvidia.FindLibrary(nvidia.DriverRoots); path != "" {
			lib = append(lib, nvml.WithLibraryPath(path))
		}
		opts.NVML = nvml.New(lib...)
	}
	if len(opts.ClassPrefixes) == 0 {
		opts.ClassPrefixes = pcisysfs.DefaultClassPrefixes
	}
	p := &Provider{opts: opts, backends: map[string]providers.Provider{"nvidia": nvidia.New(opts.NVML)}}
	for key, make := range map[string]func(string, smitool.Runner) *smitool.Backend{
		"amd": amd.New, "ascend": ascend.New, "cambricon": cambricon.New, "hygon": hygon.New,
		"iluvatar": iluvatar.New, "metax": metax.New, "mthreads": mthreads.New, "thead": thead.New,
	} {
		b := make(opts.SysfsRoot, opts.Runner)
		b.ClassPrefixes = opts.ClassPrefixes
		p.backends[key] = b
	}
	return p
}

// Name names the provider.
func (p *Provider) Name() string { return "hardware" }

// MIG returns the MIG lifecycle of the node's NVIDIA cards, over the same NVML library.
func (p *Provider) MIG() *nvidia.MIG { return nvidia.NewMIG(p.opts.NVML) }

// Detect runs the backend of every vendor with cards on the bus, in the vendor table's order, and returns all
// their cards; the errors of the backends that had trouble are joined.
func (p *Provider) Detect(ctx context.Context) ([]providers.Device, error) {
	root := p.opts.SysfsRoot
	if root == "" {
		root = pcisysfs.DefaultRoot
	}
	var ids []string
	for _, v := range vendors.All() {
		ids = append(ids, v.PCIVendorID)
	}
	onBus, _, busErr := pcisysfs.Scan(root, ids, p.opts.ClassPrefixes)
	var devices []providers.Device
	var errs []error
	for _, v := range vendors.All() {
		owned := slices.ContainsFunc(onBus, func(f pcisysfs.Device) bool { return v.OwnsPCI(f.VendorID, f.Class) })
		// Without a readable bus every backend is asked; each then answers from its tool alone.
		if busErr == nil && !owned {
			continue
		}
		found, err := p.backends[v.Key].Detect(ctx)
		if len(found) == 0 && err != nil {
			// A backend that could read nothing (NVML missing) still leaves its cards visible, unhealthy.
			for _, f := range onBus {
				if v.OwnsPCI(f.VendorID, f.Class) {
					d := smitool.Undescribed(v, f)
					d.Index = int32(len(found))
					found = append(found, d)
				}
			}
		}
		devices = append(devices, found...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return devices, errors.Join(errs...)
}
