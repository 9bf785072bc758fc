// Package cambricon is the Cambricon backend of the device provider: the MLUs on the PCI bus, described by
// cnmon's JSON report. `cnmon info -j` writes the report to cnmon_info.json in its working directory, so the
// backend runs it in a fresh temporary directory.
package cambricon

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/gpustack/gpustack-operator/providers/smitool"
	"github.com/gpustack/gpustack-operator/vendors"
)

// Tool is the management tool that describes the MLUs.
const Tool = "cnmon"

// ReportFile is the file cnmon writes its JSON report to.
const ReportFile = "cnmon_info.json"

// New returns the backend, scanning the PCI devices under sysfsRoot (pcisysfs.DefaultRoot when empty).
func New(sysfsRoot string, run smitool.Runner) *smitool.Backend {
	v, _ := vendors.Lookup("cambricon")
	return &smitool.Backend{Vendor: v, SysfsRoot: sysfsRoot, Runner: run, Query: Query}
}

// Query runs cnmon in a temporary directory and reads the report it leaves there.
func Query(ctx context.Context, run smitool.Runner) ([]smitool.Card, error) {
	dir, err := os.MkdirTemp("", "cnmon-")
	if err != nil {
		return nil, errors.Wrap(err, "cannot create a directory for cnmon's report")
	}
	defer os.RemoveAll(dir)
	if _, err := run.Run(ctx, smitool.Command{Dir: dir, Name: Tool, Args: []string{"info", "-e", "-m", "-u", "-j"}}); err != nil {
		return nil, err
	}
	out, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		return nil, errors.Wrap(err, "cnmon left no report")
	}
	return Parse(out)
}

// report is the part of cnmon's JSON the backend reads.
type report struct {
	CnmonInfo []struct {
		CardNum       json.Number `json:"CardNum"`
		ProductName   string      `json:"ProductName"`
		UUID          string      `json:"UUID"`
		BusID         string      `json:"PCIeBusID"`
		DriverVersion string      `json:"DriverVersion"`
		PhysicalMem   struct {
			Total json.Number `json:"Total"`
		} `json:"PhysicalMemUsage"`
	} `json:"CnmonInfo"`
}

// Parse reads cnmon's report; memory is in MiB.
func Parse(out []byte) ([]smitool.Card, error) {
	var r report
	if err := json.Unmarshal(out, &r); err != nil {
		return nil, errors.Wrap(err, "cannot parse cnmon's report")
	}
	cards := make([]smitool.Card, 0, len(r.CnmonInfo))
	for i, info := range r.CnmonInfo {
		c := smitool.Card{BusID: info.BusID}
		c.Index, c.Product, c.UUID = int32(i), smitool.Value(info.ProductName), smitool.Value(info.UUID)
		c.DriverVersion = smitool.Value(info.DriverVersion)
		if n, err := strconv.ParseInt(info.CardNum.String(), 10, 32); err == nil && n >= 0 {
			c.Index = int32(n)
		}
		if total := info.PhysicalMem.Total.String(); total != "" {
			mib, err := smitool.ParseMemoryMiB(total, "MB")
			if err != nil {
				return nil, errors.Wrapf(err, "card %d", c.Index)
			}
			c.MemoryMiB = mib
		}
		c.Unhealthy = c.Product == "" || c.MemoryMiB == 0
		cards = append(cards, c)
	}
	return cards, nil
}
