package smifixture

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/gpustack/gpustack-operator/providers/metax"
	"github.com/gpustack/gpustack-operator/providers/smitool"
)

// MetaX renders mx-smi's memory report (a "GPU#<index>  <board>  <address>" line per card and its memory) and
// its version report for MetaX cards. The memory report has no UUID, so the cards' UUIDs do not reach the
// backend; the version report has one driver and one MACA version for the node, so cards that disagree on either
// are an error. The backend splits the card's line on blanks, so a product must be words separated by single
// spaces.
func MetaX(cards []smitool.Card) (Answers, error) {
	sorted, err := describedCards(cards)
	if err != nil {
		return nil, err
	}
	driver, err := nodeValue(sorted, metax.Tool, "driver version", cardDriverVersion)
	if err != nil {
		return nil, err
	}
	maca, err := nodeValue(sorted, metax.Tool, "runtime version", cardRuntimeVersion)
	if err != nil {
		return nil, err
	}
	memory, version := metaxHeader(len(sorted)), metaxHeader(len(sorted))
	for _, c := range sorted {
		if strings.Join(strings.Fields(c.Product), " ") != c.Product {
			return nil, errors.Errorf("card %d: product %q is not words separated by single spaces", c.Index, c.Product)
		}
		fmt.Fprintf(memory, "GPU#%d  %s  %s\n    Memory\n", c.Index, c.Product, c.BusID)
		writeKeyValue(memory, 8, 50, "vis_vram total", strconv.FormatInt(c.MemoryMiB<<10, 10)+" KB")
		// The simulated cards are idle.
		writeKeyValue(memory, 8, 50, "vis_vram used", "0 KB")
		writeKeyValue(memory, 8, 50, "vis_vram usage", "0 %")
		memory.WriteString("\n")
	}
	writeKeyValue(version, 0, 50, "MACA Version", orNA(maca))
	writeKeyValue(version, 0, 50, "Kernel Mode Driver Version", orNA(driver))
	return Answers{
		smitool.Command{Name: metax.Tool, Args: []string{"--show-memory"}}.String():  {Stdout: memory.String()},
		smitool.Command{Name: metax.Tool, Args: []string{"--show-version"}}.String(): {Stdout: version.String()},
	}, nil
}

// metaxHeader is what each of mx-smi's reports begins with; the timestamp is fixed so the rendering is
// deterministic.
func metaxHeader(gpus int) *strings.Builder {
	var b strings.Builder
	b.WriteString("mx-smi  version: 2.1.9\n\n")
	b.WriteString("=================== MetaX System Management Interface Log ===================\n")
	writeKeyValue(&b, 0, 50, "Timestamp", "Mon Nov 30 08:00:00 2026")
	b.WriteString("\n")
	writeKeyValue(&b, 0, 50, "Attached GPUs", strconv.Itoa(gpus))
	return &b
}

// nodeValue returns the value that the cards, in index order, agree on for a report line the tool prints once
// for the node, or an error naming the first card that disagrees or whose value the line cannot carry.
func nodeValue(cards []smitool.Card, tool, what string, get func(smitool.Card) string) (string, error) {
	for _, c := range cards {
		if err := checkLineValue(c, what, get(c)); err != nil {
			return "", err
		}
		if get(c) != get(cards[0]) {
			return "", errors.Errorf("card %d: %s %q differs from card %d's %q, and %s reports one for the node",
				c.Index, what, get(c), cards[0].Index, get(cards[0]), tool)
		}
	}
	if len(cards) == 0 {
		return "", nil
	}
	return get(cards[0]), nil
}

// cardDriverVersion and cardRuntimeVersion read the versions the tools report once for the node.
func cardDriverVersion(c smitool.Card) string  { return c.DriverVersion }
func cardRuntimeVersion(c smitool.Card) string { return c.RuntimeVersion }
