package smifixture

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/gpustack/gpustack-operator/providers/ascend"
	"github.com/gpustack/gpustack-operator/providers/smitool"
	"github.com/gpustack/gpustack-operator/providers/smitool/smitooltest"
)

// Ascend renders npu-smi's chip map and each NPU's and chip's board and memory reports for Ascend chips. Each
// card is an NPU of its own with one compute chip (chip 0) and the board's management controller (chip 1), its
// NPU ID and logical ID both the card's index: a chip's name does not say how many chips its board holds (a
// 310P3 is alone on an Atlas 300I Pro and one of two on a 300I Duo), so no product implies more. Chips named
// 310* report their memory as DDR, the others as HBM, as the real chips do. A card's product must be "Ascend
// <chip name>", the name the backend rebuilds, and its UUID the chip's VDie ID words joined by dashes.
func Ascend(cards []smitool.Card) (Answers, error) {
	sorted, err := describedCards(cards)
	if err != nil {
		return nil, err
	}
	answers := Answers{}
	var chipMap strings.Builder
	row := "        %-31s%-31s%-31s%s\n"
	fmt.Fprintf(&chipMap, row, "NPU ID", "Chip ID", "Chip Logic ID", "Chip Name")
	for _, c := range sorted {
		chip, vdie, err := ascendNames(c)
		if err != nil {
			return nil, err
		}
		id := strconv.Itoa(int(c.Index))
		fmt.Fprintf(&chipMap, row, id, "0", id, c.Product)
		fmt.Fprintf(&chipMap, row, id, "1", "-", "Mcu")
		bus := strings.ToUpper(c.BusID)
		answers[npuSMI("-t", "board", "-i", id)] = ascendReport([]reportLine{{"NPU ID", id}, {"Product Name", "NA"},
			{"Model", "NA"}, {"Manufacturer", "Huawei"},
			// The serial number is not a card's; one per NPU looks like the real thing.
			{"Serial Number", fmt.Sprintf("10236974482%05d", c.Index)},
			{"Software Version", ascendNA(c.DriverVersion)}, {"Firmware Version", ascendFirmware},
			{"Compatibility", "OK"}, {"Board ID", "0x65"}, {"PCB ID", "B"}, {"BOM ID", "1"}, {"PCIe Bus Info", bus},
			{"Slot ID", id}, {"Class ID", "NA"}, {"PCI Vendor ID", "0x19E5"}, {"PCI Device ID", ascendDeviceID(chip)},
			{"Subsystem Vendor ID", "0x0200"}, {"Subsystem Device ID", "0x0100"}, {"Chip Count", "1"}})
		answers[npuSMI("-t", "board", "-i", id, "-c", "0")] = ascendReport([]reportLine{{"NPU ID", id},
			{"Chip ID", "0"}, {"Chip Type", "Ascend"}, {"Chip Name", chip}, {"Chip Version", "V1"},
			{"Board ID", "0x65"}, {"PCB ID", "B"}, {"BOM ID", "1"}, {"VDie ID", vdie},
			// The NDie ID is not a card's, and the backend does not read it.
			{"NDie ID", "NA"},
			{"Chip Position ID", id}, {"PCIe Bus Info", bus}, {"Firmware Version", ascendFirmware}})
		answers[npuSMI("-t", "memory", "-i", id, "-c", "0")] = ascendReport(ascendMemory(id, chip, c.MemoryMiB))
	}
	answers[npuSMI("-m")] = smitooltest.Answer{Stdout: chipMap.String()}
	return answers, nil
}

