// Package ascend is the Huawei Ascend backend of the device provider: the NPUs on the PCI bus, described by
// npu-smi. `npu-smi info -m` maps NPU and chip IDs to the logical chips the runtime numbers; per chip,
// `npu-smi info -t board` gives its name, PCI address and die ID, `-t memory` its HBM, and the board report
// of each NPU the driver version.
package ascend

import (
	"context"
	"strconv"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/gpustack/gpustack-operator/providers/smitool"
	"github.com/gpustack/gpustack-operator/vendors"
)

// Tool is the management tool that describes the NPUs.
const Tool = "npu-smi"

// New returns the backend, scanning the PCI devices under sysfsRoot (pcisysfs.DefaultRoot when empty).
func New(sysfsRoot string, run smitool.Runner) *smitool.Backend {
	v, _ := vendors.Lookup("ascend")
	return &smitool.Backend{Vendor: v, SysfsRoot: sysfsRoot, Runner: run, Query: Query}
}

// Chip is one row of the chip map: an NPU card's chip and the logical index the runtime gives it.
type Chip struct {
	NPU, Chip, Logical int
	Name               string
}

// Query reads the chip map, then each chip's board and memory report.
func Query(ctx context.Context, run smitool.Runner) ([]smitool.Card, error) {
	out, err := run.Run(ctx, smitool.Command{Name: Tool, Args: []string{"info", "-m"}})
	if err != nil {
		return nil, err
	}
	chips, err := ParseChipMap(out)
	if err != nil {
		return nil, err
	}
	drivers := map[int]string{}
	var cards []smitool.Card
	for _, chip := range chips {
		c := smitool.Card{}
		c.Index, c.Product = int32(chip.Logical), "Ascend "+chip.Name
		if _, ok := drivers[chip.NPU]; !ok {
			drivers[chip.NPU] = report(ctx, run, nil, "-t", "board", "-i", strconv.Itoa(chip.NPU))["Software Version"]
		}
		c.DriverVersion = drivers[chip.NPU]
		var problems []string
		board := report(ctx, run, &problems, "-t", "board", "-i", strconv.Itoa(chip.NPU), "-c", strconv.Itoa(chip.Chip))
		c.BusID = board["PCIe Bus Info"]
		c.UUID = strings.Join(strings.Fields(board["VDie ID"]), "-")
		if name := board["Chip Name"]; name != "" {
			c.Product = "Ascend " + name
		}
		memory := report(ctx, run, &problems, "-t", "memory", "-i", strconv.Itoa(chip.NPU), "-c", strconv.Itoa(chip.Chip))
		// Training chips report HBM, inference chips DDR; the other reads 0.
		for _, key := range []string{"HBM Capacity(MB)", "DDR Capacity(MB)"} {
			if v := memory[key]; v != "" {
				mib, err := smitool.ParseMemoryMiB(v, "MB")
				if err != nil {
					problems = append(problems, key+": "+err.Error())
				}
				c.MemoryMiB = max(c.MemoryMiB, mib)
			}
		}
		if len(problems) > 0 || c.MemoryMiB == 0 {
			c.Unhealthy = true
		}
		cards = append(cards, c)
	}
	return cards, nil
}

// report runs one npu-smi info report and returns its "key : value" lines; a failure is added to problems.
func report(ctx context.Context, run smitool.Runner, problems *[]string, args ...string) map[string]string {
	out, err := run.Run(ctx, smitool.Command{Name: Tool, Args: append([]string{"info"}, args...)})
	if err != nil {
		if problems != nil {
			*problems = append(*problems, err.Error())
		}
		return map[string]string{}
	}
	global, _ := smitool.ParseSections(out, func(string) bool { return false })
	return global
}

// ParseChipMap reads `npu-smi info -m`: a header line, then "NPU ID  Chip ID  Chip Logic ID  Chip Name" rows.
// Rows whose logical ID is "-" are the board's management controllers, not compute chips.
func ParseChipMap(out []byte) ([]Chip, error) {
	var chips []Chip
	for n, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.EqualFold(f[0], "NPU") {
			continue
		}
		if len(f) < 4 {
			return nil, errors.Errorf("chip map line %d: %q has fewer than four columns", n+1, strings.TrimSpace(line))
		}
		if f[2] == "-" {
			continue
		}
		var ids [3]int
		for i := range ids {
			v, err := strconv.Atoi(f[i])
			if err != nil || v < 0 || v > 1<<16 {
				return nil, errors.Errorf("chip map line %d: %q is not an ID", n+1, f[i])
			}
			ids[i] = v
		}
		name := strings.Join(f[3:], " ")
		name = strings.TrimSpace(strings.TrimPrefix(name, "Ascend"))
		chips = append(chips, Chip{NPU: ids[0], Chip: ids[1], Logical: ids[2], Name: name})
	}
	return chips, nil
}
