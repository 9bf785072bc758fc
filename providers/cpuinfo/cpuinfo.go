// Package cpuinfo reads a node's processor from /proc/cpuinfo: its brand string, vendor, family, model and
// core counts, which NFD's cpuid labels cannot carry (NFD reports no brand string), and which the pools name
// CPU nodes by.
package cpuinfo

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// CPU is a node's processor as /proc/cpuinfo shows it.
type CPU struct {
	// Name is the brand string (Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz); empty where the kernel shows none.
	Name string
	// Vendor is the vendor as NFD's cpu-model.vendor_id names it (Intel, AMD): cpuid's names, not the raw
	// vendor string; the raw string where cpuid has no name for it.
	Vendor string
	// Family, Model and Stepping are the kernel's decimal numbers, which NFD's cpu-model.family and
	// cpu-model.id read the same from cpuid.
	Family, Model, Stepping string
	// LogicalCores counts the processors the kernel lists; PhysicalCores the distinct cores behind them.
	LogicalCores, PhysicalCores int
	// CacheLine is the cache line size in bytes; 0 when not shown.
	CacheLine int
}

// VendorNames are the vendor strings of x86 processors by the names cpuid (and so NFD's vendor_id) gives them.
var VendorNames = map[string]string{
	"GenuineIntel": "Intel",
	"AuthenticAMD": "AMD",
	"HygonGenuine": "Hygon",
	"CentaurHauls": "VIA",
}

// Parse reads the contents of /proc/cpuinfo. It fails only when no processor is listed.
func Parse(data []byte) (CPU, error) {
	var cpu CPU
	cores := map[string]bool{}
	physicalID := ""
	s := bufio.NewScanner(bytes.NewReader(data))
	for s.Scan() {
		key, value, ok := strings.Cut(s.Text(), ":")
		if !ok {
			continue
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		switch key {
		case "processor":
			cpu.LogicalCores++
		case "vendor_id":
			cpu.Vendor = value
			if name, ok := VendorNames[value]; ok {
				cpu.Vendor = name
			}
		case "model name":
			cpu.Name = value
		case "cpu family":
			cpu.Family = value
		case "model":
			cpu.Model = value
		case "stepping":
			cpu.Stepping = value
		case "physical id":
			physicalID = value
		case "core id":
			cores[physicalID+"/"+value] = true
		case "clflush size":
			cpu.CacheLine, _ = strconv.Atoi(value)
		}
	}
	if err := s.Err(); err != nil {
		return CPU{}, errors.Wrap(err, "cannot read cpuinfo")
	}
	if cpu.LogicalCores == 0 {
		return CPU{}, errors.New("cpuinfo lists no processor")
	}
	cpu.PhysicalCores = len(cores)
	if cpu.PhysicalCores == 0 {
		// Without core ids (most ARM kernels) every listed processor is a core.
		cpu.PhysicalCores = cpu.LogicalCores
	}
	return cpu, nil
}

// Attributes are the CPU's facts by the suffix of the feature.gpustack.ai/cpu-<suffix> annotation that shows
// each; a fact the kernel did not show is left out.
func (c CPU) Attributes() map[string]string {
	out := map[string]string{
		"logical-cores":    strconv.Itoa(c.LogicalCores),
		"physical-cores":   strconv.Itoa(c.PhysicalCores),
		"threads-per-core": strconv.Itoa(max(1, c.LogicalCores/max(1, c.PhysicalCores))),
	}
	for k, v := range map[string]string{"name": c.Name, "family": c.Family, "stepping": c.Stepping} {
		if v != "" {
			out[k] = v
		}
	}
	if c.CacheLine > 0 {
		out["cache-line"] = strconv.Itoa(c.CacheLine)
	}
	return out
}
