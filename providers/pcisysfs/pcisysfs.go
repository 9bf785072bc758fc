// Package pcisysfs finds accelerator cards on the PCI bus through sysfs (/sys/bus/pci/devices), by vendor ID
// and device class, as NFD's PCI source does. Every vendor's backend starts from it; what sysfs cannot say
// (product names, memory, health) comes from the vendor's management tool.
package pcisysfs

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// DefaultRoot is where the kernel lists PCI devices.
const DefaultRoot = "/sys/bus/pci/devices"

// DefaultClassPrefixes are the PCI class prefixes of accelerators: network (02), display (03), processor
// (0b) and processing accelerators (12), as EnvClassPrefixes defaults.
var DefaultClassPrefixes = []string{"02", "03", "0b", "12"}

// EnvClassPrefixes names the variable that lists the PCI class prefixes of accelerators, comma-separated.
const EnvClassPrefixes = "GPUSTACK_PCI_CLASS_PREFIXES"

// ClassPrefixesFromEnv reads EnvClassPrefixes through getenv: DefaultClassPrefixes when unset, else its
// comma-separated prefixes, lowercased, each two, four or six hex digits of a class code (03, 0302, 030200).
// Anything else is an error naming the variable.
func ClassPrefixesFromEnv(getenv func(string) string) ([]string, error) {
	v := strings.TrimSpace(getenv(EnvClassPrefixes))
	if v == "" {
		return DefaultClassPrefixes, nil
	}
	var out []string
	for _, p := range strings.Split(v, ",") {
		p = strings.ToLower(strings.TrimSpace(p))
		if _, err := strconv.ParseUint(p, 16, 32); err != nil || len(p)%2 != 0 || len(p) > 6 {
			return nil, errors.Errorf("%s=%q: %q is not a PCI class prefix (two, four or six hex digits, such as 03 or 0302)", EnvClassPrefixes, v, p)
		}
		out = append(out, p)
	}
	return out, nil
}

// Device is one PCI function.
type Device struct {
	// Address is the PCI address (0000:65:00.0).
	Address string
	// VendorID and DeviceID are lowercase hex without 0x (10de, 2237).
	VendorID string
	DeviceID string
	// Class is the six-digit class code (030200).
	Class string
	// NUMANode is the device's NUMA node, -1 when unknown.
	NUMANode int
}

// Scan returns the devices under root whose vendor is one of vendorIDs and whose class starts with one of
// classPrefixes, sorted by address. An unreadable entry is skipped and reported in the returned problems,
// so one odd device never hides the others.
func Scan(root string, vendorIDs, classPrefixes []string) ([]Device, []string, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, nil, errors.Wrap(err, "cannot list PCI devices")
	}
	wantVendor := map[string]bool{}
	for _, v := range vendorIDs {
		wantVendor[normalizeHex(v)] = true
	}
	var out []Device
	var problems []string
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		d, err := read(dir, e.Name())
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if !wantVendor[d.VendorID] || !hasPrefix(d.Class, classPrefixes) {
			continue
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out, problems, nil
}

func read(dir, address string) (Device, error) {
	d := Device{Address: address, NUMANode: -1}
	var err error
	if d.VendorID, err = hexFile(dir, "vendor", 4); err != nil {
		return d, err
	}
	if d.DeviceID, err = hexFile(dir, "device", 4); err != nil {
		return d, err
	}
	if d.Class, err = hexFile(dir, "class", 6); err != nil {
		return d, err
	}
	if data, err := os.ReadFile(filepath.Join(dir, "numa_node")); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && n >= 0 {
			d.NUMANode = n
		}
	}
	return d, nil
}

// hexFile reads a sysfs attribute such as "0x10de\n" and returns it as width lowercase hex digits.
func hexFile(dir, name string, width int) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return "", errors.Wrapf(err, "%s: cannot read %s", filepath.Base(dir), name)
	}
	v, err := ParseHex(string(data), width)
	if err != nil {
		return "", errors.Wrapf(err, "%s: %s", filepath.Base(dir), name)
	}
	return v, nil
}

// ParseHex parses a sysfs hex attribute ("0x10de\n") into exactly width lowercase hex digits.
func ParseHex(s string, width int) (string, error) {
	v := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), "0x")
	if v == "" || len(v) > width {
		return "", errors.Errorf("%q is not a %d-digit hex value", strings.TrimSpace(s), width)
	}
	if _, err := strconv.ParseUint(v, 16, 64); err != nil {
		return "", errors.Errorf("%q is not a hex value", strings.TrimSpace(s))
	}
	return strings.Repeat("0", width-len(v)) + v, nil
}

func normalizeHex(v string) string {
	h, err := ParseHex(v, 4)
	if err != nil {
		return strings.ToLower(v)
	}
	return h
}

func hasPrefix(class string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(class, strings.ToLower(strings.TrimSpace(p))) {
			return true
		}
	}
	return false
}
