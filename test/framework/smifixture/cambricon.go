package smifixture

import (
	"encoding/json"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/gpustack/gpustack-operator/providers/cambricon"
	"github.com/gpustack/gpustack-operator/providers/smitool"
)

// cnmonCard is one card of cnmon's JSON report, its fields in the tool's order.
type cnmonCard struct {
	CardNum          int32
	ProductName      string
	UUID             string
	PCIeBusID        string
	DriverVersion    string
	PhysicalMemUsage struct{ Total, Used int64 }
	Utilization      struct{ MLUAverage int }
}

// Cambricon renders the report `cnmon info -e -m -u -j` writes into its working directory (cambricon.ReportFile)
// for Cambricon cards; cnmon prints nothing the backend reads. Memory is in MiB, the bus ID in cnmon's spelling
// (0000:3D:00.0).
func Cambricon(cards []smitool.Card) (Answers, error) {
	sorted, err := describedCards(cards)
	if err != nil {
		return nil, err
	}
	// A node without cards gets an empty list, not null, so the report keeps its shape.
	report := struct{ CnmonInfo []cnmonCard }{CnmonInfo: make([]cnmonCard, 0, len(sorted))}
	for _, c := range sorted {
		for _, f := range []reportLine{{"product", c.Product}, {"UUID", c.UUID}, {"driver version", c.DriverVersion}} {
			// JSON carries any string, but the parser trims it and reads N/A and the like as nothing.
			if smitool.Value(f.value) != f.value {
				return nil, errors.Errorf("card %d (%s): %s %q would not read back as itself", c.Index, c.Product, f.key, f.value)
			}
		}
		card := cnmonCard{CardNum: c.Index, ProductName: c.Product, UUID: orNA(c.UUID),
			PCIeBusID: strings.ToUpper(c.BusID), DriverVersion: orNA(c.DriverVersion)}
		// Used memory and utilization stay 0: the simulated cards are idle.
		card.PhysicalMemUsage.Total = c.MemoryMiB
		report.CnmonInfo = append(report.CnmonInfo, card)
	}
	out, err := json.MarshalIndent(report, "", "    ")
	if err != nil {
		return nil, errors.Wrap(err, "cannot write cnmon's report")
	}
	command := smitool.Command{Name: cambricon.Tool, Args: []string{"info", "-e", "-m", "-u", "-j"}}
	return Answers{command.String(): {Files: map[string]string{cambricon.ReportFile: string(out) + "\n"}}}, nil
}
