package smifixture

import (
	"fmt"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/gpustack/gpustack-operator/providers/iluvatar"
	"github.com/gpustack/gpustack-operator/providers/smitool"
)

// Iluvatar renders ixsmi's answer to the nvidia-smi-style query the Iluvatar backend runs, for Iluvatar cards.
func Iluvatar(cards []smitool.Card) (Answers, error) {
	return nvidiaSMIQueryAnswers(iluvatar.Tool, cards)
}

// nvidiaSMIQuery is the query smitool.QueryLikeNvidiaSMI runs; the round-trip tests fail when the two differ,
// since the backend then finds no answer for its command.
const nvidiaSMIQuery = "--query-gpu=index,uuid,name,memory.total,driver_version,pci.bus_id --format=csv,noheader,nounits"

// nvidiaSMIQueryAnswers renders the answer of a tool that copies nvidia-smi's query interface: one line per card
// in index order, the values separated by ", ", memory in MiB without its unit, [N/A] for a value the card
// lacks, the bus ID with nvidia-smi's eight-digit domain (00000000:3B:00.0). The parser splits lines on commas,
// so a value with a comma or a line break cannot be carried and is an error.
func nvidiaSMIQueryAnswers(tool string, cards []smitool.Card) (Answers, error) {
	sorted, err := describedCards(cards)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	for _, c := range sorted {
		for _, v := range []string{c.UUID, c.Product, c.DriverVersion} {
			if strings.ContainsAny(v, ",\r\n") {
				return nil, errors.Errorf("card %d: %q has a comma or a line break, which %s's CSV cannot carry", c.Index, v, tool)
			}
		}
		fmt.Fprintf(&b, "%d, %s, %s, %d, %s, %s\n", c.Index, csvValue(c.UUID), c.Product, c.MemoryMiB,
			csvValue(c.DriverVersion), "0000"+strings.ToUpper(c.BusID))
	}
	return Answers{smitool.Command{Name: tool, Args: strings.Fields(nvidiaSMIQuery)}.String(): {Stdout: b.String()}}, nil
}

// csvValue is how nvidia-smi's CSV prints a value it does not have.
func csvValue(s string) string {
	if s == "" {
		return "[N/A]"
	}
	return s
}