// ascendNames returns the card's chip name and VDie ID as npu-smi prints them, or an error naming the card when
// the backend would not read them back as the card's product, UUID and driver version: it names a chip "Ascend
// <chip name>", joins the VDie ID's words with dashes, and reads NA as nothing.
func ascendNames(c smitool.Card) (chip, vdie string, err error) {
	if c.Index > 1<<16 {
		return "", "", errors.Errorf("card %d (%s): npu-smi's IDs stop at %d", c.Index, c.Product, 1<<16)
	}
	chip, ok := strings.CutPrefix(c.Product, "Ascend ")
	if !ok || chip == "" || checkLineValue(c, "chip name", chip) != nil {
		return "", "", errors.Errorf("card %d: product %q is not \"Ascend <chip name>\"", c.Index, c.Product)
	}
	vdie = ascendNA(strings.ReplaceAll(c.UUID, "-", " "))
	if strings.Join(strings.Fields(smitool.Value(vdie)), "-") != c.UUID {
		return "", "", errors.Errorf("card %d (%s): UUID %q is not VDie ID words joined by dashes", c.Index, c.Product, c.UUID)
	}
	return chip, vdie, checkLineValue(c, "driver version", c.DriverVersion)
}

// ascendNA is how npu-smi prints a value it does not have (NA, not N/A), which the backend reads back as empty.
func ascendNA(s string) string {
	if s == "" {
		return "NA"
	}
	return s
}

// ascendFirmware is the firmware the simulated boards run; the backend does not read it.
const ascendFirmware = "7.3.0.1.231"

// npuSMI is the command line of an npu-smi info report.
func npuSMI(args ...string) string {
	return smitool.Command{Name: ascend.Tool, Args: append([]string{"info"}, args...)}.String()
}

// ascendMemory is a chip's memory report. Inference chips (310*) have DDR and no HBM lines; training chips have
// both, the DDR at 0. The simulated chips are idle.
func ascendMemory(id, chip string, mib int64) []reportLine {
	capacity := strconv.FormatInt(mib, 10)
	lines := []reportLine{{"NPU ID", id}, {"Chip ID", "0"}}
	if strings.HasPrefix(chip, "310") {
		return append(lines, []reportLine{{"DDR Capacity(MB)", capacity}, {"DDR Clock Speed(MHz)", "3200"},
			{"DDR Usage Rate(%)", "0"}, {"Aicpu Usage Rate(%)", "0"}}...)
	}
	return append(lines, []reportLine{{"DDR Capacity(MB)", "0"}, {"DDR Clock Speed(MHz)", "0"},
		{"DDR Usage Rate(%)", "0"}, {"HBM Capacity(MB)", capacity}, {"HBM Clock Speed(MHz)", "1600"},
		{"HBM Usage Rate(%)", "0"}, {"Aicpu Usage Rate(%)", "0"}}...)
}

// ascendDeviceID is the PCI device ID of a chip family, which the card does not carry but its name implies.
func ascendDeviceID(chip string) string {
	for _, f := range []struct{ prefix, id string }{{"910B", "0xD802"}, {"910", "0xD801"}, {"310P", "0xD500"}, {"310", "0xD100"}} {
		if strings.HasPrefix(chip, f.prefix) {
			return f.id
		}
	}
	return "NA"
}

// ascendReport is an npu-smi report of "key : value" lines, indented by 8 with the colons in column 40.
func ascendReport(lines []reportLine) smitooltest.Answer {
	var b strings.Builder
	for _, l := range lines {
		writeKeyValue(&b, 8, 39, l.key, l.value)
	}
	return smitooltest.Answer{Stdout: b.String()}
}

// reportLine is one "key : value" line of a report; a slice of them keeps the tool's order.
type reportLine struct{ key, value string }

// writeKeyValue writes a "key : value" line indented by indent, the key padded so that the colon follows
// column characters, as the nvidia-smi -q look-alikes align them.
func writeKeyValue(b *strings.Builder, indent, column int, key, value string) {
	fmt.Fprintf(b, "%*s%-*s: %s\n", indent, "", column-indent, key, value)
}

// checkLineValue returns an error naming the card when a value would not read back as itself from a
// "key : value" line: the parsers trim it, read N/A, NA, - and the like as nothing, and expand tabs, and a line
// break would end the line. An empty value is printed as the tool spells not available, which reads back as empty.
func checkLineValue(c smitool.Card, what, value string) error {
	if smitool.Value(value) != value || strings.ContainsAny(value, "\r\n\t") {
		return errors.Errorf("card %d (%s): %s %q would not read back as itself", c.Index, c.Product, what, value)
	}
	return nil
}
