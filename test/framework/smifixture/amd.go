package smifixture

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/gpustack/gpustack-operator/providers/amd"
	"github.com/gpustack/gpustack-operator/providers/smitool"
)

// AMD renders rocm-smi's JSON report (amd.Command) for AMD cards.
func AMD(cards []smitool.Card) (Answers, error) {
	return rocmSMIAnswers(amd.Command, cards, func(c smitool.Card) []rocmKey {
		return []rocmKey{
			{"Card Series", c.Product},
			// A card carries neither its PCI device ID nor its SKU, and rocm-smi prints N/A for what it
			// cannot read.
			{"Card Model", "N/A"},
			{"Card Vendor", "Advanced Micro Devices, Inc. [AMD/ATI]"},
			{"Card SKU", "N/A"},
			{"GFX Version", orNA(c.Family)},
			{"VRAM Total Memory (B)", strconv.FormatInt(c.MemoryMiB<<20, 10)},
			// The simulated cards are idle.
			{"VRAM Total Used Memory (B)", "0"},
			{"PCI Bus", strings.ToUpper(c.BusID)},
			{"Unique ID", orNA(c.UUID)},
		}
	})
}

// rocmKey is one key of a card's object in a rocm-smi-style report; a slice of them keeps the tool's order,
// which a map would lose.
type rocmKey struct{ key, value string }

// rocmSMIAnswers renders the one-line report of rocm-smi or a fork of it as Python's json.dumps writes it: one
// "card<index>" object per card in index order, then the node's driver version under "system". The report has
// room for one driver version, so cards that disagree on it are an error rather than a silent pick.
func rocmSMIAnswers(cmd smitool.Command, cards []smitool.Card, fields func(smitool.Card) []rocmKey) (Answers, error) {
	sorted, err := describedCards(cards)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString("{")
	for _, c := range sorted {
		if c.DriverVersion != sorted[0].DriverVersion {
			return nil, errors.Errorf("card %d: driver version %q differs from card %d's %q, and %s reports one for the node",
				c.Index, c.DriverVersion, sorted[0].Index, sorted[0].DriverVersion, cmd.Name)
		}
		writeJSONObject(&b, "card"+strconv.Itoa(int(c.Index)), fields(c))
		b.WriteString(", ")
	}
	driver := ""
	if len(sorted) > 0 {
		driver = sorted[0].DriverVersion
	}
	writeJSONObject(&b, "system", []rocmKey{{"Driver version", orNA(driver)}})
	b.WriteString("}\n")
	return Answers{cmd.String(): {Stdout: b.String()}}, nil
}

// writeJSONObject writes "name": {"key": "value", ...} with json.dumps's separators.
func writeJSONObject(b *strings.Builder, name string, keys []rocmKey) {
	b.WriteString(jsonString(name) + ": {")
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(jsonString(k.key) + ": " + jsonString(k.value))
	}
	b.WriteString("}")
}

// jsonString quotes s for JSON; strconv.Quote's escapes (\x00) are not JSON's.
func jsonString(s string) string {
	q, _ := json.Marshal(s) // A string always marshals.
	return string(q)
}

// orNA is how the tools print a value they do not have, which their parsers read back as empty.
func orNA(s string) string {
	if s == "" {
		return "N/A"
	}
	return s
}

// describedCards returns the cards in index order with their bus IDs as sysfs writes them (0000:1b:00.0), or an
// error naming the first card no tool would print: one without a product, memory or bus ID, or one whose index
// another card has. Without a product or memory the parsers mark a card unhealthy, and without a bus ID the
// backend matches it to the bus by order, neither of which the node's cards mean.
func describedCards(cards []smitool.Card) ([]smitool.Card, error) {
	sorted := append([]smitool.Card(nil), cards...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Index < sorted[j].Index })
	for i := range sorted {
		c := &sorted[i]
		bus := smitool.NormalizeBusID(c.BusID)
		switch {
		case c.Index < 0:
			return nil, errors.Errorf("card %d: negative index", c.Index)
		case i > 0 && sorted[i-1].Index == c.Index:
			return nil, errors.Errorf("card %d: another card has the same index", c.Index)
		case c.Product == "":
			return nil, errors.Errorf("card %d: no product name", c.Index)
		case c.MemoryMiB <= 0:
			return nil, errors.Errorf("card %d (%s): no memory", c.Index, c.Product)
		case bus == "":
			return nil, errors.Errorf("card %d (%s): bus ID %q is not a PCI address", c.Index, c.Product, c.BusID)
		}
		c.BusID = bus
	}
	return sorted, nil
}
