// Package metax is the MetaX backend of the device provider: the GPUs on the PCI bus, described by
// `mx-smi --show-memory`, which prints one "GPU#<n>  <board>  <address>" line per card followed by its memory
// as "vis_vram total : <KB>". The driver version comes from `mx-smi --show-version`.
package metax

import (
	"context"
	"strconv"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/gpustack/gpustack-operator/providers/smitool"
	"github.com/gpustack/gpustack-operator/vendors"
)

// Tool is the management tool that describes the cards.
const Tool = "mx-smi"

// New returns the backend, scanning the PCI devices under sysfsRoot (pcisysfs.DefaultRoot when empty).
func New(sysfsRoot string, run smitool.Runner) *smitool.Backend {
	v, _ := vendors.Lookup("metax")
	return &smitool.Backend{Vendor: v, SysfsRoot: sysfsRoot, Runner: run, Query: Query}
}

// Query runs mx-smi for memory and versions; a version report that fails only leaves the versions out.
func Query(ctx context.Context, run smitool.Runner) ([]smitool.Card, error) {
	out, err := run.Run(ctx, smitool.Command{Name: Tool, Args: []string{"--show-memory"}})
	if err != nil {
		return nil, err
	}
	cards, err := Parse(out)
	if err != nil {
		return nil, err
	}
	if v, err := run.Run(ctx, smitool.Command{Name: Tool, Args: []string{"--show-version"}}); err == nil {
		global, _ := smitool.ParseSections(v, func(string) bool { return false })
		for i := range cards {
			cards[i].DriverVersion = smitool.Lookup(global, "Kernel Mode Driver Version", "driver_version", "Driver Version")
			cards[i].RuntimeVersion = smitool.Lookup(global, "MACA Version", "maca_version")
		}
	}
	return cards, nil
}

// Parse reads `mx-smi --show-memory`.
func Parse(out []byte) ([]smitool.Card, error) {
	_, sections := smitool.ParseSections(out, func(l string) bool { return strings.HasPrefix(l, "GPU#") })
	cards := make([]smitool.Card, 0, len(sections))
	for _, s := range sections {
		f := strings.Fields(s.Header)
		n, err := strconv.ParseInt(strings.TrimPrefix(f[0], "GPU#"), 10, 32)
		if err != nil || n < 0 {
			return nil, errors.Errorf("%q does not name a card", s.Header)
		}
		c := smitool.Card{}
		c.Index = int32(n)
		if len(f) >= 2 && smitool.NormalizeBusID(f[len(f)-1]) != "" {
			c.BusID, f = f[len(f)-1], f[:len(f)-1]
		}
		c.Product = strings.Join(f[1:], " ")
		if total := smitool.Lookup(s.Values, "Memory/vis_vram total", "vis_vram total"); total != "" {
			if c.MemoryMiB, err = smitool.ParseMemoryMiB(total, "KB"); err != nil {
				return nil, errors.Wrapf(err, "%s", f[0])
			}
		}
		c.Unhealthy = c.Product == "" || c.MemoryMiB == 0
		cards = append(cards, c)
	}
	return cards, nil
}
