// Package mthreads is the Moore Threads backend of the device provider: the GPUs on the PCI bus, described by
// `mthreads-gmi -q`, an nvidia-smi -q look-alike report with one "GPU <address>" section per card.
package mthreads

import (
	"context"
	"strconv"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/gpustack/gpustack-operator/providers/smitool"
	"github.com/gpustack/gpustack-operator/vendors"
)

// Command is the tool run that describes the cards.
var Command = smitool.Command{Name: "mthreads-gmi", Args: []string{"-q"}}

// New returns the backend, scanning the PCI devices under sysfsRoot (pcisysfs.DefaultRoot when empty).
func New(sysfsRoot string, run smitool.Runner) *smitool.Backend {
	v, _ := vendors.Lookup("mthreads")
	return &smitool.Backend{Vendor: v, SysfsRoot: sysfsRoot, Runner: run, Query: Query}
}

// Query runs mthreads-gmi and reads its report.
func Query(ctx context.Context, run smitool.Runner) ([]smitool.Card, error) {
	out, err := run.Run(ctx, Command)
	if err != nil {
		return nil, err
	}
	return Parse(out)
}

// Parse reads the report: the driver version is global, each card has its section.
func Parse(out []byte) ([]smitool.Card, error) {
	global, sections := smitool.ParseSections(out, func(l string) bool {
		f := strings.Fields(l)
		return len(f) == 2 && f[0] == "GPU" && smitool.NormalizeBusID(f[1]) != ""
	})
	if len(sections) == 0 && smitool.Lookup(global, "Attached GPUs") != "0" {
		return nil, errors.New("the report lists no GPU section")
	}
	driver := smitool.Lookup(global, "Driver Version")
	musa := smitool.Lookup(global, "MUSA Version")
	cards := make([]smitool.Card, 0, len(sections))
	for i, s := range sections {
		c := smitool.Card{BusID: strings.Fields(s.Header)[1]}
		c.Index, c.DriverVersion, c.RuntimeVersion = int32(i), driver, musa
		c.Product = smitool.Lookup(s.Values, "Product Name")
		c.UUID = smitool.Lookup(s.Values, "GPU UUID", "UUID")
		if n, err := strconv.ParseInt(smitool.Lookup(s.Values, "Minor Number", "Index"), 10, 32); err == nil && n >= 0 {
			c.Index = int32(n)
		}
		if total := smitool.Lookup(s.Values, "FB Memory Usage/Total", "Memory Usage/Total"); total != "" {
			mib, err := smitool.ParseMemoryMiB(total, "MB")
			if err != nil {
				return nil, errors.Wrapf(err, "%s", s.Header)
			}
			c.MemoryMiB = mib
		}
		c.Unhealthy = c.Product == "" || c.MemoryMiB == 0
		cards = append(cards, c)
	}
	return cards, nil
}
