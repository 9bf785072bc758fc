package smifixture

import (
	"strconv"
	"strings"

	"github.com/gpustack/gpustack-operator/providers/mthreads"
	"github.com/gpustack/gpustack-operator/providers/smitool"
)

// MThreads renders mthreads-gmi -q (mthreads.Command), an nvidia-smi -q look-alike with one "GPU <address>"
// section per card, for Moore Threads cards. The driver and MUSA versions head the report once for the node, so
// cards that disagree on either are an error.
func MThreads(cards []smitool.Card) (Answers, error) {
	sorted, err := describedCards(cards)
	if err != nil {
		return nil, err
	}
	driver, err := nodeValue(sorted, mthreads.Command.Name, "driver version", cardDriverVersion)
	if err != nil {
		return nil, err
	}
	musa, err := nodeValue(sorted, mthreads.Command.Name, "runtime version", cardRuntimeVersion)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	// The timestamp is fixed so the rendering is deterministic.
	writeKeyValue(&b, 0, 35, "Timestamp", "Mon Nov 30 08:00:00 2026")
	writeKeyValue(&b, 0, 35, "Driver Version", orNA(driver))
	writeKeyValue(&b, 0, 35, "MUSA Version", orNA(musa))
	writeKeyValue(&b, 0, 35, "Attached GPUs", strconv.Itoa(len(sorted)))
	for _, c := range sorted {
		for _, f := range []reportLine{{"product", c.Product}, {"UUID", c.UUID}} {
			if err := checkLineValue(c, f.key, f.value); err != nil {
				return nil, err
			}
		}
		mib := strconv.FormatInt(c.MemoryMiB, 10) + "MiB"
		// nvidia-smi -q's spelling of the address: an eight-digit domain, uppercase.
		b.WriteString("\nGPU 0000" + strings.ToUpper(c.BusID) + "\n")
		writeKeyValue(&b, 4, 35, "Product Name", c.Product)
		writeKeyValue(&b, 4, 35, "Product Brand", "MTT")
		writeKeyValue(&b, 4, 35, "Minor Number", strconv.Itoa(int(c.Index)))
		writeKeyValue(&b, 4, 35, "GPU UUID", orNA(c.UUID))
		b.WriteString("    FB Memory Usage\n")
		writeKeyValue(&b, 8, 35, "Total", mib)
		// The simulated cards are idle.
		writeKeyValue(&b, 8, 35, "Used", "0MiB")
		writeKeyValue(&b, 8, 35, "Free", mib)
	}
	return Answers{mthreads.Command.String(): {Stdout: b.String()}}, nil
}
